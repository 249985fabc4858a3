"""The box's shipper against two real ClickHouse shards: fields, template text and named parameters arrive;
re-sending is harmless after FINAL; a shard killed -9 and restarted mid-shipping, and a shipper killed -9
and restarted, lose and double nothing; backoff while unreachable; the retention cap is counted."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from gateway.fleet.client import ClickHouseHttp
from gateway.fleet.schema import init_schema
from gateway.fleet.shipper import Shipper
from gateway.pipeline.outbox import AlertOutbox
from gateway.pipeline.store import Store

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wait_for(cond, timeout_s: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_lines_arrive_with_fields_template_and_named_params(fleet, ch, data, tmp_path):
    init_schema(fleet)
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 5_000)
        shipper = Shipper(fleet, store.path)
        assert shipper.ship_once() == 2_000
        while shipper.ship_once():
            pass
        f = shipper.figures()
        assert (f["shipped"], f["pending"], f["oldest_unshipped_s"], f["last_error"]) == (5_000, 0, None, None)
        assert f["batches"] == 3
        box = store.fields(8)                  # the 8th line: i = 7
        row = ch.rows(f"SELECT * FROM {fleet.database}.lines FINAL WHERE box = 'b1' AND id = 8")[0]
        shipper.stop()
    assert row["text"] == store_text(7)
    assert row["template"] == box["template"] and row["level"] == box["level"] == "info"
    assert row["component"] == "heater" and row["line_host"] == "plc0" and row["pid"] == 102
    assert row["param_name"] == ["zone", "temperature", "seq"]
    assert row["param_text"] == [p["text"] for p in box["params"]]
    assert row["param_num"] == [2.0, 73.5, 7.0]
    assert data.counts(ch, fleet.database) == (5_000, 5_000, 5_000)
    # the two shards share the lines: the Distributed table spreads them by (box, id)
    per_shard = []
    for url in fleet.urls:
        with ClickHouseHttp([url]) as shard:
            per_shard.append(shard.rows(f"SELECT count() AS n FROM {fleet.database}.lines_local")[0]["n"])
    assert sum(per_shard) == 5_000 and min(per_shard) > 1_000


def test_any_text_arrives_as_it_was_stored(fleet, ch, tmp_path):
    """Quotes, backslashes, control characters, Chinese, emoji, a parameter without a name, a missing
    template, a pid that is not a number: the JSON SQLite writes is what ClickHouse reads back."""
    from gateway.ingest.record import LogRecord
    from gateway.pipeline.fields import LineFields

    init_schema(fleet)
    odd = ['say "hi" \\ back\\slash', "tab\there\x01\x1f end", "温度过高 🔥 ok", "x" * 5_000, "'; DROP TABLE x; --"]
    recs = [LogRecord(ts=1.79e9 + i, source="s", host="h", severity=4, text=t) for i, t in enumerate(odd)]
    fields = [LineFields(time=1.79e9 + i + 0.125, time_text="Jun 30 22:16:32", host="h\"1", component="c",
                         pid=7, level="warning", template="say <*>", params=[(t[:20], None), ("2.5", 2.5, "v")])
              for i, t in enumerate(odd)]
    fields[1] = None
    with Store(tmp_path / "logs.db") as store:
        store.append(recs, [1, None, 1, 1, 1], fields)
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE logs SET pid = 'abc' WHERE id = 3")
        shipper = Shipper(fleet, store.path)
        assert shipper.ship_once() == 5
        shipper.stop()
    rows = ch.rows(f"SELECT box, id, text, time, line_host, pid, template, param_text, param_num, param_name"
                   f" FROM {fleet.database}.lines FINAL ORDER BY id")
    assert [r["text"] for r in rows] == odd
    assert rows[0]["time"] == 1.79e9 + 0.125 and rows[0]["line_host"] == 'h"1' and rows[0]["pid"] == 7
    assert rows[1]["template"] == "" and rows[1]["param_text"] == [] and rows[1]["line_host"] is None
    assert rows[2]["pid"] is None
    assert rows[0]["param_text"] == [odd[0][:20], "2.5"] and rows[0]["param_num"] == [None, 2.5]
    assert rows[0]["param_name"] == ["", "v"]


def store_text(i: int) -> str:
    return f"heater zone {i % 5} temperature {70 + (i % 23) * 0.5} C 温度 seq={i}"


def test_sending_again_is_harmless_after_final(fleet, ch, data, tmp_path):
    init_schema(fleet)
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 3_000)
        shipper = Shipper(fleet, store.path)
        while shipper.ship_once():
            pass
        shipper.cursor.line_id = 0             # as if every acknowledgement had been lost
        while shipper.ship_once():
            pass
        shipper.stop()
    raw, final, distinct = data.counts(ch, fleet.database)
    assert raw == 6_000 or raw >= 3_000        # a background merge may already have folded some
    assert (final, distinct) == (3_000, 3_000)


def test_a_shard_killed_and_restarted_mid_shipping_loses_and_doubles_nothing(cluster, fleet, ch, data, tmp_path):
    """Lines keep coming while shard 1 (the first URL: the shipper's own node) is killed -9 and restarted."""
    init_schema(fleet)
    n_total = 40_000
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 10_000)
        shipper = Shipper(fleet, store.path)
        shipper.backoff_min_s = 0.2
        shipper.start()
        writer = threading.Thread(target=lambda: [(data.fill(store, 1_000, k), time.sleep(0.02))
                                                  for k in range(10_000, n_total, 1_000)])
        writer.start()
        wait_for(lambda: shipper.figures()["shipped"] >= 4_000, what="the first batches")
        cluster.servers[0].kill()
        wait_for(lambda: shipper.figures()["failures"] >= 2, what="failures while shard 1 is down")
        down = shipper.figures()
        assert down["last_error"] and down["pending"] > 0 and down["backoff_s"] >= 0.2
        cluster.servers[0].start()
        writer.join()
        wait_for(lambda: shipper.figures()["pending"] == 0 and shipper.figures()["shipped"] >= n_total,
                 timeout_s=60, what="catching up after the restart")
        shipper.stop()
    raw, final, distinct = data.counts(ch, fleet.database)
    assert (final, distinct) == (n_total, n_total)
    ids = ch.rows(f"SELECT min(id) AS lo, max(id) AS hi FROM {fleet.database}.lines FINAL")[0]
    assert (ids["lo"], ids["hi"]) == (1, n_total)


