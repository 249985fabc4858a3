"""MQTT in, acknowledged after the commit: messages/s from a burst published at QoS 1 to all of
them stored (MqttSource -> Store, fsynced group commits, PUBACK after each), against the peer in
the same run: a bare paho subscriber that acknowledges on receipt and stores nothing (the
broker -> client path alone, the ceiling). A real mosquitto with its default in-flight window.

Last line of output: one JSON object.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.ingest.mqtt import MqttSource            # noqa: E402
from gateway.ingest.record import SourceCounters       # noqa: E402
from gateway.pipeline.store import Store               # noqa: E402
from tests import mqtt_broker as broker                 # noqa: E402  (the tests' mosquitto, imported as the tests do)
from tools.bench.harness import cpu_here, print_result  # noqa: E402


def burst(port: int, n: int, tag: str) -> float:
    """Publish n QoS 1 messages as fast as paho takes them; returns the start time."""
    import paho.mqtt.client as mqtt
    pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-pub-{tag}")
    pub.max_inflight_messages_set(1000)
    pub.max_queued_messages_set(0)
    pub.connect("127.0.0.1", port)
    pub.loop_start()
    t0 = time.monotonic()
    infos = [pub.publish(f"factory/{tag}/logs", f"bench {tag} line {i} cycle complete", qos=1) for i in range(n)]
    for info in infos:
        info.wait_for_publish(120)
    pub.loop_stop()
    pub.disconnect()
    return t0


def run_source(port: int, tmp: Path, n: int) -> float:
    with Store(tmp / "s.db") as store:
        src = MqttSource(lambda r, k: store.append(r, keys=k), SourceCounters(), port=port,
                         topics=["factory/src/logs"], client_id="bench-src")
        src.start()
        broker.wait_for(lambda: src.connected, 10, "source connect")
        time.sleep(0.3)
        t0 = burst(port, n, "src")
        broker.wait_for(lambda: store.count() >= n, 600, "all stored")
        dt = time.monotonic() - t0
        src.stop()
        assert store.count() == n
    return dt


def run_peer(port: int, n: int) -> float:
    import paho.mqtt.client as mqtt
    got = [0]
    sub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bench-peer")
    sub.on_message = lambda c, u, m: got.__setitem__(0, got[0] + 1)
    sub.on_connect = lambda c, u, f, rc, p: c.subscribe("factory/peer/logs", qos=1)
    sub.connect("127.0.0.1", port)
    sub.loop_start()
    time.sleep(0.5)
    t0 = burst(port, n, "peer")
    broker.wait_for(lambda: got[0] >= n, 600, "all received")
    dt = time.monotonic() - t0
    sub.loop_stop()
    sub.disconnect()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=20_000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-mqtt-"))
    with broker.mosquitto(tmp, extra="max_queued_messages 1000000\n") as port:
        peer_s = run_peer(port, args.messages)
        src_s = run_source(port, tmp, args.messages)
    print_result({"bench": "mqtt_in", "cpu": cpu_here()["model_name"], "messages": args.messages,
                  "stored_msgs_per_s": round(args.messages / src_s), "peer_received_msgs_per_s":
                  round(args.messages / peer_s), "ratio_to_peer": round(peer_s / src_s, 3)})


if __name__ == "__main__":
    main()
