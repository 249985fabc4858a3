"""evsnap.py OUT.json: evidence.find for every tune question over $STORES (Hadoop/OpenSSH/Spark)"""
import os, sys, json
# TREE: the tree whose gateway/ is measured (a `git archive` of a commit with the venv's native module
# copied in); the venv's editable-install finder, which maps `gateway` to the checkout before sys.path is
# read, is dropped so that TREE's code is what runs
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__name__.startswith("ScikitBuild")]
sys.path.insert(0, os.path.abspath(os.environ.get("TREE", ".")))
from gateway.pipeline.query import QuerySurface
from gateway.serve.answer import evidence
surf = {s: QuerySurface(os.path.join(os.environ["STORES"], s, "logs.db")) for s in ("Hadoop", "OpenSSH", "Spark")}
out = {}
for f in ("blind_tune", "ext17", "own_tune"):
    for q in json.load(open(os.path.join(os.environ["QUESTIONS"], f + ".json"))):
        s = q["system"]
        if s not in surf: continue
        ev = evidence.find(surf[s], q["question"])
        out[f + ":" + q["id"] + ":" + q["question"][:40]] = {"tokens": ev.tokens, "ids": ev.ids, "lines": [l["text"][:120] for l in ev.lines]}
json.dump(out, open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
print(len(out))
