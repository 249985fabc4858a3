"""New-kind alerts benchmark (issue 40, point 3): each Loghub system of a split part replayed through a
Triage with its first 80 % as the baseline and 20 lines of made-up kinds it never had planted at seeded
random places in the last 20 %. Per system: the new-kind alerts raised in the last 20 %, the kinds truly
new there (Loghub EventIds not in the first 80 %, plus the 20 planted), their ratio (target <= 1.2) and
whether every planted kind alerted.

The replay: raw lines as they are (one source per system), each line at its own header time (the
triage's parsed time; the previous line's when it has none), so new kinds fold into grouped alerts only
where the log itself has them close together. A planted line takes the header of the line it is placed
before (the nearest one not at warning or worse, so it is judged as a kind, not a severity), with the
made-up message in place of that line's message. Tune on `--part tune`; `--part held` once, at the end.

Last line of output: one JSON object. Drives gateway.pipeline.triage in-process.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.datasets import loghub_dir                                   # noqa: E402
from gateway.ingest.record import LogRecord, Severity, parse_severity     # noqa: E402
from gateway.pipeline.triage import Triage, line_severity                 # noqa: E402
from tools.bench import split                                             # noqa: E402
from tools.bench.harness import print_result                              # noqa: E402

BASELINE_SHARE = 0.8
TARGET_RATIO = 1.2
BATCH = 64                    # lines per classify/evaluate call (an ingest chunk's order of size)
BASE_TS = 1.7e9               # record time before the first parsed header time (and the year for year-less ones)
# Kinds no Loghub system has: factory-line messages, of several shapes and lengths
MADE_UP = (
    "Glue nozzle 4 clogged, purge cycle started",
    "Label printer ribbon low: 12% left",
    "Palletizer arm collision guard tripped at layer 7",
    "Vision camera CAM-3 lost focus lock",
    "Torque wrench channel 2 calibration drift 0.8 Nm",
    "Shrink tunnel zone B heater 412 C above setpoint",
    "Capper head 6 skipped bottle",
    "Checkweigher reject bin full",
    "Servo axis X3 following error 2.4 mm exceeds limit",
    "Ink viscosity out of range on coder CJ-2",
    "Operator badge 5521 not authorised for recipe ALPHA-9",
    "Hopper level sensor LS-14 stuck high",
    "Recipe checksum mismatch after download from MES",
    "Vacuum gripper pad 3 leak detected",
    "Conveyor splice detected on belt B-2 at 1.8 m/s",
    "Barcode grade D on carton, line speed reduced",
    "Lubrication pump cycle missed, reservoir at 5 percent",
    "Safety light curtain muting timeout on bay 2",
    "Compressed air dew point high 9 C",
    "Wrapper film break, roll 3 of 4",
)


def load(system: str) -> tuple[list[str], list[dict]]:
    d = loghub_dir() / system
    with open(d / f"{system}_2k.log", encoding="utf-8", errors="replace") as f:
        raws = [ln.rstrip("\n") for ln in f if ln.strip()]
    with open(d / f"{system}_2k.log_structured.csv", encoding="utf-8", errors="replace") as f:
        rows = list(csv.DictReader(f))
    if len(raws) != len(rows):
        raise SystemExit(f"{system}: {len(raws)} raw lines but {len(rows)} structured rows")
    return raws, rows


def _severe(raw: str, row: dict) -> bool:
    sev = min(LogRecord.make(raw, source="x").severity, parse_severity(row.get("Level"), Severity.INFO))
    return sev <= Severity.WARNING


def plant(raws: list[str], rows: list[dict], cut: int, rng: random.Random) -> list[tuple[str, str | None, int | None]]:
    """The replay: (line, Loghub EventId or None, planted index or None), planted lines in the last part."""
    places = dict(zip(sorted(rng.sample(range(cut, len(raws)), len(MADE_UP))), range(len(MADE_UP))))
    out = []
    for i, (raw, row) in enumerate(zip(raws, rows)):
        if i in places:
            j = places[i]
            d = next((k for k in list(range(i, len(raws))) + list(range(i - 1, cut - 1, -1))
                      if not _severe(raws[k], rows[k])), i)
            content = rows[d]["Content"]
            at = raws[d].rfind(content) if content else -1
            out.append(((raws[d][:at] if at >= 0 else "") + MADE_UP[j], None, j))
        out.append((raw, row["EventId"], None))
    return out


def replay(system: str, seed: int) -> dict:
    raws, rows = load(system)
    cut = int(len(raws) * BASELINE_SHARE)
    lines = plant(raws, rows, cut, random.Random(f"{seed}:{system}"))
    t = Triage(None, baseline_lines=cut, baseline_s=0)
    alerts, classified, own_time = [], [], 0
    ts = BASE_TS
    t0 = time.perf_counter()
    for b in range(0, len(lines), BATCH):
        chunk = lines[b:b + BATCH]
        recs = [LogRecord.make(text, source=system, ts=BASE_TS) for text, _, _ in chunk]
        cls = t.classify(recs)
        timed = []
        for r, c in zip(recs, cls):
            if c.fields is not None and c.fields.time is not None:
                ts, own_time = c.fields.time, own_time + 1
            timed.append(dataclasses.replace(r, ts=ts))
        alerts += t.evaluate(timed, list(range(b + 1, b + 1 + len(chunk))), cls)
        classified += [(c, line_severity(r, c)) for r, c in zip(timed, cls)]
    alerts += t.new_kind_alerts()                 # the groups still open at the end of the replay
    dt = time.perf_counter() - t0
    new = [a for a in alerts if a.kind == "new_template"]
    early = [min(a.line_ids) for a in new if min(a.line_ids) <= cut]
    if early:
        raise SystemExit(f"{system}: new-kind alerts while the baseline was learned (lines {early[:5]})")
    listed_ids = {i for a in new for i in a.line_ids}
    listed_templates = {x for a in new for x in a.template.split("\n")}
    severity_ids = {i for a in alerts if a.kind == "severity" for i in a.line_ids}

    def alerted(k: int) -> bool:
        return k + 1 in listed_ids or classified[k][0].template in listed_templates

    planted = [k for k, (_, _, j) in enumerate(lines) if j is not None]
    before = {e for _, e, _ in lines[:cut]}
    first_new: dict[str, int] = {}
    for k, (_, e, _) in enumerate(lines):
        if k >= cut and e is not None and e not in before:
            first_new.setdefault(e, k)
    truly_new = len(first_new) + len(planted)
    return {
        "new_kind_alerts": len(new),
        "truly_new_kinds": truly_new,
        "ratio": round(len(new) / truly_new, 3),
        "planted_all_alerted": all(alerted(k) for k in planted),
        "planted_alerted": sum(alerted(k) for k in planted),
        "new_eventids": len(first_new),
        # a real new kind counts as caught when its first line is listed in an alert (either kind)
        "new_eventids_alerted": sum(alerted(k) or k + 1 in severity_ids for k in first_new.values()),
        "new_templates_flagged": t.stats().get("new_kinds", 0),    # before grouping
        "grouped_alerts": sum(a.count > 1 for a in new),
        "severity_alerts_last": sum(1 for a in alerts if a.kind == "severity" and min(a.line_ids) > cut),
        "own_time_share": round(own_time / len(lines), 3),
        "lines": len(lines),
        "lines_per_s": round(len(lines) / dt),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="tune", choices=("tune", "held", "all"),
                    help="the split part (tools/bench/split.py): tune while developing, held once at the end")
    ap.add_argument("--seed", type=int, default=40, help="where the planted lines go")
    args = ap.parse_args()
    out = {s: replay(s, args.seed) for s in split.systems(args.part)}
    print(f"{'system':<10} {'alerts':>6} {'new':>4} {'ratio':>6} {'planted':>8} {'eventids':>9} {'flagged':>8}",
          file=sys.stderr)
    for s, r in out.items():
        print(f"{s:<10} {r['new_kind_alerts']:>6} {r['truly_new_kinds']:>4} {r['ratio']:>6} "
              f"{r['planted_alerted']:>5}/{len(MADE_UP)} {r['new_eventids_alerted']:>4}/{r['new_eventids']:<4} "
              f"{r['new_templates_flagged']:>8}", file=sys.stderr)
    ok = all(r["ratio"] <= TARGET_RATIO and r["planted_all_alerted"] for r in out.values())
    print_result({"bench": "new_kinds", "part": args.part, "seed": args.seed, "baseline_share": BASELINE_SHARE,
                  "target_ratio": TARGET_RATIO, "ratio_max": max(r["ratio"] for r in out.values()),
                  "planted_all_alerted": all(r["planted_all_alerted"] for r in out.values()),
                  "pass": ok, "systems": out})
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
