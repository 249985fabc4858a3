"""The appliance end to end: demo jam -> alert over a real MQTT broker; kill -9 while ingesting
loses no acknowledged line and the file tail resumes at its offset; settings refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from gateway.appliance import Appliance
from gateway.ingest.record import LogRecord
from gateway.settings import SettingsError, load

from tests import mqtt_broker as broker
from tests.helpers import free_port

ALERT_BUDGET_S = 5.0       # demo cycle 0.2 s: the jam is in the first cycle


def _no_engine(tmp_path, **kw):
    base = {"data_dir": tmp_path / "data", "engine": {"enabled": False}}
    return load(None, **(base | kw))


def test_demo_jam_alert_reaches_mqtt(tmp_path):
    with broker.mosquitto(tmp_path) as port:
        sub = broker.Collector(port, "linegate/alerts/#")
        s = _no_engine(tmp_path, ingest={"demo": {"cycle_s": 0.2, "first_fault_s": 0, "seed": 1}},
                       alerts={"mqtt_publish": True, "mqtt_port": port})
        app = Appliance(s)
        try:
            t0 = time.monotonic()
            app.start()
            assert app.ready
            broker.wait_for(lambda: any(b"JAM detected" in p for _, p in sub.messages), ALERT_BUDGET_S, "jam alert")
            elapsed = time.monotonic() - t0
            stats = app.stats()
        finally:
            app.stop()
            sub.close()
    jam = next(json.loads(p) for _, p in sub.messages if b"JAM detected" in p)
    assert elapsed < ALERT_BUDGET_S
    assert jam["event"] == "alert" and jam["severity"] == "error" and jam["kind"] == "severity"
    assert "JAM detected at infeed photoeye PE-<NUM>" in jam["template"]
    assert any("JAM detected" in line for line in jam["lines"]) and jam["line_ids"]
    assert jam["host"].startswith("line3/")
    assert stats["ingest"]["lines"] > 0 and stats["store"]["lines_written"] == stats["ingest"]["lines"]


def test_ingest_stores_classifies_and_searches(tmp_path):
    with Appliance(_no_engine(tmp_path, ingest={"demo": {"enabled": False}},
                              triage={"baseline_lines": 0, "baseline_s": 0})) as app:   # no baseline to learn
        ids = app.ingest([LogRecord(1.0, "t", "line3/plc", 3, "ERROR pump 3 tripped"),
                          LogRecord(2.0, "t", "line3/plc", 6, "INFO conveyor pump 4 started")])
        rows = app.store.search("pump")
        assert [r["id"] for r in rows] == ids[::-1]
        assert all(r["template_id"] is not None for r in rows)
        assert [a["kind"] for a in app.alerts.recent()] == ["new_template", "severity"]
        from prometheus_client import generate_latest
        text = generate_latest(app.registry).decode()
        assert "linegate_ingest_lines_total 2.0" in text


def test_lines_judged_new_kinds_reach_the_reading_feed_as_new(tmp_path):
    """Kinds new to a source, though another source made their templates, alert once as a burst (the
    rest are grouped for a later alert), yet each goes to the reading feed as new at once (the KV cache
    keeps them); the ERROR line as important."""
    fed: list[tuple[str, bool, bool]] = []

    class Feed:
        def add(self, ts, host, template_id, text, important=False, **kw):
            fed.append((text, important, kw["new"]))

    class Engine:
        ready = False             # no explanations

        def notify(self):
            pass

    kinds = [f"{w}start {w}middle {w}end" for w in ("alpha", "bravo", "charlie")]
    with Appliance(_no_engine(tmp_path, ingest={"demo": {"enabled": False}},
                              triage={"baseline_lines": 4, "baseline_s": 0})) as app:
        app.ingest([LogRecord(float(i), "t", "line3/plc", 6, f"cycle {i} complete") for i in range(4)])   # t learned
        app.ingest([LogRecord(10.0 + i, "b", "line3/b", 6, k) for i, k in enumerate(kinds)])   # b still learning
        app.feed, app.engine_thread = Feed(), Engine()
        try:
            app.ingest([LogRecord(100.0 + i / 10, "t", "line3/plc", 6, k) for i, k in enumerate(kinds)]
                       + [LogRecord(101.0, "t", "line3/plc", 3, "ERROR pump tripped")])
        finally:
            app.feed = app.engine_thread = None
        assert [a["kind"] for a in app.alerts.recent()].count("new_template") == 1   # the first; two held
        assert fed == [(k, i == 0, True) for i, k in enumerate(kinds)] + [("ERROR pump tripped", True, True)]


def test_settings_refuse_unsafe_values(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[store]\nmax_bytes = 10\n')
    with pytest.raises(SettingsError, match=r"bad.toml.*store.max_bytes"):
        load(bad)
    with pytest.raises(SettingsError, match="server"):
        load(None, server={"host": "0.0.0.0", "require_key": False})
    with pytest.raises(SettingsError, match="data_dir = '/'"):
        load(None, data_dir="/")
    with pytest.raises(SettingsError, match="does not exist"):
        load(tmp_path / "none.toml")


CHILD = textwrap.dedent("""
    import sys, time
    from gateway.appliance import Appliance
    from gateway.ingest.record import LogRecord
    from gateway.settings import load
    data, tail = sys.argv[1], sys.argv[2]
    s = load(None, data_dir=data, engine={"enabled": False}, ingest={"demo": {"enabled": False},
             "tail": {"files": [tail], "poll_s": 0.01}})
    app = Appliance(s).start()
    print("STARTED", flush=True)
    i = 0
    while True:
        app.ingest([LogRecord(time.time(), "crash", "h", 6, f"ack-{i}-{j}") for j in range(20)])
        print(f"ACK {i}", flush=True)      # printed only after the fsynced commit returned
        i += 1
