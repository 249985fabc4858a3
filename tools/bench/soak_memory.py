"""What grows in the ingest path: an Appliance without engine or sources, fed in-process at --rate
lines/s (the soak's five transports' text; the MQTT share with message keys, as the MQTT source
passes them; an error storm every --storm-s) for --minutes. Samples RSS, SQLite's own heap
(sqlite3_memory_used: page caches, FTS merges) and Python's traced heap every --sample-s; with
--trace, tracemalloc snapshots at the first sample after --warm-s and at the end are diffed and the
largest growths printed by allocation site.

Not in `make test`. Last line of output: one JSON object.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.appliance import Appliance  # noqa: E402
from gateway.ingest.record import LogRecord, Severity  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tools.bench.harness import cpu_here, print_result, rss_mb  # noqa: E402
from tools.bench.soak_lines import STORM_KINDS, STORM_LINES, TRANSPORTS, text  # noqa: E402

TICK_S = 0.1


def sqlite_heap():
    """sqlite3_memory_used of the libsqlite3 Python's _sqlite3 links (the same library, so the same
    counters), or None when it cannot be found."""
    name = ctypes.util.find_library("sqlite3")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return lambda: lib.sqlite3_memory_used() / 2 ** 20


def batch(transport: str, ns: range, now: float) -> tuple[list[LogRecord], list | None]:
    recs = [LogRecord(ts=now, source="mqtt" if transport == "mqtt" else transport, host=f"soak{n % 4}",
                      severity=Severity.INFO, text=text(transport, n)) for n in ns]
    keys = [(f"soak/{n}", False) for n in ns] if transport == "mqtt" else None
    return recs, keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=1000.0, help="lines per second, all transports together")
    ap.add_argument("--storm-s", type=float, default=150.0)
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--warm-s", type=float, default=60.0, help="growth is measured from the first sample after this")
    ap.add_argument("--trace", action="store_true", help="tracemalloc snapshots (slows ingest)")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    if a.trace:
        tracemalloc.start(8)
    heap = sqlite_heap()
    tmp = Path(tempfile.mkdtemp(prefix="soakmem-"))
    s = Settings(data_dir=tmp, engine={"enabled": False}, ingest={"demo": {"enabled": False}})
    app = Appliance(s).start()
    samples, sent, late_s = [], 0, 0.0
    snap0 = None
    t0 = time.monotonic()
    next_sample, next_storm, storm_i = 0.0, a.storm_s, 0
    end = a.minutes * 60
    while (t := time.monotonic() - t0) < end:
        due = int(t * a.rate) - sent
        if due > 0:
            per = max(1, due // len(TRANSPORTS))
            for k, tr in enumerate(TRANSPORTS):
                recs, keys = batch(tr, range(sent + k * per, sent + (k + 1) * per), time.time())
                app.ingest(recs, keys)
            sent += per * len(TRANSPORTS)
        if t >= next_storm:
            recs = [LogRecord(ts=time.time(), source="http", host=f"cell{i % 5}", severity=Severity.ERROR,
                              text=f"ERROR {STORM_KINDS[i % len(STORM_KINDS)]} on axis {i} code E{100 + i}")
                    for i in range(storm_i, storm_i + STORM_LINES)]
            app.ingest(recs)
            storm_i += STORM_LINES
            next_storm += a.storm_s
        if t >= next_sample:
            gc.collect()
            row = {"t_s": round(t, 1), "sent": sent, "rss_mb": round(rss_mb(), 1),
                   "sqlite_mb": round(heap(), 1) if heap else None,
                   "py_traced_mb": round(tracemalloc.get_traced_memory()[0] / 2 ** 20, 1) if a.trace else None}
            samples.append(row)
            print(json.dumps(row), flush=True)
            if a.trace and snap0 is None and t >= a.warm_s:
                snap0 = tracemalloc.take_snapshot()
            next_sample += a.sample_s
        lag = time.monotonic() - t0 - t
        late_s = max(late_s, lag)
        time.sleep(max(0.0, TICK_S - lag))
    gc.collect()
    if a.trace and snap0 is not None:
        diff = tracemalloc.take_snapshot().compare_to(snap0, "traceback")
        print(f"--- top {a.top} Python allocation growths since t={a.warm_s:g} s ---")
        for d in diff[:a.top]:
            print(f"{d.size_diff / 1024:+.1f} KiB ({d.count_diff:+d} blocks)")
            for fr in d.traceback.format()[-6:]:
                print("    " + fr)
    stats = app.stats()
    app.stop()
    warm = [x for x in samples if x["t_s"] >= a.warm_s] or samples
    first, last = warm[0], warm[-1]
    print_result({
        "bench": "soak_memory", "cpu": cpu_here()["model_name"], "nproc": os.cpu_count(),
        "process_cpu_s": round(time.process_time(), 1),
        "load_avg": os.getloadavg(), "minutes": a.minutes, "rate": a.rate, "lines_sent": sent,
        "lines_stored": stats["store"]["lines_written"], "traced": a.trace,
        "rss_warm_mb": first["rss_mb"], "rss_end_mb": last["rss_mb"],
        "rss_growth_pct": round(100 * (last["rss_mb"] - first["rss_mb"]) / first["rss_mb"], 2),
        "sqlite_warm_mb": first["sqlite_mb"], "sqlite_end_mb": last["sqlite_mb"],
        "warm_from_s": first["t_s"], "end_s": last["t_s"], "store_file_mb": round(stats["store"]["file_bytes"] / 2 ** 20, 1),
        "templates": stats.get("triage", {}).get("templates"), "samples": samples})


if __name__ == "__main__":
    main()
