"""Every line's triage output, written to files, so that a speed change can be checked to change nothing.

For the tune Loghub systems (tools/bench/split.py) and the synthetic shapes (tools/bench/synth_logs.py, 1,000
lines, seed 7), as tools/bench/bench_formats.py runs them (a fresh Triage, one source): each line's
template id, template text, is_new/overflow/level and its LineFields (time, host, component, pid, level,
params). Each input is classified twice by the same Triage (a cold pass, then a warm one over the templates
and formats it learned), and in batches of BATCH lines, as ingest calls it. The per-call work budget is
lifted (a slow run, under a profiler, would otherwise push lines to the overflow template). The held-out
systems are never read.

    python tools/bench/triage_outputs.py --out DIR      # write DIR/<name>.txt
    python tools/bench/triage_outputs.py --check DIR    # compare with DIR; exit 1 on any difference
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.ingest.record import LogRecord                                 # noqa: E402
from gateway.pipeline import triage as triage_mod                            # noqa: E402
from tools.bench import split, synth_logs                                   # noqa: E402
from tools.bench.bench_formats import LOGHUB                                # noqa: E402

BATCH = 256          # lines per classify() call


def inputs() -> dict[str, list[str]]:
    """name -> raw lines: the tune Loghub systems and every synthetic shape."""
    out = {}
    for s in split.systems("tune"):
        out[s] = [ln.rstrip("\r\n") for ln in open(LOGHUB / s / f"{s}_2k.log", encoding="utf-8",
                                                     errors="replace") if ln.strip()]
    for shape in synth_logs.SHAPES:
        out["synth_" + shape] = [x.raw for x in synth_logs.generate(shape, 1000, seed=7)]
    return out


def dump(name: str, raws: list[str]) -> str:
    """One text line per classified line, both passes."""
    triage_mod.CALL_BUDGET_S = triage_mod.BUDGET_BURST_S = 1e9    # no line is left unmined for time
    t = triage_mod.Triage(None)
    t._budget_s = 1e9
    rows = []
    for rnd in range(2):
        recs = [LogRecord(1.79e9 + (rnd * len(raws) + i) * 0.001, name, "", 6, x) for i, x in enumerate(raws)]
        for b in range(0, len(recs), BATCH):
            for i, c in enumerate(t.classify(recs[b:b + BATCH]), b):
                rows.append(f"{rnd} {i} {c.template_id} {c.template!r} {c.is_new} {c.overflow} {c.overflow_new} "
                            f"{c.level} {c.fields!r}")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", type=Path)
    g.add_argument("--check", type=Path)
    a = ap.parse_args(argv)
    bad = 0
    for name, raws in inputs().items():
        text = dump(name, raws)
        if a.out is not None:
            a.out.mkdir(parents=True, exist_ok=True)
            (a.out / f"{name}.txt").write_text(text, encoding="utf-8")
            print(f"{name}: {text.count(chr(10))} rows", flush=True)
            continue
        want = (a.check / f"{name}.txt").read_text(encoding="utf-8")
        same = text == want
        bad += not same
        print(f"{name}: {'identical' if same else 'DIFFERENT'}", flush=True)
    if a.check is not None:
        print("all identical" if not bad else f"{bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
