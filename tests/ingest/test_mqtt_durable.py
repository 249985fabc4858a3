"""MQTT in, at least once in and exactly once in the store, against a real mosquitto: a kill -9 of
the appliance mid-stream loses nothing; a message stored but not acknowledged is redelivered by the
broker and not stored twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from gateway.ingest.mqtt import MqttSource
from gateway.ingest.record import SourceCounters
from gateway.pipeline.store import Store

from tests import mqtt_broker as broker

# mosquitto queues at most 1000 messages for an offline session by default; the test publishes
# more than that while the appliance is down, as a line would.
BROKER_CONF = "max_queued_messages 100000\n"
N_MESSAGES = 2_000
KILL_AFTER = 600
RATE_PER_S = 400


def _publisher(port: int):
    import paho.mqtt.client as mqtt
    pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="t-publisher")
    pub.max_inflight_messages_set(1000)
    pub.max_queued_messages_set(0)
    pub.connect("127.0.0.1", port)
    pub.loop_start()
    return pub


CHILD = textwrap.dedent("""
    import sys, time
    from gateway.appliance import Appliance
    from gateway.settings import load
    data, port = sys.argv[1], int(sys.argv[2])
    s = load(None, data_dir=data, engine={"enabled": False}, ingest={"demo": {"enabled": False},
             "mqtt": {"enabled": True, "port": port, "topics": ["factory/+/logs"], "client_id": "t-appliance"}})
    app = Appliance(s).start()
    src = app.sources[0]
    while not src.connected:
        time.sleep(0.01)
    time.sleep(0.3)                      # the subscription is in place
    print("STARTED", flush=True)
    while True:
        time.sleep(1)
""")


def _start_child(data: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data), str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() == "STARTED", proc.stderr.read() if proc.poll() is not None else line
    return proc


def _stop(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        proc.wait(20)
    proc.stdout.close()
    proc.stderr.close()


def test_kill_9_mid_stream_loses_no_message_and_stores_each_once(tmp_path):
    data = tmp_path / "data"
    with broker.mosquitto(tmp_path, extra=BROKER_CONF) as port:
        child = _start_child(data, port)
        pub = _publisher(port)
        infos = []
        try:
            t0 = time.monotonic()
            for i in range(N_MESSAGES):
                infos.append(pub.publish(f"factory/line{i % 3}/logs", f"msg-{i} cycle done", qos=1))
                if i == KILL_AFTER:
                    _stop(child)                  # kill -9 while messages stream in
                time.sleep(max(0.0, t0 + (i + 1) / RATE_PER_S - time.monotonic()))
            for info in infos:
                info.wait_for_publish(20)         # the broker has every message (PUBACK to the publisher)
            child = _start_child(data, port)      # restart: the session's backlog is delivered
            with Store(data / "logs.db") as store:
                broker.wait_for(lambda: store.count() >= N_MESSAGES, 60, "every message stored")
                time.sleep(0.5)                   # anything stored twice would show by now
                texts = [r["text"] for r in store.search(source="mqtt", limit=1000)]
                rows = store.count()
        finally:
            _stop(child, signal.SIGTERM)
            pub.loop_stop()
            pub.disconnect()
    with Store(data / "logs.db") as store:
        texts = []
        after = 0
        while True:
            page = store.search(after_id=after, limit=1000)
            if not page:
                break
            texts += [r["text"] for r in page]
            after = page[-1]["id"]
    assert rows == N_MESSAGES
    assert sorted(texts) == sorted(f"msg-{i} cycle done" for i in range(N_MESSAGES))


def test_stored_but_unacknowledged_message_is_redelivered_and_not_stored_twice(tmp_path):
    # the broker stops sending once max_inflight_messages (default 20) are unacknowledged
    conf = BROKER_CONF + "max_inflight_messages 100\n"
    with broker.mosquitto(tmp_path, extra=conf) as port, Store(tmp_path / "s.db") as store:
        def sink(records, keys):
            return store.append(records, keys=keys)

        def source():
            src = MqttSource(sink, SourceCounters(), port=port, topics=["factory/+/logs"], client_id="t-dedupe")
            src.start()
            broker.wait_for(lambda: src.connected, 10, "connect")
            time.sleep(0.2)
            return src

        first = source()
        first._client.ack = lambda mid, qos: None      # the crash window: committed, PUBACK never sent
        pub = _publisher(port)
        for i in range(50):
            pub.publish("factory/line1/logs", f"once-{i}", qos=1).wait_for_publish(5)
        broker.wait_for(lambda: store.count() == 50, 10, "50 stored")
        first._client.loop_stop()
        first._client.socket().close()                  # gone without a word, as after kill -9
        first.batcher.stop()

        second = source()                               # same session: the broker redelivers all 50
        broker.wait_for(lambda: second.counters.get("mqtt", "redelivered") == 50, 10, "redelivery")
        second.batcher.flush(5)
        broker.wait_for(lambda: store.stats()["repeats_skipped"] == 50, 10, "repeats recognised")
        second.stop()
        assert store.count() == 50
        third = source()                                # acknowledged now: nothing comes again
        pub.publish("factory/line1/logs", "after", qos=1).wait_for_publish(5)
        broker.wait_for(lambda: store.count() == 51, 10, "the new message")
        third.stop()
        pub.loop_stop()
        pub.disconnect()
        assert third.counters.get("mqtt", "redelivered") == 0
        assert sorted(r["text"] for r in store.search(limit=100)) == sorted([f"once-{i}" for i in range(50)] + ["after"])
