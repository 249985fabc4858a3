"""The box with `[fleet]`: the appliance ships its lines to a real ClickHouse (two shards, tests/fleet/conftest.py)
and shows the figures in /api/stats (and its `ui` block) and /metrics; the store's retention keeps what is not
shipped (Store.keep_from); without `[fleet]` nothing of this is there."""

from __future__ import annotations

import socket
import time

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from gateway.appliance import Appliance
from gateway.cli import build_parser
from gateway.fleet.schema import init_schema
from gateway.ingest.record import LogRecord
from gateway.pipeline.store import MIN_STORE_BYTES, Store
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.settings import Settings

FLEET_METRICS = {"linegate_fleet_shipped_lines", "linegate_fleet_dropped_unshipped_lines", "linegate_fleet_rejected_lines",
                 "linegate_fleet_failures", "linegate_fleet_pending_lines", "linegate_fleet_oldest_unshipped_seconds"}


def _settings(tmp_path, **more) -> Settings:
    return Settings(data_dir=tmp_path / "box", engine={"enabled": False}, ingest={"demo": {"enabled": False}},
                    alerts={"explain": []}, **more)


def _client(app: Appliance, settings: Settings) -> tuple[TestClient, dict[str, str]]:
    key = KeyStore(settings.server.key_path(settings.data_dir)).create(name="fleet test")
    return TestClient(create_app(app, settings)), {"Authorization": f"Bearer {key}"}


def _wait(cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_an_appliance_with_fleet_ships_its_lines_and_shows_the_figures(fleet, ch, data, tmp_path):
    init_schema(fleet)
    settings = _settings(tmp_path, fleet=fleet.model_dump())
    app = Appliance(settings).start()
    try:
        assert app.shipper is not None and app.store.keep_from == app.shipper.keep_from
        recs = [LogRecord.make(f"press {i % 3} cycle {i} done", source="t", host="line3/press", ts=1.79e9 + i)
                for i in range(300)]
        app.ingest(recs)
        _wait(lambda: app.stats()["fleet"]["shipped"] == 300 and app.stats()["fleet"]["pending"] == 0, 60,
              "the lines shipped")
        assert data.counts(ch, fleet.database, "b1")[1:] == (300, 300)
        client, auth = _client(app, settings)
        with client:
            s = client.get("/api/stats", headers=auth).json()
            assert s["fleet"]["shipped"] == 300 and s["fleet"]["last_error"] is None
            assert s["ui"]["fleet"]["box_id"] == "b1" and s["ui"]["fleet"]["shipped"] == 300
            assert s["ui"]["fleet"]["pending"] == 0 and s["ui"]["fleet"]["oldest_unshipped_s"] is None
            families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics", headers=auth).text)}
        assert FLEET_METRICS <= set(families)
        assert families["linegate_fleet_shipped_lines"].samples[0].value == 300
        assert families["linegate_fleet_pending_lines"].samples[0].value == 0
    finally:
        app.stop()


def test_an_unreachable_plant_shows_pending_lines_and_the_error(data, tmp_path):
    """Nothing answers at the URL: the lines wait on the box, counted, with the age of the oldest and the error."""
    with socket.socket() as sock:              # a free port: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = _settings(tmp_path, fleet={"urls": [f"http://127.0.0.1:{port}"], "box_id": "b9", "timeout_s": 2.0,
                                          "interval_s": 0.05, "backoff_max_s": 1.0})
    app = Appliance(settings).start()
    try:
        app.ingest([LogRecord.make(f"line {i}", source="t", host="h", ts=time.time() - 5) for i in range(20)])
        _wait(lambda: app.stats()["fleet"]["failures"] >= 2, 30, "a failed pass after the lines")
        client, auth = _client(app, settings)
        with client:
            u = client.get("/api/stats", headers=auth).json()["ui"]["fleet"]
            families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics", headers=auth).text)}
        assert u["shipped"] == 0 and u["pending"] == 20 and u["oldest_unshipped_s"] >= 4.0 and u["last_error"]
        assert families["linegate_fleet_pending_lines"].samples[0].value == 20
        assert families["linegate_fleet_oldest_unshipped_seconds"].samples[0].value >= 4.0
        assert [s.value for s in families["linegate_fleet_failures"].samples if s.name.endswith("_total")][0] >= 2
    finally:
        app.stop()


def test_without_fleet_the_box_ships_nothing_and_shows_no_fleet(tmp_path):
    settings = _settings(tmp_path)
    assert not settings.fleet.enabled and not settings.fleet.ships
    app = Appliance(settings).start()
    try:
        assert app.shipper is None and app.store.keep_from is None and "fleet" not in app.stats()
        client, auth = _client(app, settings)
        with client:
            assert client.get("/api/stats", headers=auth).json()["ui"]["fleet"] is None
            names = {f.name for f in text_string_to_metric_families(client.get("/metrics", headers=auth).text)}
        assert not names & FLEET_METRICS
        assert not (settings.data_dir / "fleet_cursor.json").exists()
    finally:
        app.stop()


def test_a_fleet_node_setting_without_box_id_does_not_ship(tmp_path):
    app = Appliance(_settings(tmp_path, fleet={"urls": ["http://127.0.0.1:1"]})).start()
    try:
        assert app.shipper is None and "fleet" not in app.stats()
    finally:
        app.stop()


def _fill_past(store: Store, n: int) -> None:
    text = "x" * 400
    for k in range(0, n, 500):
        store.append([LogRecord(ts=1.79e9 + i, source="t", host="h", severity=6, text=f"{text} {i}")
                      for i in range(k, k + 500)])
    store.flush()


def test_retention_stops_where_keep_from_says(tmp_path):
    """Past max_bytes retention deletes the oldest rows, but never at or above keep_from(last_id); what it
    held back is shown; a failing hook keeps everything."""
    kept = {"from": 1}
    asked = []

    def keep_from(last_id: int) -> int:
        asked.append(last_id)
        if kept["from"] is None:
            raise RuntimeError("no cursor")
        return kept["from"]

    with Store(tmp_path / "logs.db", MIN_STORE_BYTES, keep_from=keep_from) as store:
        store.retention_check_rows = 500
        _fill_past(store, 4_000)                    # well past 1 MiB
        st = store.stats()
        assert asked and st["first_id"] == 1 and st["retention_deleted"] == 0 and st["retention_held"] > 0
        kept["from"] = 1_001                        # the first 1,000 are shipped: they may go
        _fill_past(store, 1_000)
        st = store.stats()
        assert st["first_id"] == 1_001 and st["retention_deleted"] == 1_000
        kept["from"] = None                         # the hook fails: nothing more goes
        _fill_past(store, 1_000)
        assert store.stats()["first_id"] == 1_001
    with Store(tmp_path / "other.db", MIN_STORE_BYTES) as store:   # no hook: retention as before
        store.retention_check_rows = 500
        _fill_past(store, 4_000)
        assert store.stats()["retention_deleted"] > 0 and store.stats()["retention_held"] == 0


def test_the_linegate_command_has_fleet():
    args = build_parser().parse_args(["fleet", "status", "--data-dir", "/tmp/x", "--url", "http://127.0.0.1:8123",
                                      "--box-id", "b1"])
    assert args.command == "fleet" and args.fleet_command == "status" and callable(args.func)
