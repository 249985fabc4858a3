"""Ingest benchmark: store write rate (batched group commit vs. one commit per line, same run;
plain rows vs. rows with structured fields and parameters), Drain grouping accuracy on the eight
Loghub systems (on Loghub's pre-split Content, on raw lines as they are, and on raw lines through
header induction), triage speed with and without header finding, field and grouping accuracy with triage
lines/s per split part and synthetic shape (bench_formats), and a load run through the whole appliance
(replay at --rate lines/s for --minutes): lines missing from the store, RSS, ring drops, engine lag.

Last line of output: one JSON object. Knows nothing of the server; drives gateway.* in-process.
"""

from __future__ import annotations

import argparse
import csv
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
from gateway.pipeline.store import Store                                # noqa: E402
from gateway.pipeline.triage import Triage, grouping_accuracy           # noqa: E402
from tools.bench import bench_formats, split, synth_logs                  # noqa: E402
from tools.bench.harness import cpu_model, print_result, rss_mb         # noqa: E402

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
    # The same rows with structured fields and template parameters (as the appliance stores them).
    t = Triage(None)
    n_f = STORE_LINES // 4
    classified = [c for i in range(0, n_f, STORE_BATCH) for c in t.classify(recs[i:i + STORE_BATCH])]
    with Store(tmp / "fields.db") as st:
        t0 = time.perf_counter()
        for i in range(0, n_f, STORE_BATCH):
            cs = classified[i:i + STORE_BATCH]
            st.append(recs[i:i + STORE_BATCH], [c.template_id for c in cs], [c.fields for c in cs])
        dt_f = time.perf_counter() - t0
        stored_f = st.count()
    rate, peer_rate = len(recs) / dt, PER_LINE_PEER_LINES / dt_peer
    return {"store_lines_per_s": round(rate), "store_fields_lines_per_s": round(n_f / dt_f),
            "store_fields_lost_lines": n_f - stored_f, "store_batch": STORE_BATCH, "store_peer_per_line_commit_lines_per_s": round(peer_rate),
            "store_vs_per_line_commit": round(rate / peer_rate, 1), "store_lost_lines": len(recs) - stored,
            "sqlite_version": sqlite3.sqlite_version}


def _grouping(texts: list[str], truth: list[str], source: str, headers: bool) -> tuple[float, float]:
    """(grouping accuracy, triage lines/s) of one system's lines through a fresh Triage."""
    t = Triage(None, find_headers=headers)
    recs = [LogRecord(1.7e9, source, "", 6, x) for x in texts]
    t0 = time.perf_counter()
    pred = [c.template_id for c in t.classify(recs)]
    dt = time.perf_counter() - t0
    return round(grouping_accuracy(pred, truth), 4), len(texts) / dt


