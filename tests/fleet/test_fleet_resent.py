"""Each line once without FINAL: the shipper marks every line it may have sent before (`resent`), its INSERTs
are sent once, and the fleet node counts rows outside the ranges of resent ids and dedupes inside them,
re-reading the ranges when a statement meets a resent row outside them; `fleet init` adds the new columns
to a plant's older tables."""

from __future__ import annotations

import socket
import threading

import pytest

from gateway.fleet.client import ClickHouseHttp, Unreachable
from gateway.fleet.local_cluster import READER, READER_PASSWORD
from gateway.fleet.node.surface import FleetSurface
from gateway.fleet.schema import LINE_COLUMNS, init_schema, local_ddl
from gateway.fleet.shipper import Shipper
from gateway.pipeline.store import Store


class LostAcks:
    """The shipper's client whose first `n` INSERTs of lines reach ClickHouse but whose answers are lost."""

    def __init__(self, client: ClickHouseHttp, n: int) -> None:
        self.client, self.n = client, n

    def insert_json(self, table, body, settings=None, statement=None, once=False):
        self.client.insert_json(table, body, settings, statement, once)
        if self.n and table.endswith(".lines"):
            self.n -= 1
            raise Unreachable("the answer was lost")

    def __getattr__(self, name):
        return getattr(self.client, name)


def resent(ch: ClickHouseHttp, database: str) -> tuple[int, int]:
    """(rows, rows with resent = 1) of the lines table."""
    r = ch.rows(f"SELECT count() AS n, countIf(resent = 1) AS r FROM {database}.lines")[0]
    return r["n"], r["r"]


def stop_merges(urls: list[str], database: str) -> None:
    for url in urls:
        with ClickHouseHttp([url]) as shard:
            shard.query(f"SYSTEM STOP MERGES {database}.lines_local")


def node(urls: list[str], database: str) -> tuple[FleetSurface, ClickHouseHttp]:
    reader = ClickHouseHttp(urls, READER, READER_PASSWORD)
    return FleetSurface(reader.rows, database), reader


def test_a_batch_sent_again_says_resent_and_counts_once(fleet, ch, data, tmp_path):
    init_schema(fleet)
    stop_merges(fleet.urls, fleet.database)              # the copies stay: the node must dedupe them
    surface, reader = node(fleet.urls, fleet.database)
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 5_000)
        shipper = Shipper(fleet, store.path, client=LostAcks(ClickHouseHttp(fleet.urls), 0))
        assert shipper.ship_once() == 2_000
        assert resent(ch, fleet.database) == (2_000, 0)  # a first send: nothing marked
        assert surface.run({"op": "count"})["count"] == 2_000       # (the node reads the ranges: none)
        shipper.client = LostAcks(shipper.client.client, 1)
        with pytest.raises(Unreachable):
            shipper.ship_once()                          # lines 2001..4000 are in, the cursor did not move
        assert shipper.ship_once() == 2_000              # sent again: marked
        assert resent(ch, fleet.database) == (6_000, 2_000)
        while shipper.ship_once():
            pass
        shipper.stop()
    assert resent(ch, fleet.database) == (7_000, 2_000)  # the rest went once, unmarked
    try:
        for call, want in (({"op": "count"}, 5_000), ({"op": "count", "text": "temperature"}, 5_000),
                           ({"op": "count", "level": "error"}, 100), ({"op": "top_k", "by": "level"}, 5_000)):
            assert surface.run(call)["count"] == want, call     # the copies met: ranges re-read, each line once
        assert surface._ranges == (("b1", 2_001, 4_000),)
        top = surface.run({"op": "top_k", "by": "component"})["top"]
        assert top == [{"value": "heater", "count": 5_000}]
        first_last = surface.run({"op": "first_last", "text": "seq=2500"})
        assert first_last["count"] == 1 and first_last["first"]["id"] == first_last["last"]["id"] == 2_501
    finally:
        reader.close()
    assert data.counts(ch, fleet.database) == (7_000, 5_000, 5_000)


def test_ranges_are_joined_nearest_first_never_across_boxes():
    from gateway.fleet.node.sql import merged_ranges

    rows = [("a", 1, 10), ("a", 100, 110), ("a", 30, 40), ("b", 5, 6), ("c", 1, 2)]
    assert merged_ranges(rows, 5) == (("a", 1, 10), ("a", 30, 40), ("a", 100, 110), ("b", 5, 6), ("c", 1, 2))
    assert merged_ranges(rows, 4) == (("a", 1, 40), ("a", 100, 110), ("b", 5, 6), ("c", 1, 2))
    assert merged_ranges(rows, 2) == (("a", 1, 110), ("b", 5, 6), ("c", 1, 2))
    assert merged_ranges([]) == ()


