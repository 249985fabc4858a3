"""`linegate serve` as the fleet node ([fleet] node = true): the chat's own reads of the store (known values and
words, the kinds of line, the lines holding a token: gateway/fleet/node/catalog.py) answer from ClickHouse what
the box's SQLite answers; the call's `template` is a fleet-wide number of a kind and `where` a parameter's value;
/api/logs/search and /api/stats read the plant. Two real shards (conftest.py), one box's lines sent twice."""

from __future__ import annotations

import sqlite3

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from gateway.appliance import Appliance
from gateway.fleet.client import ClickHouseHttp
from gateway.fleet.local_cluster import READER, READER_PASSWORD
from gateway.fleet.node.catalog import UnknownStatement
from gateway.fleet.node.surface import FleetSurface
from gateway.fleet.schema import init_schema, insert_lines_sql
from gateway.fleet.settings import FleetSettings
from gateway.fleet.source import StoreSource
from gateway.ingest.record import LogRecord
from gateway.pipeline.query import QueryError, QuerySurface
from gateway.pipeline.query_vocab import known_values, known_words
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.serve.answer import evidence, grounding
from gateway.settings import Settings
from tools.bench.bench_fleet import make_store

N_B1, N_B2 = 2_000, 500


@pytest.fixture(scope="module")
def plant(cluster, tmp_path_factory):
    """Boxes b1 (2,000 lines, sent twice) and b2 (500) in database `node`; b1's store and the surfaces."""
    tmp = tmp_path_factory.mktemp("node")
    make_store(tmp / "b1.db", N_B1, seed=3)
    make_store(tmp / "b2.db", N_B2, seed=4)
    init_schema(FleetSettings(urls=cluster.urls, box_id="b1", cluster="linegate", database="node"))
    with ClickHouseHttp(cluster.urls) as ch:
        for box, n, resent in (("b1", N_B1, 0), ("b1", N_B1, N_B1), ("b2", N_B2, 0)):   # b1 again, as resent
            src = StoreSource(tmp / f"{box}.db", box)
            for cursor in range(0, n, 1_000):
                ch.insert_json("node.lines", src.lines_after(cursor, 1_000, resent).body, {"insert_distributed_sync": 1},
                               insert_lines_sql("node.lines"))
            src.close()
    reader = ClickHouseHttp(cluster.urls, READER, READER_PASSWORD)
    yield {"tmp": tmp, "box": QuerySurface(tmp / "b1.db"), "urls": cluster.urls,
           "fleet": FleetSurface(reader.rows, "node"), "reader": reader}
    reader.close()


class OneBox:
    """The fleet surface seen through the answer layer with a box filter on every ClickHouse read: what b1 alone
    holds (the answer layer's reads have no box filter of their own)."""

    def __init__(self, fleet: FleetSurface, box: str) -> None:
        self.surface = FleetSurface(lambda stmt, caps: fleet._rows(stmt.replace(" WHERE ", f" WHERE box = '{box}' AND "),
                                                                   caps), "node")

    def __getattr__(self, name):
        return getattr(self.surface, name)


def test_known_values_and_words_are_the_boxs(plant):
    one = OneBox(plant["fleet"], "b1").surface
    for field in ("host", "component", "level"):
        assert known_values(one, field) == known_values(plant["box"], field), field
    got, want = known_words(one), known_words(plant["box"])
    assert sorted(got) == sorted(want) and got[:20] == want[:20]       # (words of equal counts: any order)
    assert set(known_values(plant["fleet"], "host")) >= set(known_values(plant["box"], "host"))


def test_kinds_are_the_boxs_with_fleet_numbers(plant):
    one = OneBox(plant["fleet"], "b1").surface
    for words, tokens in ((["heater", "temperature"], []), (["operator", "jam"], ["O-150"]), (["压力"], []),
                          (["bottles", "rejected"], ["B1234"])):
        want = grounding.Kinds(plant["box"]).kinds(words, tokens)
        got = grounding.Kinds(one).kinds(words, tokens)
        assert [(k.template, k.count, k.params, k.examples) for k in got] == \
            [(k.template, k.count, k.params, k.examples) for k in want], words
        for k in got:                          # the number the call gives is that kind, on every box
            assert one.numbers.text(k.id) and k.template.split("<")[0] in one.numbers.text(k.id)
            asked = {"op": "count", "template": k.id}
            assert one.run(asked)["count"] == k.count
            assert plant["fleet"].run(asked)["count"] > k.count    # b2 has lines of that kind too


def test_evidence_finds_the_boxs_lines(plant):
    one = OneBox(plant["fleet"], "b1").surface
    for question in ("What did operator O-150 clear?", "Which port did 10.0.3.7 use?", "What happened in batch B1234?"):
        want, got = evidence.find(plant["box"], question), evidence.find(one, question)
        assert (got.tokens, got.ids) == (want.tokens, want.ids), question
        assert [x["text"] for x in got.lines] == [x["text"] for x in want.lines], question


def test_a_parameter_condition_and_an_unknown_kind(plant):
    fleet, box = plant["fleet"], plant["box"]
    call = {"op": "count", "where": {"operator": "O-150"}}
    got = fleet.run({**call, "box": "b1"})
    assert got.get("count") == box.run(call)["count"] > 0, got
    assert "no kind of line has this number" in fleet.run({"op": "count", "template": 99_999})["error"]
    for bad in ("SELECT * FROM sqlite_master", "DELETE FROM logs"):
        with pytest.raises(QueryError):
            fleet.execute(bad)
        with pytest.raises(sqlite3.DatabaseError):
            fleet.execute(bad)
        assert issubclass(UnknownStatement, QueryError)