def test_a_shipper_killed_and_restarted_resumes_after_its_cursor(cluster, fleet, ch, data, tmp_path):
    """`linegate fleet ship` as a process, killed -9 mid-shipping, then run again to the end."""
    init_schema(fleet)
    box = tmp_path / "box"
    with Store(box / "logs.db") as store:
        data.fill(store, 30_000)
    config = tmp_path / "fleet.toml"
    config.write_text(f"[fleet]\nurls = {json.dumps(fleet.urls)}\nbox_id = \"b2\"\ncluster = \"linegate\"\n"
                      f"database = \"{fleet.database}\"\nbatch_lines = 500\ninterval_s = 0.05\n")
    cmd = [sys.executable, "-m", "gateway.fleet.cli", "ship", "--config", str(config), "--data-dir", str(box)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cursor = box / "fleet_cursor.json"
    wait_for(lambda: cursor.exists() and json.loads(cursor.read_text())["line_id"] >= 5_000, what="progress")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    at_kill = json.loads(cursor.read_text())["line_id"]
    assert at_kill < 30_000
    out = subprocess.run(cmd + ["--once"], cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["pending"] == 0 and figures["cursor"] == 30_000
    raw, final, distinct = data.counts(ch, fleet.database, box="b2")
    assert (final, distinct) == (30_000, 30_000)
    assert 30_000 <= raw <= 30_500 + 500      # at most the batch in flight at the kill, sent twice


def test_unreachable_server_backs_off_and_keeps_figures(data, tmp_path):
    from gateway.fleet.local_cluster import free_port
    from gateway.fleet.settings import FleetSettings

    settings = FleetSettings(urls=[f"http://127.0.0.1:{free_port()}"], box_id="b1", backoff_max_s=1.0, timeout_s=2)
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 100)
        shipper = Shipper(settings, store.path)
        shipper.backoff_min_s = 0.05
        shipper.start()
        wait_for(lambda: shipper.figures()["failures"] >= 3, what="three failed passes")
        f = shipper.figures()
        shipper.stop()
    assert f["shipped"] == 0 and f["pending"] == 100 and f["oldest_unshipped_s"] > 0
    assert "no ClickHouse URL answered" in f["last_error"] and 0.1 <= f["backoff_s"] <= 1.0


def test_retention_cap_keeps_unshipped_lines_and_counts_those_it_loses(fleet, ch, data, tmp_path):
    init_schema(fleet)
    settings = fleet.model_copy(update={"max_unshipped_lines": 1_000})
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 3_000)
    shipper = Shipper(settings, data.store_path(tmp_path))
    assert shipper.keep_from(1_500) == 501         # 1,500 unshipped: the 500 oldest are past the cap
    assert shipper.keep_from(800) == 1             # under the cap: retention stops at the cursor
    shipper.cursor.line_id = 700
    assert shipper.keep_from(800) == 701           # shipped lines may go
    shipper.cursor.line_id = 0
    shipper.stop()
    # what the store's retention does past the cap: the 1,200 oldest deleted before they were shipped
    db = sqlite3.connect(data.store_path(tmp_path))
    db.execute("DELETE FROM params WHERE line_id <= 1200")
    db.execute("DELETE FROM logs WHERE id <= 1200")
    db.commit()
    db.close()
    shipper = Shipper(settings, data.store_path(tmp_path))
    while shipper.ship_once():
        pass
    f = shipper.figures()
    shipper.stop()
    assert (f["dropped_unshipped"], f["shipped"], f["pending"]) == (1_200, 1_800, 0)
    assert data.counts(ch, settings.database)[1:] == (1_800, 1_800)


