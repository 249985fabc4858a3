"""mk_lr40.py OUTDIR: a fourth tune sample of LogReasoning (the external dev questions' tune part, OpenSSH and
Spark; tools/bench/split.py), none of it in stats48 or ext41 (OUTDIR holds both): 40 questions by answer type,
OpenSSH's counts first (stats48 had none), seed 23 fixed before the first run. Run from the checkout's root."""
import json, random, sys
sys.path.insert(0, ".")
from tools.bench.external_questions import build

out = sys.argv[1]
have = {q["id"] for name in ("stats48", "ext41") for q in json.load(open(f"{out}/{name}.json"))}
qs = [q for q in build("logreasoning", "tune") if q["id"] not in have]
rng = random.Random(23)
picked = []
for system, kind, n in (("OpenSSH", "count", 14), ("OpenSSH", "maximum", 3), ("OpenSSH", "minimum", 3),
                        ("Spark", "count", 8), ("Spark", "addition", 6), ("Spark", "maximum", 3), ("Spark", "minimum", 3)):
    picked += rng.sample([q for q in qs if q["system"] == system and q["kind"] == "logreasoning:" + kind], n)
json.dump(picked, open(f"{out}/lr40.json", "w"), ensure_ascii=False, indent=1)
