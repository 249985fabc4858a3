"""The query surface compiled to ClickHouse SQL (gateway/fleet/node/): every call runs on Debian's ClickHouse
18.16 (two shards, lines sent twice so FINAL matters) and on a current ClickHouse (chDB), and both answer what
the box's own SQLite surface answers for the same lines; `box` filters and groups."""

from __future__ import annotations

import json
import math

import pytest

from gateway.fleet.client import ClickHouseHttp
from gateway.fleet.local_cluster import READER, READER_PASSWORD
from gateway.fleet.node.surface import FleetSurface
from gateway.fleet.schema import ddl, init_schema, insert_lines_sql
from gateway.fleet.settings import FleetSettings
from gateway.fleet.source import StoreSource
from gateway.pipeline.query import QuerySurface
from tools.bench.bench_fleet import make_store

chdb = pytest.importorskip("chdb", reason="chdb (test extra) runs a current ClickHouse in-process")

N_B1, N_B2 = 3_000, 800
T0 = 1.79e9                                   # bench_fleet's first line; a line every 0.05 s
CALLS = [
    {"op": "count"},
    {"op": "count", "text": "heater"},
    {"op": "count", "text": "zone 3"},
    {"op": "count", "text": "Zone"},
    {"op": "count", "text": "emerg*"},
    {"op": "count", "level": "error"},
    {"op": "count", "level": ["error", "warning"]},
    {"op": "count", "host": "heater-0"},
    {"op": "count", "component": "capper"},
    {"op": "count", "text": "压力"},
    {"op": "count", "text": "connection from <*> port <*> accepted"},
    {"op": "count", "text": "batch <*> finished"},
    {"op": "count", "since": T0 + 30, "until": T0 + 60.5},
    {"op": "count", "last_minutes": 1},
    {"op": "count", "since": "2026-09-21 09:47"},
    {"op": "count", "text": "heater nonexistentword"},
    {"op": "count", "text": "it's \\ 'quoted' %_"},
    {"op": "top_k", "by": "host"},
    {"op": "top_k", "by": "component", "k": 3},
    {"op": "top_k", "by": "level"},
    {"op": "top_k", "by": "template", "text": "zone"},
    {"op": "top_k", "by": "value", "k": 4},
    {"op": "top_k", "by": "param", "param": 0, "component": "conveyor"},
    {"op": "top_k", "by": "operator"},
    {"op": "top_k", "by": "ip", "k": 3},
    {"op": "top_k", "by": "speed", "text": "conveyor"},
    {"op": "top_k", "by": "value", "component": "capper", "k": 3},      # numbers only: the numbers
    {"op": "top_k", "by": "day"},
    {"op": "top_k", "by": "hour", "level": "error"},
    {"op": "stats", "of": "temperature"},
    {"op": "stats", "of": "torque", "text": "capper"},
    {"op": "stats", "text": "heater temperature"},
    {"op": "stats", "text": "capper torque <N> Nm"},
    {"op": "stats", "param": 1, "component": "filler", "text": "bottles"},
    {"op": "stats", "component": "heater"},
    {"op": "first_last", "text": "emergency stop"},
    {"op": "first_last", "level": "warning", "since": T0 + 100},
    {"op": "buckets", "component": "safety"},
    {"op": "buckets", "bucket_s": 30},
    {"op": "lines", "text": "operator", "limit": 5},
    {"op": "lines", "text": "灌装机", "limit": 3},
    {"op": "lines", "text": "no such words at all"},
    {"op": "nonsense"},
]


