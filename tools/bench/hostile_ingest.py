"""The hostile ingest of issue 30, in-process: bench_hostile's 100,000 distinct never-seen NDJSON
lines through what POST /api/ingest runs (parse_ndjson, then Appliance.ingest: triage, the store's
fsynced commits), an Appliance without engine or sources in a fresh data dir. Times parsing, triage
and the store apart (the store: time the caller is blocked on it, Store.wait or append),
--repeat times, each in a fresh dir;
--profile prints cProfile's top functions of one more run.

Not in `make test`. Last line of output: one JSON object.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.appliance import Appliance  # noqa: E402
from gateway.ingest.ndjson import parse_ndjson  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tools.bench.bench_hostile import HOSTILE_LINES, hostile_body  # noqa: E402
from tools.bench.harness import cpu_here, print_result  # noqa: E402


def once(body: bytes, profile: cProfile.Profile | None = None) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hostile-ingest-"))
    try:
        app = Appliance(Settings(data_dir=tmp, engine={"enabled": False},
                                 ingest={"demo": {"enabled": False}})).start()
        store_s = [0.0]      # the caller blocked on the store: Store.wait, or append where there is no wait
        name = "wait" if hasattr(app.store, "wait") else "append"
        blocking = getattr(app.store, name)

        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return blocking(*a, **kw)
            finally:
                store_s[0] += time.perf_counter() - t
        setattr(app.store, name, timed)
        if profile is not None:
            profile.enable()
        t0 = time.perf_counter()
        records, malformed = parse_ndjson(body, "http")
        t1 = time.perf_counter()
        ids = app.ingest(records)
        t2 = time.perf_counter()
        if profile is not None:
            profile.disable()
        tri = app.triage.stats()
        app.stop()
        assert len(ids) == len(records) == len(set(ids)), "every line stored once"
        return {"total_s": round(t2 - t0, 3), "parse_s": round(t1 - t0, 3), "ingest_s": round(t2 - t1, 3),
                "store_wait_s": round(store_s[0], 3), "triage_and_rest_s": round(t2 - t1 - store_s[0], 3),
                "lines": len(ids), "malformed": malformed, "unmined": tri.get("unmined_lines", 0),
                "db_mb": round(sum(f.stat().st_size for f in tmp.glob("logs.db*")) / 2 ** 20, 1)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=HOSTILE_LINES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", type=int, default=0, help="print this many cProfile rows of an extra run")
    a = ap.parse_args()
    body = hostile_body(a.lines, a.seed)
    runs = []
    for _ in range(a.repeat):
        runs.append(once(body))
        print(json.dumps(runs[-1]), flush=True)
    if a.profile:
        prof = cProfile.Profile()
        once(body, prof)
        pstats.Stats(prof).sort_stats("tottime").print_stats(a.profile)
    med = {k: statistics.median(r[k] for r in runs) for k in ("total_s", "parse_s", "store_wait_s", "triage_and_rest_s")}
    print_result({"bench": "hostile_ingest", "cpu": cpu_here()["model_name"], "nproc": os.cpu_count(),
                  "load_avg": [round(x, 2) for x in os.getloadavg()], "lines": a.lines,
                  "body_bytes": len(body), "median": med, "runs": runs})


if __name__ == "__main__":
    main()
