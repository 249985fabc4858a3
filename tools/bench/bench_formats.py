"""Any log format, no configuration (issue 40): what triage makes of raw lines it was never told about.

For each Loghub system of a split part (tools/bench/split.py) and each synthetic shape
(tools/bench/synth_logs.py, written without reading the parser), the raw lines go through a fresh
Triage (header finding, source format learning, template mining, named parameters) as one source:
  grouping accuracy   Loghub's EventId / the generator's template id as truth (Zhu et al.'s measure)
  field accuracy      time, level, host, component against the structured CSV / the generator's truth,
                      over the lines where the truth has that field
  lines_per_s         triage's whole per-line work, one thread, by the clock (and lines_per_cpu_s: per
                      second of this process's CPU time, the figure that compares on a shared host)
Prints a line per system/shape and ends with one JSON line.

    python tools/bench/bench_formats.py [--part tune|held|all] [--no-synth] [--no-loghub] [--n 1000]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.ingest.record import LogRecord                                 # noqa: E402
from gateway.pipeline.triage import Triage, grouping_accuracy              # noqa: E402
from tools.bench import split, synth_logs                                   # noqa: E402
from tools.bench.harness import cpu_model                                   # noqa: E402

LOGHUB = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "loghub"
# Where each Loghub structured CSV keeps a field (column names as Loghub wrote them; Linux's "Level"
# and OpenSSH's "Component" columns hold the host name).
TRUTH_COLUMNS = {
    "Apache": {"time": ["Time"], "level": ["Level"]},
    "BGL": {"time": ["Time"], "level": ["Level"], "host": ["Node"], "component": ["Component"]},
    "HDFS": {"time": ["Date", "Time"], "level": ["Level"], "component": ["Component"]},
    "Hadoop": {"time": ["Date", "Time"], "level": ["Level"], "component": ["Component"]},
    "Linux": {"time": ["Date", "Time"], "host": ["Level"], "component": ["Component"]},
    "OpenSSH": {"time": ["Day", "Time"], "host": ["Component"]},
    "Spark": {"time": ["Date", "Time"], "level": ["Level"], "component": ["Component"]},
    "Zookeeper": {"time": ["Date", "Time"], "level": ["Level"], "component": ["Component"]},
}


def _digits(s: object) -> str:
    return re.sub(r"\D", "", str(s or ""))


def _same(field: str, got, want) -> bool:
    if field == "time":
        g, w = _digits(got), _digits(want)
        return bool(g) and (g == w or g.endswith(w) or w.endswith(g))
    if got is None:
        return False
    g, w = str(got).lower(), str(want).lower()
    # a component as the line writes it may carry its path ("0:0:...:2181:FastLeaderElection")
    return g == w or w.endswith(":" + g) or w.endswith("." + g) or g.endswith("." + w)


def run_triage(raws: list[str], source: str) -> tuple[list, float, float]:
    """(classified lines, lines/s by the clock, lines per CPU-second: the clock's figure counts the
    time other processes held the core; on a shared host the CPU figure is the one that compares)."""
    t = Triage(None)
    recs = [LogRecord(1.79e9 + i * 0.001, source, "", 6, x) for i, x in enumerate(raws)]
    t0, c0 = time.perf_counter(), time.process_time()
    out = t.classify(recs)
    cpu = max(time.process_time() - c0, 1e-9)
    return out, len(raws) / (time.perf_counter() - t0), len(raws) / cpu


def field_accuracy(cls: list, truth: list[dict]) -> dict[str, float]:
    out = {}
    for field in ("time", "level", "host", "component"):
        pairs = [(c.fields, t[field]) for c, t in zip(cls, truth) if t.get(field) not in (None, "")]
        if not pairs:
            continue
        attr = {"time": "time_text", "level": "level", "host": "host", "component": "component"}[field]
        ok = sum(f is not None and _same(field, getattr(f, attr), want) for f, want in pairs)
        out[field] = round(ok / len(pairs), 4)
    return out


def loghub(system: str) -> dict:
    with open(LOGHUB / system / f"{system}_2k.log_structured.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    raws = [ln.rstrip("\r\n") for ln in open(LOGHUB / system / f"{system}_2k.log", encoding="utf-8",
                                                errors="replace") if ln.strip()]
    cols = TRUTH_COLUMNS.get(system, {})
    truth = [{k: " ".join(r[c] for c in cs) for k, cs in cols.items()} for r in rows]
    cls, rate, cpu_rate = run_triage(raws, system)
    return {"grouping": round(grouping_accuracy([c.template_id for c in cls], [r["EventId"] for r in rows]), 4),
            "fields": field_accuracy(cls, truth), "lines_per_s": round(rate), "lines_per_cpu_s": round(cpu_rate),
            "unmined": _unmined(cls)}


def synthetic(shape: str, n: int) -> dict:
    lines = synth_logs.generate(shape, n, seed=7)
    cls, rate, cpu_rate = run_triage([x.raw for x in lines], shape)
    truth = [{"time": x.ts, "level": x.level, "host": x.host, "component": x.component} for x in lines]
    fa = {}
    for field in ("time", "level", "host", "component"):
        pairs = [(c.fields, t) for c, t in zip(cls, truth)]
        if field == "time":
            ok = [f is not None and f.time is not None and abs(f.time - t["time"]) < 0.002 for f, t in pairs
                  if t["time"] is not None]
        elif field == "level":
            ok = [f is not None and _canon(f.level) == t["level"] for f, t in pairs if t["level"] is not None]
        else:
            ok = [f is not None and getattr(f, field) == t[field] for f, t in pairs if t[field] is not None]
        if ok:
            fa[field] = round(sum(ok) / len(ok), 4)
    return {"grouping": round(grouping_accuracy([c.template_id for c in cls], [x.template_id for x in lines]), 4),
            "fields": fa, "lines_per_s": round(rate), "lines_per_cpu_s": round(cpu_rate), "unmined": _unmined(cls)}


def _unmined(cls: list) -> int:
    """Lines past triage's wall-clock work budget (not mined: their grouping and fields count as wrong).
    Non-zero only when the core was starved (a shared host under load): the figures are then not the
    miner's, and say so."""
    return sum(1 for c in cls if c.overflow)