class ChdbRows:
    """FleetSurface's `rows` on chDB: the caps go in a SETTINGS clause (the same names, checked by a current
    ClickHouse)."""

    def __init__(self, session) -> None:
        self.session = session
        self.statements: list[str] = []

    def __call__(self, statement: str, settings: dict) -> list[dict]:
        self.statements.append(statement)
        caps = [f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in settings.items()]
        caps.append("output_format_json_quote_64bit_integers = 0")
        text = str(self.session.query(f"{statement} SETTINGS {', '.join(caps)}", "JSONEachRow"))
        return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def plant(cluster, tmp_path_factory):
    """Box b1 (3,000 lines) and b2 (800) on the two shards and in chDB, b1's first 1,000 sent twice (merges
    stopped: the copies stay); b1's store."""
    tmp = tmp_path_factory.mktemp("plant")
    make_store(tmp / "b1" / "logs.db", N_B1, seed=1)
    make_store(tmp / "b2" / "logs.db", N_B2, seed=2)
    settings = FleetSettings(urls=cluster.urls, box_id="b1", cluster="linegate", database="plant")
    init_schema(settings)
    from chdb import session as chdb_session

    local = chdb_session.Session(str(tmp / "chdb"))
    for stmt in ddl("plant"):
        local.query(stmt)
    local.query("SYSTEM STOP MERGES plant.lines")        # the copies stay copies: the reads must dedupe them
    for url in cluster.urls:
        with ClickHouseHttp([url]) as shard:
            shard.query("SYSTEM STOP MERGES plant.lines_local")
    with ClickHouseHttp(cluster.urls) as ch:
        for box, n, again in (("b1", N_B1, 1_000), ("b2", N_B2, 0)):
            src = StoreSource(tmp / box / "logs.db", box)
            for cursor, resent in (*((c, 0) for c in range(0, n, 500)), *((c, again) for c in range(0, again, 500))):
                body = src.lines_after(cursor, 500, resent).body     # sent again: marked, as the shipper does
                ch.insert_json("plant.lines", body, {"insert_distributed_sync": 1}, insert_lines_sql("plant.lines"))
                local.query(insert_lines_sql("plant.lines") + "\n" + body.decode())
            src.close()
    reader = ClickHouseHttp(cluster.urls, READER, READER_PASSWORD)
    yield {"store": tmp / "b1" / "logs.db", "old": FleetSurface(reader.rows, "plant"),
           "new": FleetSurface(ChdbRows(local), "plant"), "chdb": local}
    reader.close()
    local.close()


def normal(out: dict) -> dict:
    """A result without its call, boxes and what only one surface reports; numbers to 12 digits."""
    out = {k: v for k, v in out.items() if k != "call"}
    return json.loads(json.dumps(out, default=str), object_hook=_drop_box,
                      parse_float=_twelve, parse_int=_twelve)


def _twelve(s: str) -> float:
    return float(f"{float(s):.12g}")


def _drop_box(d: dict) -> dict:
    d.pop("box", None)
    if "text" in d and "id" in d:                 # a line: what both surfaces give of it
        return {k: d[k] for k in ("id", "time", "text") if k in d}
    return d


@pytest.mark.parametrize("call", CALLS, ids=[json.dumps(c, ensure_ascii=False)[:60] for c in CALLS])
def test_a_call_answers_as_on_the_box(plant, call):
    box = QuerySurface(plant["store"]).run(call)
    fleet_call = {**call, "box": "b1"}
    old, new = plant["old"].run(fleet_call), plant["new"].run(fleet_call)
    if "error" in box:
        assert "error" in old and "error" in new
        return
    assert "error" not in old, old["error"]
    assert "error" not in new, new["error"]
    assert normal(old) == normal(box)
    assert normal(new) == normal(box)


def test_box_groups_and_filters_across_boxes(plant):
    for surface in (plant["old"], plant["new"]):
        out = surface.run({"op": "top_k", "by": "box"})
        assert out["top"] == [{"value": "b1", "count": N_B1}, {"value": "b2", "count": N_B2}]
        assert surface.run({"op": "count", "box": ["b1", "b2"]})["count"] == N_B1 + N_B2
        first = surface.run({"op": "first_last", "text": "emergency stop"})
        assert {first["first"]["box"], first["last"]["box"]} <= {"b1", "b2"}
        across = surface.run({"op": "count", "text": "emergency stop"})     # across boxes: counted per box too
        assert across["call"]["op"] == "top_k" and across["call"]["by"] == "box"
        assert across["count"] == sum(t["count"] for t in across["top"]) == first["count"]
        assert [t["value"] for t in across["top"]] == sorted(("b1", "b2"), key=lambda b: -surface.run(
            {"op": "count", "text": "emergency stop", "box": b})["count"])


def test_copies_are_in_the_tables_and_counted_once(cluster, plant):
    """b1's resent lines are still there as copies (merges stopped), so the answers above dedupe them."""
    with ClickHouseHttp(cluster.urls) as ch:
        assert ch.rows("SELECT count() AS n FROM plant.lines")[0]["n"] == N_B1 + N_B2 + 1_000
    assert int(plant["chdb"].query("SELECT count() FROM plant.lines", "CSV").bytes()) == N_B1 + N_B2 + 1_000
    for surface in (plant["old"], plant["new"]):
        assert surface.run({"op": "count"})["count"] == N_B1 + N_B2
        assert len({(x["box"], x["id"]) for x in surface.run({"op": "lines", "limit": 50})["lines"]}) == 50