def test_the_box_list(plant):
    assert plant["fleet"].boxes() == ["b1", "b2"]


def test_node_settings_are_refused_without_urls_or_with_a_box_id():
    with pytest.raises(ValidationError, match="needs fleet.urls"):
        FleetSettings(node=True)
    with pytest.raises(ValidationError, match="ships nothing"):
        FleetSettings(node=True, urls=["http://ch:8123"], box_id="b1")


def _node_settings(tmp_path, urls) -> Settings:
    return Settings(data_dir=tmp_path / "node", engine={"enabled": False}, ingest={"demo": {"enabled": False}},
                    alerts={"explain": []},
                    fleet={"urls": urls, "node": True, "database": "node", "reader_password": READER_PASSWORD})


def test_serve_as_the_fleet_node_searches_and_counts_the_plant(plant, tmp_path):
    settings = _node_settings(tmp_path, plant["urls"])
    app = Appliance(settings).start()
    try:
        assert app.shipper is None and app.fleet_reader is not None
        key = KeyStore(settings.server.key_path(settings.data_dir)).create(name="node test")
        auth = {"Authorization": f"Bearer {key}"}
        with TestClient(create_app(app, settings)) as client:
            r = client.get("/api/logs/search", params={"q": "emergency", "limit": 500}, headers=auth).json()
            want_b1 = plant["box"].run({"op": "count", "text": "emergency"})["count"]
            assert {x["box"] for x in r["results"]} == {"b1", "b2"}
            assert sum(x["box"] == "b1" for x in r["results"]) == want_b1
            r = client.get("/api/logs/search", params={"q": "emergency", "box": "b2", "limit": 5}, headers=auth).json()
            assert r["count"] == 5 and {x["box"] for x in r["results"]} == {"b2"}
            line = r["results"][0]["id"]
            r = client.get(f"/api/logs/{line}/around", params={"box": "b2", "n": 2}, headers=auth).json()
            assert [x["id"] for x in r["results"]] == list(range(line - 2, line + 3))
            assert client.get(f"/api/logs/{line}/around", headers=auth).status_code == 422
            s = client.get("/api/stats", headers=auth).json()
            assert [(b["box"], b["lines"]) for b in s["fleet_node"]["boxes"]] == [("b1", N_B1), ("b2", N_B2)]
            assert s["ui"]["facts"]["fleet_lines"] == str(N_B1 + N_B2)
    finally:
        app.stop()


def test_without_node_search_has_no_box(tmp_path):
    settings = Settings(data_dir=tmp_path / "b", engine={"enabled": False}, ingest={"demo": {"enabled": False}})
    app = Appliance(settings).start()
    try:
        assert app.fleet_reader is None and app.fleet_surface is None
        app.ingest([LogRecord.make("pump trip", source="t", host="h", ts=1.7e9)])
        key = KeyStore(settings.server.key_path(settings.data_dir)).create(name="t")
        with TestClient(create_app(app, settings)) as client:
            r = client.get("/api/logs/search", params={"q": "pump"}, headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200 and "box" not in r.json()["results"][0]
            assert "fleet_node" not in client.get("/api/stats", headers={"Authorization": f"Bearer {key}"}).json()
    finally:
        app.stop()


def test_the_call_names_a_box_only_on_a_fleet_node(plant):
    from gateway.llm.constrained import Grammar
    from gateway.serve.answer.call import call_grammar
    from gateway.serve.answer.tool import QueryTool

    box = Grammar(call_grammar(words=["stop"], recent=False))
    assert not box.matches('top_k", "by": "box"}') and not box.matches('count", "box": "b1"}')
    node = Grammar(call_grammar(words=["stop"], recent=False, boxes=()))
    assert node.matches('top_k", "by": "box"}') and not node.matches('count", "box": "b1"}')
    one = Grammar(call_grammar(words=["stop"], recent=False, boxes=["b1"]))
    assert one.matches('count", "text": "stop", "box": "b1"}') and not one.matches('count", "text": "stop"}')
    two = Grammar(call_grammar(words=["stop"], recent=False, boxes=["b1", "b2"]))
    assert two.matches('count", "box": "b2"}') and two.matches('count"}')
    assert QueryTool(plant["box"], None).boxes("How many stops on b1?") is None
    tool = QueryTool(plant["fleet"], None)
    assert tool.boxes("How many stops on B1 and b2?") == ("b1", "b2") and tool.boxes("How many on b12?") == ()


def test_a_fleet_nodes_model_is_told_what_a_box_is_and_reads_a_lines_box():
    from gateway.serve.answer.call import FLEET_TOOL_HELP, TOOL_HELP, tool_help
    from gateway.serve.answer.render import render_result

    assert tool_help() == TOOL_HELP and '"by": "box"' not in TOOL_HELP
    assert tool_help(fleet_node=True) == TOOL_HELP + "\n" + FLEET_TOOL_HELP and '"by": "box"' in FLEET_TOOL_HELP
    line = {"box": "line2", "id": 7, "time": 1118168158.5, "text": "file not found", "host": "R11"}
    said = render_result({"call": {"op": "first_last"}, "count": 1, "first": line, "last": line}, "first")
    assert "in box line2 at 2005-06-07 18:15:58 (host R11)" in said
    assert "box" not in render_result({"call": {"op": "lines"}, "count": 1, "lines": [{**line, "box": None}]})