""")


def test_kill_9_loses_no_acknowledged_line_and_tail_resumes(tmp_path):
    data, tail = tmp_path / "data", tmp_path / "line.log"
    tail.write_text("")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data), str(tail)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    acked = -1
    written = 0
    try:
        assert proc.stdout.readline().strip() == "STARTED"
        with open(tail, "a") as f:
            while acked < 150:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                acked = int(line.split()[1])
                f.write(f"tail-{written}\n")
                f.flush()
                written += 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    s = load(None, data_dir=data, engine={"enabled": False},
             ingest={"demo": {"enabled": False}, "tail": {"files": [tail], "poll_s": 0.01}})
    state = json.loads(next((data / "tail").glob("tail-*.json")).read_text())
    assert 0 < state["offset"] <= tail.stat().st_size
    app = Appliance(s)
    app.start()
    try:
        tail_src = app.sources[0]
        broker.wait_for(lambda: tail_src.offset == tail.stat().st_size, 10, "tail to catch up")
        store = app.store
        for i in range(acked + 1):               # every acknowledged batch is there, whole
            assert len(store.search(f"ack-{i}-*", source="crash", limit=100)) >= 20, i
        texts = [r["text"] for r in store.search(source="tail", limit=1000)]
        for k in range(written):
            assert f"tail-{k}" in texts, k      # nothing lost ...
        assert len(texts) - written <= 5 * 2    # ... and at most the unacknowledged poll re-read
    finally:
        app.stop()


@pytest.mark.models
def test_demo_jam_alert_then_explanation_with_smollm(tmp_path, smollm_path):
    """The alert goes out before any model work; the explanation follows as an update (SmolLM2)."""
    with broker.mosquitto(tmp_path) as port:
        sub = broker.Collector(port, "linegate/alerts/#")
        s = load(None, data_dir=tmp_path / "data",
                 ingest={"demo": {"cycle_s": 1.0, "first_fault_s": 0, "seed": 1, "overtemp_every_s": None,
                                  "estop_every_s": None}},
                 engine={"model": str(smollm_path), "n_ring": 128, "n_scratch": 256, "n_threads": 2,
                         "queue_size": 4},
                 alerts={"mqtt_publish": True, "mqtt_port": port, "alert_budget_ms": 600_000,
                         "explanation_max_tokens": 8})
        app = Appliance(s)
        try:
            app.start()
            broker.wait_for(lambda: app.ready or app.engine_thread.error, 300, "model loaded")
            assert app.engine_thread.error is None, app.engine_thread.error
            broker.wait_for(lambda: any(json.loads(p).get("event") == "update" for _, p in sub.messages),
                            600, "explanation update")
        finally:
            app.stop()
            sub.close()
    msgs = [json.loads(p) for _, p in sub.messages]
    first = next(m for m in msgs if m["event"] == "alert" and m["explanation_status"] == "pending")
    upd = next(m for m in msgs if m["event"] == "update")
    assert msgs.index(first) < msgs.index(upd)            # published before it was explained
    assert upd["id"] in {m["id"] for m in msgs if m["event"] == "alert"}
    assert upd["explanation_status"] in ("done", "missed") and upd["explanation"].strip()


def test_batch_queues_and_udp_drops_are_exported(tmp_path):
    """The syslog and MQTT batch queues' depth and drops, and the kernel's UDP drops, are in
    stats() (served as /api/stats) and in the Prometheus registry (served as /metrics)."""
    from prometheus_client import generate_latest
    port = free_port()
    with Appliance(_no_engine(tmp_path, ingest={"demo": {"enabled": False}, "syslog": {"udp_port": port}})) as app:
        app.sources[0].counters.add("syslog", "udp_dropped_kernel", 3)
        app.sources[0].batcher.dropped = 7
        q = app.stats()["ingest"]["queues"]
        text = generate_latest(app.registry).decode()
    assert q == {"syslog": {"depth": 0, "max": 100_000, "dropped": 7}}
    assert 'linegate_ingest_queue_depth{source="syslog"} 0.0' in text
    assert 'linegate_ingest_queue_dropped_total{source="syslog"} 7.0' in text
    assert 'linegate_source_events_total{kind="udp_dropped_kernel",source="syslog"} 3.0' in text


def test_a_held_new_kind_alert_goes_out_on_a_quiet_line(tmp_path, monkeypatch):
    import gateway.appliance as ap
    from gateway.appliance import Appliance
    from gateway.ingest.record import LogRecord
    from gateway.settings import Settings
    monkeypatch.setattr(ap, "NEW_KINDS_RELEASE_S", 0.05)
    s = Settings(data_dir=tmp_path, engine={"enabled": False}, ingest={"demo": {"enabled": False}},
                 triage={"baseline_lines": 3, "baseline_s": 0})
    a = Appliance(s).start()
    try:
        t0 = time.time() - 120                      # the group's window (60 s of record time) is over
        a.ingest([LogRecord.make(f"valve {i} opened", source="p", host="h", ts=t0 + i) for i in range(3)])
        a.ingest([LogRecord.make("pump 7 seized", source="p", host="h", ts=t0 + 10),
                  LogRecord.make("belt 2 torn apart", source="p", host="h", ts=t0 + 11)])
        deadline = time.time() + 10
        new = lambda: [x for x in a.alerts.recent() if x["kind"] == "new_template"]
        assert len(new()) == 1                      # the first new kind at once, the next one held (grouped)
        while time.time() < deadline and len(new()) < 2:
            time.sleep(0.05)
        assert len(new()) == 2                      # released with no further line
    finally:
        a.stop()


def test_the_model_is_asked_once_for_a_layout_and_it_is_kept_when_it_parses(tmp_path):
    from types import SimpleNamespace

    from gateway.appliance import Appliance
    from gateway.ingest.record import LogRecord
    from gateway.settings import Settings
    s = Settings(data_dir=tmp_path, engine={"enabled": False}, ingest={"demo": {"enabled": False}},
                 alerts={"explain": []})
    a = Appliance(s).start()
    asked = []

    def submit_chat(messages, **kw):
        asked.append(messages[0]["content"])
        return SimpleNamespace(result=lambda timeout: {"text": "The layout is:\n`{host} | {level} | {message}`"})

    a.engine_thread = SimpleNamespace(ready=True, error=None, submit_chat=submit_chat)
    try:
        units = ["north-press", "south-press", "east-press"]
        recs = [LogRecord.make(f"{units[i % 3]} | WARN | gripper slip {i} mm", source="odd", host="gw", ts=1e9 + i)
                for i in range(60)]
        a.ingest(recs)
        assert a.propose_layouts() == 1 and "north-press | WARN | gripper slip 0 mm" in asked[0]
        assert a.propose_layouts() == 0 and len(asked) == 1          # once per source
        (line_id,) = a.ingest([LogRecord.make("east-press | ERROR | valve stuck", source="odd", host="gw", ts=2e9)])
        f = a.store.fields(line_id)
        assert (f["line_host"], f["level"]) == ("east-press", "error")
    finally:
        a.engine_thread = None
        a.stop()
