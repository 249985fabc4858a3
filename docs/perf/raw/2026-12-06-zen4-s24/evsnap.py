"""evsnap.py OUT.json: evidence.find for every tune question over $STORES (Hadoop/OpenSSH/Spark)"""
import os, sys, json
import tree  # noqa: F401,E402  (TREE's gateway/ first: tree.py)
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
