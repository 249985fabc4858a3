"""Questions written by others (shared/data/external: LogQA dev, LogReasoning dev) as bench_qa question
sets, split by tools/bench/split.py. Judged as the issue asks: a LogQA span by normalised containment
("not" answers a yes/no question in the negative: any negative word passes), a LogReasoning figure by
value.

    python tools/bench/external_questions.py --set logqa|logreasoning --part tune|held|all [--per-system N]
        [--seed S] --out FILE      # then: bench_qa.py --questions FILE
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.bench import split

EXTERNAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "external"
FILES = {"logqa": "logqa_dev.jsonl", "logreasoning": "logreasoning_dev.jsonl"}
NEGATIVE = ["not", "no ", "none", "never", "n't", "没有", "不", "否"]


def _check(name: str, d: dict) -> dict:
    ans = d["Answer"]
    a = str(ans).strip()
    if name == "logreasoning":
        try:
            return {"number": float(a)}
        except ValueError:                     # "which partition has the most ...": a name
            return {"any_of": [a]}
    if a.lower() == "not":
        return {"any_of": NEGATIVE}
    return {"any_of": [" ".join(a.split())]}


def build(name: str, part: str, per_system: int | None = None, seed: int = 0) -> list[dict]:
    rows = [json.loads(x) for x in (EXTERNAL / FILES[name]).read_text(encoding="utf-8").splitlines() if x.strip()]
    out: list[dict] = []
    for i, d in enumerate(rows):
        if part != "all" and split.external_part(d["system"]) != part:
            continue
        kind = d.get("Answer_type") or "extractive"
        out.append({"system": d["system"], "id": f"{name}-{d['system']}-{i}", "kind": f"{name}:{kind}",
                    "lang": "en", "question": d["Question"], "check": _check(name, d)})
    if per_system:
        rng = random.Random(seed)
        picked = []
        for s in dict.fromkeys(q["system"] for q in out):
            mine = [q for q in out if q["system"] == s]
            picked += sorted(rng.sample(mine, min(per_system, len(mine))), key=lambda q: int(q["id"].rsplit("-", 1)[1]))
        out = picked
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(FILES), required=True)
    ap.add_argument("--part", choices=("tune", "held", "all"), default="tune")
    ap.add_argument("--per-system", type=int, help="a seeded sample of N questions per system")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    qs = build(a.set, a.part, a.per_system, a.seed)
    a.out.write_text(json.dumps(qs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"set": a.set, "part": a.part, "n": len(qs)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