def bench_accuracy() -> dict:
    """Per system: Content (Loghub's pre-split message, mined as is), raw (the whole line, no header
    finding) and raw_headers (the whole line through header induction: what the appliance does)."""
    acc: dict[str, dict[str, dict]] = {"content": {}, "raw": {}, "raw_headers": {}}
    speed: dict[str, list[float]] = {"raw": [], "raw_headers": []}
    for s in SYSTEMS:
        with open(LOGHUB / s / f"{s}_2k.log_structured.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        with open(LOGHUB / s / f"{s}_2k.log", encoding="utf-8", errors="replace") as f:
            raw = [ln.rstrip("\r\n") for ln in f if ln.strip()]
        truth = [r["EventId"] for r in rows]
        assert len(raw) == len(truth), f"{s}: {len(raw)} lines, {len(truth)} rows"
        acc["content"][s], _ = _grouping([r["Content"] for r in rows], truth, s, headers=False)
        acc["raw"][s], v = _grouping(raw, truth, s, headers=False)
        speed["raw"].append(v)
        acc["raw_headers"][s], v = _grouping(raw, truth, s, headers=True)
        speed["raw_headers"].append(v)
    avg = {k: round(sum(v.values()) / len(v), 4) for k, v in acc.items()}
    return {"grouping_accuracy": acc["content"], "grouping_accuracy_avg": avg["content"],
            "grouping_accuracy_raw": acc["raw"], "grouping_accuracy_raw_avg": avg["raw"],
            "grouping_accuracy_raw_headers": acc["raw_headers"], "grouping_accuracy_raw_headers_avg": avg["raw_headers"],
            "triage_lines_per_s_no_headers": round(sum(speed["raw"]) / len(SYSTEMS)),
            "triage_lines_per_s_headers": round(sum(speed["raw_headers"]) / len(SYSTEMS))}


def bench_load(lines: list[str], tmp: Path, rate: float, minutes: float, engine: str | None) -> dict:
    eng = {"enabled": False} if not engine else {"model": engine, "n_ring": 1024, "n_scratch": 256}
    s = load(None, data_dir=tmp / "data", ingest={"demo": {"enabled": False}}, engine=eng,
             triage={"new_template_alerts": False})
    app = Appliance(s).start()
    try:
        if engine:
            deadline = time.monotonic() + 600
            while not app.ready and not (app.engine_thread and app.engine_thread.error) and time.monotonic() < deadline:
                time.sleep(0.5)
        rss0 = rss_mb()
        t0 = time.time()
        res = paced(iter(lines * 10_000), rate, record_sender(app.ingest, "replay"), max_seconds=minutes * 60)
        rss1 = rss_mb()
        stats = app.stats()
        stored = app.store.count()
    finally:
        app.stop()
    queue = stats.get("token_queue", {})
    return {"load_rate_target": rate, "load_minutes": minutes, "load_sent": res["sent"],
            "load_acknowledged": res["acknowledged"], "load_rate_achieved": round(res["rate"], 1),
            "load_lines_missing": res["sent"] - stored, "rss_mb_start": round(rss0, 1), "rss_mb_end": round(rss1, 1),
            "token_queue_dropped_entries": queue.get("dropped_entries"),
            "token_queue_collapsed_lines": queue.get("collapsed_lines"),
            "engine_lag_s": queue.get("lag_s"), "engine_lag_tokens": queue.get("lag_tokens"),
            "engine": engine or "off", "alerts": stats["alerts"].get("published", 0),
            "load_wall_s": round(time.time() - t0, 1)}


def bench_formats_parts() -> dict:
    """Issue 40's figures beside the store's: fields, grouping and triage lines/s (by the clock and per
    CPU-second) on raw lines of the tune and held Loghub systems and of every synthetic shape, each
    part's summary only (per system and shape: tools/bench/bench_formats.py)."""
    out = {}
    for part in ("tune", "held"):
        res = {s: bench_formats.loghub(s) for s in split.systems(part)}
        out[part] = bench_formats.summarize(res)
    res = {s: bench_formats.synthetic(s, 1000) for s in synth_logs.SHAPES}
    out["synthetic"] = bench_formats.summarize(res)
    print("formats:", out, file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=0.25, help="load run length (the issue's run: 5)")
    ap.add_argument("--rate", type=float, default=2000.0, help="load run lines/s")
    ap.add_argument("--engine", default=None, help="model for the load run (default: no engine)")
    ap.add_argument("--no-formats", action="store_true",
                    help="leave out field and grouping accuracy per split part and synthetic shape (bench_formats)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_ingest-"))
    try:
        lines = loghub_lines()
        out: dict = {}
        out.update(bench_store(lines, tmp))
        print("store:", {k: v for k, v in out.items()}, file=sys.stderr)
        out.update(bench_accuracy())
        print(f"{'system':<10} {'content':>8} {'raw':>8} {'raw+hdr':>8}", file=sys.stderr)
        for s in SYSTEMS:
            print(f"{s:<10} {out['grouping_accuracy'][s]:>8} {out['grouping_accuracy_raw'][s]:>8} "
                  f"{out['grouping_accuracy_raw_headers'][s]:>8}", file=sys.stderr)
        print(f"{'average':<10} {out['grouping_accuracy_avg']:>8} {out['grouping_accuracy_raw_avg']:>8} "
              f"{out['grouping_accuracy_raw_headers_avg']:>8}", file=sys.stderr)
        if not args.no_formats:
            out["formats"] = bench_formats_parts()
        out.update(bench_load(lines, tmp, args.rate, args.minutes, args.engine))
        out["lost_lines"] = out["store_lost_lines"] + out["store_fields_lost_lines"] + out["load_lines_missing"]
        out["cpu_model"] = cpu_model()
        out["cpu_count"] = os.cpu_count()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_result(out)
    return 0 if out["lost_lines"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
