"""The factory tune sample of the thirty-fifth session: five questions per synthetic shape of
qa_factory's tune part (seeded), 60 in all. Run from the checkout's root after
`.venv/bin/python tools/bench/qa_factory.py --part tune --out /tmp/lg/q/factory_tune.json`;
writes /tmp/lg/q/factory_tune60.json."""
import json
import random

d = json.load(open("/tmp/lg/q/factory_tune.json"))
rng = random.Random(20261207)
by: dict = {}
for r in d:
    by.setdefault(r["system"], []).append(r)
out = [q for s in sorted(by) for q in rng.sample(by[s], 5)]
json.dump(out, open("/tmp/lg/q/factory_tune60.json", "w"), ensure_ascii=False, indent=1)
print(len(out))