def test_the_reader_can_not_write_and_is_capped(cluster, plant):
    reader = ClickHouseHttp(cluster.urls, READER, READER_PASSWORD)
    try:
        with pytest.raises(Exception, match="readonly"):
            reader.query("INSERT INTO plant.lines (box, id) VALUES ('x', 1)")
        capped = FleetSurface(reader.rows, "plant", max_result_rows=2)
        assert "Limit for result exceeded" in capped.run({"op": "top_k", "by": "component"})["error"]
    finally:
        reader.close()


def test_every_statement_ran_on_a_current_clickhouse(plant):
    statements = plant["new"]._rows.statements
    assert len(statements) > 2 * len(CALLS)
    assert not any(" FINAL" in s for s in statements)      # each line once after the filter (sql.py)
    assert not math.isnan(plant["new"].run({"op": "stats", "of": "temperature", "box": "b2"})["avg"])


def test_each_way_of_counting_runs_on_both(plant):
    """The counting statements with no ranges of resent ids, with b1's, and with every id deduped (None)."""
    from gateway.fleet.node import sql

    w = sql.where({"op": "count", "text": "heater"}, None, None)
    for surface in (plant["old"], plant["new"]):
        t = surface.table
        for ranges in ((), (("b1", 1, 1_000),), None):
            n = surface.q(sql.count(t, w, ranges))[0]
            top = surface.q(sql.top_group(t, w, "box", 5, ranges))
            params = surface.q(sql.top_params(t, w, 3, name="zone", ranges=ranges))
            span = surface.q(sql.span(t, w, ranges))[0]
            buckets = surface.q(sql.buckets(t, w, span["lo"], 60.0, ranges))
            assert int(top[0]["total"]) == int(n["n"]) == int(span["n"]) == sum(int(b["n"]) for b in buckets)
            assert params
            per_box = surface.q(sql.box_stats(t, ranges))
            assert [(r["box"], int(r["lines"])) for r in per_box] == [("b1", N_B1), ("b2", N_B2)] or ranges == ()
            if ranges == ():                            # b1's copies count twice, and say so
                assert int(n["stray"]) > 0 and int(top[0]["stray"]) == int(n["stray"])
            else:
                assert int(n["stray"]) == 0 and int(n["n"]) == surface.run({"op": "count", "text": "heater"})["count"]


SEARCHES = [
    {},
    {"text": "operator"},
    {"text": "emerg*", "limit": 5},
    {"text": "压力", "limit": 7},
    {"severity": "warning", "limit": 20},
    {"since": T0 + 10, "until": T0 + 20},
    {"template_id": 3, "source": "bench", "limit": 3},
    {"before_id": 101, "limit": 10},
    {"after_id": 2990, "limit": 50},
]


@pytest.mark.parametrize("args", SEARCHES, ids=[json.dumps(a, ensure_ascii=False) for a in SEARCHES])
def test_the_fleet_reader_searches_as_the_store(plant, args):
    from gateway.fleet.node.reader import FleetStoreReader
    from gateway.pipeline.store import Store

    with Store(plant["store"]) as store:
        want = store.search(**args)
        fields = store.fields(want[0]["id"]) if want else None
    for surface in (plant["old"], plant["new"]):
        reader = FleetStoreReader(surface._rows, "plant", surface.caps)
        got = reader.search(**args, box="b1")
        assert [_stable(r) for r in got] == [_stable(r) for r in want]
        if want:
            assert _stable(reader.get(want[0]["id"], "b1")) == _stable(want[0])
            assert reader.fields(want[0]["id"], "b1") == fields
    assert FleetStoreReader(plant["old"]._rows, "plant").count() == N_B1 + N_B2


def _stable(row: dict) -> dict:
    """What a search row holds whoever reads it (the box's naming of hosts is being reworked: host/peer)."""
    return {k: row[k] for k in ("id", "ts", "source", "severity", "text", "template_id")}


def test_the_fleet_reader_pages_only_within_a_box(plant):
    from gateway.fleet.node.reader import FleetStoreReader

    reader = FleetStoreReader(plant["old"]._rows, "plant")
    with pytest.raises(ValueError, match="give box"):
        reader.search(after_id=5)
    assert reader.id_range("b2") == (1, N_B2)
    assert [(b["box"], b["lines"]) for b in reader.stats()["boxes"]] == [("b1", N_B1), ("b2", N_B2)]
