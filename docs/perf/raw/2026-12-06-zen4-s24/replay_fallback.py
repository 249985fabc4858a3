"""replay_fallback.py: the plain answer (render.plain_answer) of every recorded result of the tune runs,
rebuilt by TREE's code, and how many the benchmark's loop rule flags; noise-free (no model, no ring)."""
import glob, json, os, sys
import tree  # noqa: F401,E402  (TREE's gateway/ first: tree.py)
from gateway.serve.answer import render          # noqa: E402
sys.path.insert(1, os.path.abspath("."))
from tools.bench import qa_judge                  # noqa: E402  (the checkout's judge, the same for every TREE)
n = looped = 0
for f in sorted(glob.glob(os.path.join(os.environ["RUNS"], "out_a_*"))):
    for r in json.load(open(f)):
        res = (r.get("query") or {}).get("result")
        if not res:
            continue
        n += 1
        plain = render.plain_answer(res, r["question"], None)
        if qa_judge.looped(plain, "stop"):
            looped += 1
            print("loop:", r["id"], r["lang"])
print(json.dumps({"tree": render.__file__, "results": n, "fallbacks_looped": looped}))
