"""mk_sets.py OUTDIR: the two tune sets of this session, sampled from the external dev questions' tune part
(OpenSSH, Spark; tools/bench/split.py): stats48 (LogReasoning, by answer type, seed 7) and lqa40 (LogQA not in
ext41, 20 per system, seed 11). Run from the checkout's root."""
import json, random, sys
sys.path.insert(0, ".")
from tools.bench.external_questions import build

out = sys.argv[1]
qs = build("logreasoning", "tune")
rng = random.Random(7)
picked = []
for system, kind, n in (("Spark", "addition", 18), ("Spark", "maximum", 8), ("Spark", "minimum", 8), ("Spark", "count", 6),
                        ("OpenSSH", "maximum", 4), ("OpenSSH", "minimum", 4)):
    picked += rng.sample([q for q in qs if q["system"] == system and q["kind"] == "logreasoning:" + kind], n)
json.dump(picked, open(f"{out}/stats48.json", "w"), ensure_ascii=False, indent=1)
have = {q["id"] for q in json.load(open(f"{out}/ext41.json"))}
qs = [q for q in build("logqa", "tune") if q["id"] not in have]
rng = random.Random(11)
picked = []
for system in ("OpenSSH", "Spark"):
    picked += rng.sample([q for q in qs if q["system"] == system], 20)
json.dump(picked, open(f"{out}/lqa40.json", "w"), ensure_ascii=False, indent=1)