def test_alerts_ship_and_an_open_one_is_updated(fleet, ch, data, tmp_path):
    init_schema(fleet)
    box = tmp_path / "box"
    with Store(box / "logs.db") as store:
        data.fill(store, 10)
    outbox = AlertOutbox(box / "alerts.db")
    base = {"kind": "severity", "severity": "error", "host": "line3/heater", "source": "demo", "template_id": 1,
            "template": "heater zone <*>", "lines": ["heater zone 1"], "line_ids": [1], "count": 1, "rule": None,
            "ts": 1.79e9, "explanation": None, "explanation_ms": None}
    outbox.save({**base, "id": 1, "explanation_status": "pending"}, "alert", deliver=False)
    outbox.save({**base, "id": 2, "explanation_status": "none"}, "alert", deliver=False)
    shipper = Shipper(fleet, box / "logs.db", box / "alerts.db")
    shipper.ship_once()
    assert shipper.cursor.open_alerts == [1]
    outbox.save({**base, "id": 1, "explanation_status": "done", "explanation": "zone 1 overheated"}, "update",
                deliver=False)
    time.sleep(0.002)                               # a later version
    shipper.ship_once()
    assert shipper.cursor.open_alerts == [] and shipper.figures()["alerts_shipped"] == 3
    shipper.stop()
    outbox.close()
    # (ClickHouse 18.16 needs the key and version columns named in a Distributed FINAL ... ORDER BY)
    rows = ch.rows(f"SELECT box, id, version, explanation_status, explanation FROM {fleet.database}.alerts FINAL"
                   " ORDER BY id")
    assert [(r["id"], r["explanation_status"], r["explanation"]) for r in rows] == [
        (1, "done", "zone 1 overheated"), (2, "none", None)]


def test_a_cursor_of_another_box_is_refused(fleet, data, tmp_path):
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 10)
        Shipper(fleet, store.path).cursor.save()
        with pytest.raises(ValueError, match="cursor of box 'b1'"):
            Shipper(fleet.model_copy(update={"box_id": "b9"}), store.path)


def test_a_line_the_server_refuses_is_skipped_and_counted_not_a_stop(fleet, ch, data, tmp_path):
    init_schema(fleet)
    with Store(data.store_path(tmp_path)) as store:
        data.fill(store, 5_000)
    with sqlite3.connect(data.store_path(tmp_path)) as db:       # a value ClickHouse can not read as Int64
        db.execute("UPDATE logs SET template_id = 'not a number' WHERE id = 1234")
    shipper = Shipper(fleet, data.store_path(tmp_path))
    while shipper.ship_once() or shipper.figures()["pending"]:
        pass
    f = shipper.figures()
    shipper.stop()
    assert (f["rejected"], f["shipped"], f["pending"]) == (1, 4_999, 0)
    assert "line 1234 refused" in f["last_error"]
    assert data.counts(ch, fleet.database)[1:] == (4_999, 4_999)
