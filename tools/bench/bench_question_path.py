"""The store's part of a question on a large store: the grounding's ranking of hosts, components,
levels and templates, and a time window's count, each through the appliance's code and through the
whole-store statements it replaced (the peer, run on the same store in the same run, alternately).

    .venv/bin/python tools/bench/bench_question_path.py --store DATA/logs.db [--rounds 3]
    .venv/bin/python tools/bench/bench_question_path.py --lines 300000 [--rounds 3]   # a synthetic store

`--store`: a stored log (a soak's `logs.db`), opened read-only. The running counts (store_counts.py) are
first brought up to date on the whole store (`catch_up_s`, once per appliance start), then each round
times a refresh with the caches stale (`grounding_ms`: the grammar's values, the templates' words), a
`last_minutes` count (`window_ms`), a count of the most frequent host's lines (`host_ms`) and the top hosts
over ten such windows (`top_hosts_ms`, query_counts.py), against the GROUP BYs and full-scan statements
they replaced; each pair's results must be equal. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.ingest.record import LogRecord                                  # noqa: E402
from gateway.pipeline.fields import LineFields                               # noqa: E402
from gateway.pipeline.query import _HOST, _LEVEL, _TIME, QuerySurface                  # noqa: E402
from gateway.pipeline.query_vocab import known_values, template_lines                # noqa: E402
from gateway.pipeline.store import Store                                     # noqa: E402
from tools.bench.harness import cpu_here, print_result                       # noqa: E402

# The statements the grounding ran over the whole store before the running counts (the peer).
OLD_VALUES = "SELECT {expr} AS v FROM logs l WHERE v IS NOT NULL AND v != '' GROUP BY v ORDER BY count(*) DESC LIMIT 64"
OLD_TEMPLATES = ("SELECT l.template_id, t.template, count(*) FROM logs l JOIN templates t ON t.id = l.template_id"
                 " GROUP BY l.template_id ORDER BY count(*) DESC LIMIT 5000")


def synthesize(path: Path, n: int) -> None:
    """n lines over 40 hosts and 12 templates, a second apart."""
    store = Store(path)
    t0, batch = time.time() - n, 5000
    for start in range(0, n, batch):
        recs, tids, fields = [], [], []
        for i in range(start, min(n, start + batch)):
            k = i % 12
            recs.append(LogRecord(ts=t0 + i, source="bench", host=f"line{i % 40}", severity=3 if k == 0 else 6,
                                  text=f"station {i % 7} step {k} done in {i % 97} ms"))
            tids.append(k + 1)
            fields.append(LineFields(template=f"station <*> step {k} done in <*> ms"))
        store.append(recs, tids, fields)
    store.close()


def old_grounding(q: QuerySurface) -> None:
    q.time_cap_s = 600.0
    for expr in (_HOST, "l.component", _LEVEL):
        q.execute(OLD_VALUES.format(expr=expr))
    q.execute(OLD_TEMPLATES)


def new_grounding(q: QuerySurface) -> None:
    q._counted = -1e9                        # as after COUNTS_FRESH_S: the counts read what came since
    for field in ("host", "component", "level"):
        known_values(q, field)
    template_lines(q, 5000)


def old_window(q: QuerySurface, minutes: float) -> int:
    q.time_cap_s = 600.0
    newest = q.execute(f"SELECT max({_TIME}) FROM logs l")[0][0][0]
    return q.execute(f"SELECT count(*) FROM logs l WHERE {_TIME} >= ?", [newest - 60 * minutes])[0][0][0]


def new_window(q: QuerySurface, minutes: float) -> int:
    q._counted = -1e9
    return q.run({"op": "count", "last_minutes": minutes})["count"]


def old_host(q: QuerySurface, host: str) -> int:
    q.time_cap_s = 600.0
    return q.execute(f"SELECT count(*) FROM logs l WHERE {_HOST} = ?", [host])[0][0][0]


def new_host(q: QuerySurface, host: str) -> int:
    q._counted = -1e9
    return q.run({"op": "count", "host": host})["count"]


def old_top(q: QuerySurface, minutes: float) -> list:
    q.time_cap_s = 600.0
    newest = q.execute(f"SELECT max({_TIME}) FROM logs l")[0][0][0]
    rows, _ = q.execute(f"SELECT {_HOST} AS v, count(*) FROM logs l WHERE {_TIME} >= ? GROUP BY v "
                        "ORDER BY count(*) DESC, v LIMIT 5", [newest - 60 * minutes])
    return [list(r) for r in rows]


def new_top(q: QuerySurface, minutes: float) -> list:
    q._counted = -1e9
    return [[t["value"], t["count"]] for t in q.run({"op": "top_k", "by": "host", "last_minutes": minutes})["top"]]


def timed(fn, *args) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn(*args)
    return (time.perf_counter() - t) * 1000, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, help="an existing logs.db (opened read-only)")
    ap.add_argument("--lines", type=int, default=300_000, help="lines of a synthetic store (without --store)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--minutes", type=float, default=1.0, help="the window's last_minutes")
    a = ap.parse_args()
    path = a.store
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="qpath_")) / "logs.db"
        synthesize(path, a.lines)
    q = QuerySurface(path, time_cap_s=600.0)
    lines = q.execute("SELECT count(*) FROM logs")[0][0][0]
    t = time.perf_counter()
    while True:                                          # once per appliance start: the whole store counted
        q._counted = -1e9
        if q.counts().newest() is not None:
            break
    catch_up_s = time.perf_counter() - t
    host = known_values(q, "host", 1)[0]                 # the most frequent host: the most lines to count
    rounds = []
    for _ in range(a.rounds):                            # alternately, the peer first
        old_g, _ = timed(old_grounding, q)
        new_g, _ = timed(new_grounding, q)
        old_w, n_old = timed(old_window, q, a.minutes)
        new_w, n_new = timed(new_window, q, a.minutes)
        old_h, h_old = timed(old_host, q, host)
        new_h, h_new = timed(new_host, q, host)
        old_t, t_old = timed(old_top, q, 10 * a.minutes)
        new_t, t_new = timed(new_top, q, 10 * a.minutes)
        if (n_old, h_old, t_old) != (n_new, h_new, t_new):
            raise SystemExit(f"the counts differ: window {n_new}, host {h_new}, top {t_new} against the full "
                             f"scans' {n_old}, {h_old}, {t_old}")
        rounds.append((old_g, new_g, old_w, new_w, old_h, new_h, old_t, new_t, n_new))
    best = [min(r[i] for r in rounds) for i in range(8)]
    print_result({"bench": "question_path", "lines": lines, "store": "given" if a.store else "synthetic",
                  "rounds": a.rounds, "catch_up_s": round(catch_up_s, 2),
                  "grounding_ms": round(best[1], 1), "grounding_ms_whole_store": round(best[0], 1),
                  "window_ms": round(best[3], 1), "window_ms_full_scan": round(best[2], 1),
                  "window_lines": rounds[-1][8], "host_ms": round(best[5], 1), "host_ms_full_scan": round(best[4], 1),
                  "top_hosts_ms": round(best[7], 1), "top_hosts_ms_full_scan": round(best[6], 1),
                  "speedup_grounding": round(best[0] / max(best[1], 1e-3), 1),
                  "speedup_window": round(best[2] / max(best[3], 1e-3), 1),
                  "speedup_host": round(best[4] / max(best[5], 1e-3), 1),
                  "speedup_top_hosts": round(best[6] / max(best[7], 1e-3), 1), "cpu": cpu_here()})


if __name__ == "__main__":
    main()
