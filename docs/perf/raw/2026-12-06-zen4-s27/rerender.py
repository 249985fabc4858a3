"""Render recorded query results again with one checkout's render.py and tokenize them with the model's
tokenizer: ROOT=<checkout> REPO=<the venv's editable checkout> python rerender.py out_T_* > tokens.json
({question: [tokens, gold string in the rendered text, op]})."""
import os
import sys

# the venv's editable install maps `gateway` to its checkout: drop it so ROOT's code is what runs
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__name__.startswith("ScikitBuild")]
sys.path[:] = [os.environ["ROOT"]] + [p for p in sys.path if p.rstrip("/") != os.environ["REPO"].rstrip("/")]
import json  # noqa: E402

from gateway.llm.models import resolve_model  # noqa: E402
from gateway.llm.tokenizer.bpe import Tokenizer  # noqa: E402
from gateway.serve.answer.render import render_result  # noqa: E402

tk = Tokenizer.from_gguf(resolve_model("qwen2.5-coder-1.5b-instruct"))
out = {}
for f in sys.argv[1:]:
    for r in json.load(open(f)):
        q = r.get("query") or {}
        if not q.get("result"):
            continue
        txt = render_result(q["result"])
        c = r["check"]
        golds = c.get("any_of") or c.get("all_of") or ([str(c["number"])] if "number" in c else [])
        has = any(g.lower() in txt.lower() for g in golds if isinstance(g, str) and len(g) > 2)
        out[r["id"] + r["lang"] + r["question"][:20]] = (len(tk.encode(txt)), has, q["call"].get("op"))
json.dump(out, sys.stdout)