def _canon(level: str | None) -> str | None:
    from gateway.ingest.header import _LEVELS
    return _LEVELS.get((level or "").lower(), level)


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def summarize(results: dict[str, dict]) -> dict:
    fields = [v for r in results.values() for v in r["fields"].values()]
    return {"grouping_avg": _mean([r["grouping"] for r in results.values()]), "field_accuracy_avg": _mean(fields),
            "lines_per_s_min": min((r["lines_per_s"] for r in results.values()), default=None),
            "lines_per_cpu_s_min": min((r["lines_per_cpu_s"] for r in results.values()), default=None),
            "unmined_lines": sum(r.get("unmined", 0) for r in results.values()),
            "n": len(results)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("tune", "held", "all"), default="tune", help="Loghub systems (split.py)")
    ap.add_argument("--no-loghub", action="store_true")
    ap.add_argument("--no-synth", action="store_true")
    ap.add_argument("--shapes", help="comma-separated synthetic shapes (default: all)")
    ap.add_argument("--n", type=int, default=1000, help="lines per synthetic shape")
    a = ap.parse_args(argv)
    out: dict = {"part": a.part, "cpu": cpu_model()}
    if not a.no_loghub:
        res = {s: loghub(s) for s in split.systems(a.part)}
        for s, r in res.items():
            print(f"loghub {s:10s} grouping {r['grouping']:.4f} fields {r['fields']} {r['lines_per_s']} lines/s "
                  f"({r['lines_per_cpu_s']} per CPU-s)", flush=True)
        out["loghub"] = res | {"summary": summarize(res)}
    if not a.no_synth:
        shapes = a.shapes.split(",") if a.shapes else list(synth_logs.SHAPES)
        res = {s: synthetic(s, a.n) for s in shapes}
        for s, r in res.items():
            print(f"synth  {s:14s} grouping {r['grouping']:.4f} fields {r['fields']} {r['lines_per_s']} lines/s "
                  f"({r['lines_per_cpu_s']} per CPU-s)", flush=True)
        out["synthetic"] = res | {"summary": summarize(res)}
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
