"""Shipping lines/s from one box's store to a local ClickHouse (gateway/fleet/shipper.py): a store of generated
lines (eight templates, named parameters, header fields), shipped by the Shipper's own passes to a fresh
clickhouse-server (one, or --shards N behind a Distributed table); then the box-side share alone (SQLite read +
JSONEachRow encoding, no server). Ends with one JSON line.

    .venv/bin/python tools/bench/bench_fleet.py [--lines 300000] [--batch 10000] [--shards 1]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.fleet.client import ClickHouseHttp  # noqa: E402
from gateway.fleet.local_cluster import CLUSTER, LocalCluster  # noqa: E402
from gateway.fleet.schema import init_schema  # noqa: E402
from gateway.fleet.settings import FleetSettings  # noqa: E402
from gateway.fleet.shipper import Shipper  # noqa: E402
from gateway.fleet.source import StoreSource  # noqa: E402
from gateway.ingest.record import LogRecord  # noqa: E402
from gateway.pipeline.fields import LineFields  # noqa: E402
from gateway.pipeline.store import Store  # noqa: E402
from tools.bench.harness import cpu_here, print_result  # noqa: E402

GOAL_LINES_PER_S = 20_000     # issue 43
# (template, component, level, [(name, generator)]): the shapes of a line's messages
TEMPLATES = (
    ("heater zone <*> temperature <*> C", "heater", "info", [("zone", lambda r: r.randint(1, 8)),
                                                              ("temperature", lambda r: round(r.uniform(60, 95), 1))]),
    ("capper torque <*> Nm caps applied <*>", "capper", "info", [("torque", lambda r: round(r.uniform(1.8, 2.4), 2)),
                                                                 ("caps", lambda r: r.randint(1, 99999))]),
    ("operator <*> cleared jam at station <*>", "labeler", "warning", [("operator", lambda r: f"O-{r.randint(100, 199)}"),
                                                                       ("station", lambda r: r.randint(1, 6))]),
    ("conveyor <*> speed set to <*> m/s by <*>", "conveyor", "info", [("conveyor", lambda r: f"C{r.randint(1, 4)}"),
                                                                       ("speed", lambda r: round(r.uniform(0.2, 1.5), 2)),
                                                                       ("by", lambda r: r.choice(["plc", "hmi", "mes"]))]),
    ("connection from <*> port <*> accepted", "gateway", "info", [("from", lambda r: f"10.0.{r.randint(0, 9)}.{r.randint(1, 254)}"),
                                                                  ("port", lambda r: r.randint(1024, 65535))]),
    ("batch <*> finished: <*> bottles, <*> rejected", "filler", "info", [("batch", lambda r: f"B{r.randint(1000, 9999)}"),
                                                                          ("bottles", lambda r: r.randint(500, 5000)),
                                                                          ("rejected", lambda r: r.randint(0, 40))]),
    ("emergency stop pressed at panel <*>", "safety", "error", [("panel", lambda r: r.randint(1, 3))]),
    ("灌装机 <*> 压力 <*> bar", "filler", "info", [("机", lambda r: r.randint(1, 4)), ("压力", lambda r: round(r.uniform(2, 4), 2))]),
)


def make_store(path: Path, n: int, seed: int = 7, chunk: int = 10_000) -> None:
    rnd = random.Random(seed)
    t0 = 1.79e9
    with Store(path, max_bytes=64 << 30) as store:
        for k in range(0, n, chunk):
            recs, tids, fields = [], [], []
            for i in range(k, min(n, k + chunk)):
                tid = rnd.randrange(len(TEMPLATES))
                template, comp, level, gens = TEMPLATES[tid]
                values = [g(rnd) for _, g in gens]
                text = template
                for v in values:
                    text = text.replace("<*>", str(v), 1)
                t = t0 + i * 0.05
                recs.append(LogRecord(ts=t, source="bench", host=f"line{1 + tid % 3}/{comp}",
                                      severity=3 if level == "error" else 4 if level == "warning" else 6, text=text))
                tids.append(tid + 1)
                fields.append(LineFields(time=t, time_text=time.strftime("%b %d %H:%M:%S", time.gmtime(t)),
                                         host=f"{comp}-{tid % 2}", component=comp, pid=1000 + tid, level=level,
                                         template=template,
                                         params=[(str(v), float(v) if isinstance(v, (int, float)) else None, name)
                                                 for (name, _), v in zip(gens, values)]))
            store.append(recs, tids, fields)


def ship_all(settings: FleetSettings, store_path: Path, cursor: Path) -> tuple[float, float, int, list[float]]:
    """(wall s, this process's CPU s, lines, per-pass ms) of shipping the whole store."""
    shipper = Shipper(settings, store_path, cursor_path=cursor)
    passes = []
    n = 0
    cpu0, t0 = time.process_time(), time.perf_counter()
    while True:
        t = time.perf_counter()
        k = shipper.ship_once()
        if not k:
            break
        passes.append((time.perf_counter() - t) * 1e3)
        n += k
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    shipper.stop()
    return wall, cpu, n, passes


def box_side(store_path: Path, batch: int) -> tuple[float, int]:
    """(s, bytes) of reading and encoding every line without a server."""
    src = StoreSource(store_path, "bench")
    cursor, size = 0, 0
    t0 = time.perf_counter()
    while (b := src.lines_after(cursor, batch)) is not None:
        cursor, size = b.last_id, size + len(b.body)
    s = time.perf_counter() - t0
    src.close()
    return s, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=300_000)
    ap.add_argument("--batch", type=int, default=FleetSettings().batch_lines)
    ap.add_argument("--shards", type=int, default=1, help="servers; more than one: a Distributed table over them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_fleet_") as tmp:
        tmp = Path(tmp)
        t = time.perf_counter()
        make_store(tmp / "box" / "logs.db", args.lines)
        print(f"store: {args.lines} lines in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        cluster = LocalCluster(tmp / "clickhouse", args.shards).start()
        try:
            with ClickHouseHttp(cluster.urls[:1]) as ch:
                version = ch.query("SELECT version()").strip()
            settings = FleetSettings(urls=cluster.urls, box_id="bench", batch_lines=args.batch,
                                     cluster=CLUSTER if args.shards > 1 else "")
            init_schema(settings)
            wall, cpu, n, passes = ship_all(settings, tmp / "box" / "logs.db", tmp / "cursor.json")
            with ClickHouseHttp(cluster.urls) as ch:
                arrived = ch.rows(f"SELECT count() AS n FROM {settings.database}.lines FINAL")[0]["n"]
        finally:
            cluster.stop(kill=True)
        box_s, body_bytes = box_side(tmp / "box" / "logs.db", args.batch)
    passes.sort()
    lps = n / wall
    print_result({
        "bench": "fleet_ship", "lines": n, "arrived_after_final": arrived, "batch_lines": args.batch,
        "shards": args.shards, "clickhouse": version, "lines_per_s": round(lps), "goal_lines_per_s": GOAL_LINES_PER_S,
        "meets_goal": lps >= GOAL_LINES_PER_S, "wall_s": round(wall, 2), "shipper_cpu_s": round(cpu, 2),
        "pass_ms_p50": round(passes[len(passes) // 2], 1), "pass_ms_p95": round(passes[int(len(passes) * 0.95)], 1),
        "box_side_lines_per_s": round(n / box_s), "json_bytes_per_line": round(body_bytes / max(n, 1)),
        "cpu": cpu_here(), "n_cpu": os.cpu_count()})


if __name__ == "__main__":
    main()
