"""psize.py OUT.json: the answer prompt's token count for every tune question (Hadoop/OpenSSH/Spark) with
the call its run recorded, over $STORES: prompt size before/after a render change, noise-free."""
import os, sys, json
import tree  # noqa: F401,E402  (TREE's gateway/ first: tree.py)
from gateway.llm.tokenizer import Tokenizer
from gateway.llm.models import resolve_model
from gateway.pipeline.query import QuerySurface
from gateway.serve.prompts import Prompts
try:
    from gateway.serve.answer.tool import QueryTool
except ImportError:                         # before 10123a7 it lived in plan.py
    from gateway.serve.answer.plan import QueryTool
from gateway.serve.answer.call import tool_help
tok = Tokenizer.from_gguf(resolve_model("qwen2.5-coder-1.5b-instruct"))
pr = Prompts(tok, "en", tool_help())
tools = {s: QueryTool(QuerySurface(os.path.join(os.environ["STORES"], s, "logs.db")), tok) for s in ("Hadoop", "OpenSSH", "Spark")}
out = {}
for f in os.environ.get("SETS", "out_a_blind_tune,out_a_ext17,out_a_own_tune").split(","):   # files in RUNS
    for r in json.load(open(os.path.join(os.environ["RUNS"], f))):
        if r["system"] not in tools or not (r.get("query") or {}).get("call"):
            continue
        plan = tools[r["system"]].plan([{"role": "user", "content": r["question"]}])
        call = json.dumps(r["query"]["call"], ensure_ascii=False)
        assert call.startswith('{"op": "')
        msgs = plan.finish(call[len('{"op": "'):])
        out[f"{f}:{r['id']}:{r['lang']}:{r.get('wording')}"] = {"n": len(pr.chat_tokens(msgs, language_hint=False)), "text": msgs[-1]["content"]}
json.dump(out, open(sys.argv[1], "w"), ensure_ascii=False, indent=0)
ns = sorted(v["n"] for v in out.values())
print(len(ns), "mean", round(sum(ns) / len(ns)), "p50", ns[len(ns) // 2], "p95", ns[int(len(ns) * .95)], "max", ns[-1])
