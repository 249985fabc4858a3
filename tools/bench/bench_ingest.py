"""Ingest benchmark: store write rate (batched group commit vs. one commit per line, same run),
Drain grouping accuracy on the eight Loghub systems, and a load run through the whole appliance
(replay at --rate lines/s for --minutes): lines missing from the store, RSS, ring drops, engine lag.

Last line of output: one JSON object. Knows nothing of the server; drives gateway.* in-process.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.appliance import Appliance                                  # noqa: E402
from gateway.datasets import loghub_dir                                  # noqa: E402
from gateway.ingest.record import LogRecord, severity_from_text         # noqa: E402
from gateway.ingest.replay import paced, record_sender                  # noqa: E402
from gateway.settings import load                                       # noqa: E402
from gateway.pipeline.store import Store                                         # noqa: E402
from gateway.pipeline.triage import Triage, grouping_accuracy                    # noqa: E402

LOGHUB = loghub_dir()
SYSTEMS = ("Apache", "BGL", "HDFS", "Hadoop", "Linux", "OpenSSH", "Spark", "Zookeeper")
STORE_LINES = 200_000
STORE_BATCH = 5_000            # rows per append (the Batcher sends up to 2,000; HTTP bodies vary)
PER_LINE_PEER_LINES = 300       # the peer (a commit per line) is slow: fewer lines, same figure


def loghub_lines() -> list[str]:
    out = []
    for s in SYSTEMS:
        with open(LOGHUB / s / f"{s}_2k.log", encoding="utf-8", errors="replace") as f:
            out += [ln.rstrip("\n") for ln in f if ln.strip()]
    return out


def bench_store(lines: list[str], tmp: Path) -> dict:
    recs = [LogRecord(1.7e9 + i, "bench", "h", int(severity_from_text(t)), t)
            for i, t in enumerate((lines * (STORE_LINES // len(lines) + 1))[:STORE_LINES])]
    with Store(tmp / "store.db") as st:
        t0 = time.perf_counter()
        for i in range(0, len(recs), STORE_BATCH):
            st.append(recs[i:i + STORE_BATCH])
        dt = time.perf_counter() - t0
        stored = st.count()
    # Peer: the same schema and durability (WAL, synchronous=FULL), one transaction per line.
    with Store(tmp / "peer.db") as peer:
        t0 = time.perf_counter()
        for r in recs[:PER_LINE_PEER_LINES]:
            peer.append([r])
        dt_peer = time.perf_counter() - t0
    rate, peer_rate = len(recs) / dt, PER_LINE_PEER_LINES / dt_peer
    return {"store_lines_per_s": round(rate), "store_batch": STORE_BATCH, "store_peer_per_line_commit_lines_per_s": round(peer_rate),
            "store_vs_per_line_commit": round(rate / peer_rate, 1), "store_lost_lines": len(recs) - stored,
            "sqlite_version": sqlite3.sqlite_version}


def bench_accuracy() -> dict:
    acc = {}
    for s in SYSTEMS:
        with open(LOGHUB / s / f"{s}_2k.log_structured.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        t = Triage(None)
        # The Content column (message without the header), as the Loghub benchmark mines it.
        pred = [c.template_id for c in t.classify([LogRecord(0, "b", "", 6, r["Content"]) for r in rows])]
        acc[s] = round(grouping_accuracy(pred, [r["EventId"] for r in rows]), 4)
    return {"grouping_accuracy": acc, "grouping_accuracy_avg": round(sum(acc.values()) / len(acc), 4)}


def rss_mb() -> float:
    import psutil
    return psutil.Process().memory_info().rss / 2**20


def bench_load(lines: list[str], tmp: Path, rate: float, minutes: float, engine: str | None) -> dict:
    eng = {"enabled": False} if not engine else {"model": engine, "n_ring": 1024, "n_scratch": 256}
    s = load(None, data_dir=tmp / "data", ingest={"demo": {"enabled": False}}, engine=eng,
             triage={"new_template_alerts": False})
    app = Appliance(s).start()
    try:
        if engine:
            deadline = time.monotonic() + 600
            while not app.ready and not (app.worker and app.worker.error) and time.monotonic() < deadline:
                time.sleep(0.5)
        rss0 = rss_mb()
        t0 = time.time()
        res = paced(iter(lines * 10_000), rate, record_sender(app.ingest, "replay"), max_seconds=minutes * 60)
        rss1 = rss_mb()
        stats = app.stats()
        stored = app.store.count()
    finally:
        app.stop()
    ring = stats.get("ring", {})
    return {"load_rate_target": rate, "load_minutes": minutes, "load_sent": res["sent"],
            "load_acknowledged": res["acknowledged"], "load_rate_achieved": round(res["rate"], 1),
            "load_lines_missing": res["sent"] - stored, "rss_mb_start": round(rss0, 1), "rss_mb_end": round(rss1, 1),
            "ring_dropped_entries": ring.get("dropped_entries"), "ring_collapsed_lines": ring.get("collapsed_lines"),
            "engine_lag_s": ring.get("lag_s"), "engine_lag_tokens": ring.get("lag_tokens"),
            "engine": engine or "off", "alerts": stats["alerts"].get("published", 0),
            "load_wall_s": round(time.time() - t0, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=0.25, help="load run length (the issue's run: 5)")
    ap.add_argument("--rate", type=float, default=2000.0, help="load run lines/s")
    ap.add_argument("--engine", default=None, help="model for the load run (default: no engine)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_ingest-"))
    try:
        lines = loghub_lines()
        out: dict = {}
        out.update(bench_store(lines, tmp))
        print("store:", {k: v for k, v in out.items()}, file=sys.stderr)
        out.update(bench_accuracy())
        print("drain:", out["grouping_accuracy"], out["grouping_accuracy_avg"], file=sys.stderr)
        out.update(bench_load(lines, tmp, args.rate, args.minutes, args.engine))
        out["lost_lines"] = out["store_lost_lines"] + out["load_lines_missing"]
        out["cpu_count"] = os.cpu_count()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out))
    return 0 if out["lost_lines"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
