"""The issue-44 QA A/B: bench_qa records (--out) of two passes, <pass1>/{old,new}-<System>.json and
<pass2>/..., compared per run, per system and per question. Usage: compare.py PASS1_DIR PASS2_DIR."""
import json, statistics, sys
from pathlib import Path

SYSTEMS = ["Apache", "Hadoop", "Linux", "OpenSSH", "Spark"]
P1, P2 = Path(sys.argv[1]), Path(sys.argv[2])
RUNS = {"old-1": (P1, "old"), "new-1": (P1, "new"), "old-2": (P2, "old"), "new-2": (P2, "new")}


def pct(xs, p):
    s = sorted(xs); k = (len(s) - 1) * p; lo = int(k); hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


R = {run: {s: json.loads((d / f"{side}-{s}.json").read_text(encoding="utf-8")) for s in SYSTEMS}
     for run, (d, side) in RUNS.items()}
ids = [r["id"] for s in SYSTEMS for r in R["old-1"][s]]
for run in R:
    assert [r["id"] for s in SYSTEMS for r in R[run][s]] == ids
flat = {run: [r for s in SYSTEMS for r in R[run][s]] for run in R}

print("## Per run and system: passed / asked (accuracy)\n")
print("| system | n | " + " | ".join(RUNS) + " |")
print("|---|---|" + "---|" * len(RUNS))
for s in SYSTEMS + ["all"]:
    row = [s if s != "all" else "**all**", str(len(R["old-1"][s]) if s != "all" else len(ids))]
    for run in RUNS:
        rs = flat[run] if s == "all" else R[run][s]
        k = sum(r["pass"] for r in rs)
        cell = f"{k} ({k / len(rs):.3f})"
        row.append(f"**{cell}**" if s == "all" else cell)
    print("| " + " | ".join(row) + " |")

print("\n## Latency (s per question), refusals, errors, loops\n")
print("| run | p50 | p95 | mean | sum | refused (retried) | errors | loops |")
print("|---|---|---|---|---|---|---|---|")
for run in RUNS:
    xs = [r["seconds"] for r in flat[run]]
    print(f"| {run} | {pct(xs, .5):.2f} | {pct(xs, .95):.2f} | {statistics.mean(xs):.2f} | {sum(xs):.0f} | "
          f"{sum(r.get('refused', 0) for r in flat[run])} | {sum(r['error'] is not None for r in flat[run])} | "
          f"{sum(bool(r.get('loop')) for r in flat[run])} |")
print("\nPer system p50 / p95:\n")
print("| system | " + " | ".join(RUNS) + " |")
print("|---|" + "---|" * len(RUNS))
for s in SYSTEMS:
    print(f"| {s} | " + " | ".join(f"{pct([r['seconds'] for r in R[run][s]], .5):.1f} / "
                                   f"{pct([r['seconds'] for r in R[run][s]], .95):.1f}" for run in RUNS) + " |")


def call(r):
    return json.dumps((r.get("query") or {}).get("call"), sort_keys=True, ensure_ascii=False)


print("\n## Agreement between two runs, question by question (74)\n")
print("| pair | kind | same verdict | same call | same answer text |")
print("|---|---|---|---|---|")
pairs = [("old-1", "old-2", "same tree"), ("new-1", "new-2", "same tree"),
         ("old-1", "new-1", "old vs new, pass 1"), ("old-2", "new-2", "old vs new, pass 2"),
         ("old-1", "new-2", "old vs new, across passes"), ("old-2", "new-1", "old vs new, across passes")]
for a, b, kind in pairs:
    x, y = flat[a], flat[b]
    print(f"| {a} / {b} | {kind} | {sum(p['pass'] == q['pass'] for p, q in zip(x, y))} | "
          f"{sum(call(p) == call(q) for p, q in zip(x, y))} | {sum(p['answer'] == q['answer'] for p, q in zip(x, y))} |")

print("\n## Questions whose verdict differs in any run\n")
print("| question | " + " | ".join(RUNS) + " |")
print("|---|" + "---|" * len(RUNS))
for i, qid in enumerate(ids):
    v = [flat[run][i]["pass"] for run in RUNS]
    if len(set(v)) > 1:
        print(f"| {qid} | " + " | ".join("PASS" if x else "fail" for x in v) + " |")

print("\n## Questions whose call or answer text differs in any run (details)\n")
for i, qid in enumerate(ids):
    rs = [flat[run][i] for run in RUNS]
    if len({r["answer"] for r in rs}) > 1 or len({call(r) for r in rs}) > 1:
        print(f"- {qid}")
        for run, r in zip(RUNS, rs):
            print(f"    {run} {'PASS' if r['pass'] else 'fail'} call {call(r)} | {' '.join(r['answer'].split())[:220]}")