def test_after_a_kill_the_next_batch_says_resent_after_a_stop_not(fleet, ch, data, tmp_path):
    init_schema(fleet)
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 6_000)
    path = data.store_path(tmp_path)
    killed = Shipper(fleet, path)
    assert killed.ship_once() == 2_000                   # then killed: sent_hi stays a batch ahead
    assert killed.cursor.sent_hi == 4_000
    killed.client.close()
    again = Shipper(fleet, path)
    assert again.ship_once() == 2_000                    # 2001..4000 may have been in flight: marked
    assert resent(ch, fleet.database) == (4_000, 2_000)
    again.stop()                                         # a clean stop: the bound is what was sent
    assert again.cursor.sent_hi == 4_000
    last = Shipper(fleet, path)
    assert last.ship_once() == 2_000
    last.stop()
    assert resent(ch, fleet.database) == (6_000, 2_000)


def test_an_insert_sent_once_is_not_sent_again_to_the_next_url(fleet, ch):
    """A server that takes the request and drops the connection may have run it: `once` raises instead of
    resending it (here to the real server behind it); a refused connection sent nothing: the next URL."""
    init_schema(fleet)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def drop() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.close()

    threading.Thread(target=drop, daemon=True).start()
    row = b'{"box": "x", "id": 1, "text": "hello"}\n'
    insert = f"INSERT INTO {fleet.database}.lines (box, id, text) FORMAT JSONEachRow"
    dropping = ClickHouseHttp([f"http://127.0.0.1:{listener.getsockname()[1]}", fleet.urls[0]])
    try:
        with pytest.raises(Unreachable, match="may have run"):
            dropping.insert_json("", row, {"insert_distributed_sync": 1}, insert, once=True)
        assert ch.rows(f"SELECT count() AS n FROM {fleet.database}.lines")[0]["n"] == 0
    finally:
        dropping.close()
        listener.close()
    with socket.socket() as closed:                      # a port nobody listens on: refused, nothing sent
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with ClickHouseHttp([f"http://127.0.0.1:{port}", fleet.urls[0]]) as refused:
        refused.insert_json("", row, {"insert_distributed_sync": 1}, insert, once=True)
    assert ch.rows(f"SELECT count() AS n FROM {fleet.database}.lines")[0]["n"] == 1


def test_init_adds_the_new_columns_to_older_tables(fleet, ch):
    """A plant's tables from before text_lower and resent: `fleet init` adds them, shards first; the older
    rows read text_lower from their text."""
    old = tuple(c for c in LINE_COLUMNS if c[0] not in ("text_lower", "resent"))
    ch.query(f"CREATE DATABASE IF NOT EXISTS {fleet.database}")
    for url in fleet.urls:
        with ClickHouseHttp([url]) as shard:
            shard.query(f"CREATE DATABASE IF NOT EXISTS {fleet.database}")
            shard.query(local_ddl(fleet.database, "lines_local", old))
            shard.query(f"CREATE TABLE {fleet.database}.lines AS {fleet.database}.lines_local ENGINE = "
                        f"Distributed(linegate, {fleet.database}, lines_local, cityHash64(box, id))")
    ch.insert_json(f"{fleet.database}.lines", b'{"box": "b1", "id": 1, "text": "Emergency STOP"}\n',
                   {"insert_distributed_sync": 1})
    init_schema(fleet)
    init_schema(fleet)                                   # again: nothing left to add
    for url in fleet.urls:
        with ClickHouseHttp([url]) as shard:
            for table in ("lines_local", "lines"):
                cols = [r["name"] for r in shard.rows(f"SELECT name FROM system.columns WHERE database ="
                                                      f" '{fleet.database}' AND table = '{table}'")]
                assert cols == [c for c, _ in LINE_COLUMNS], (url, table)
    surface, reader = node(fleet.urls, fleet.database)
    try:
        assert surface.run({"op": "count", "text": "emergency stop"})["count"] == 1
        # no level word: the severity's (0, emergency), as the box names it
        assert surface.run({"op": "count", "level": ["emergency", "info"]})["count"] == 1
        assert surface.run({"op": "count", "level": "info"})["count"] == 0
        assert surface.run({"op": "top_k", "by": "level"})["top"] == [{"value": "emergency", "count": 1}]
    finally:
        reader.close()
