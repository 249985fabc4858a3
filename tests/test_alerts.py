"""Alert bus: publish at once, explanation as an update, subscribers (thread + asyncio), MQTT."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

from gateway.pipeline.alerts import DONE, Alert, AlertBus, MqttPublisher, topic_for

_spec = importlib.util.spec_from_file_location("mqtt_broker", Path(__file__).parent / "mqtt_broker.py")
broker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(broker)


def _alert(**kw):
    base = dict(kind="severity", severity="error", host="line3/labeler", source="demo", template_id=4,
                template="JAM detected at PE-<NUM>", lines=["JAM detected at PE-12"], line_ids=[17])
    return Alert(**(base | kw))


def test_publish_update_recent_and_thread_subscriber():
    bus = AlertBus()
    with bus.subscribe() as sub:
        a = bus.publish(_alert())
        b = bus.publish(_alert(host="line3/plc"))
        assert (a.id, b.id) == (1, 2)
        assert [x["id"] for x in bus.recent(10)] == [2, 1]
        bus.update(1, explanation="The labeler jammed.", status=DONE, explanation_ms=12.0)
        evs = [sub.get(1) for _ in range(3)]
    assert [(e["event"], e["alert"]["id"]) for e in evs] == [("alert", 1), ("alert", 2), ("update", 1)]
    assert evs[2]["alert"]["explanation"] == "The labeler jammed." and bus.get(1)["explanation_status"] == "done"
    assert bus.stats()["subscribers"] == 0


def test_async_subscriber():
    bus = AlertBus()

    async def main():
        sub = bus.subscribe(loop=asyncio.get_running_loop())
        await asyncio.to_thread(bus.publish, _alert())
        ev = await asyncio.wait_for(sub.aget(), 5)
        sub.close()
        return ev

    ev = asyncio.run(main())
    assert ev["event"] == "alert" and ev["alert"]["template"] == "JAM detected at PE-<NUM>"


def test_topic_is_sanitised():
    assert topic_for("linegate/alerts", "line3/plc") == "linegate/alerts/line3/plc"
    assert topic_for("linegate/alerts", "+/#//x") == "linegate/alerts/_/_/x"
    assert topic_for("linegate/alerts", "") == "linegate/alerts/unknown"


def test_mqtt_publication_through_a_real_broker(tmp_path):
    with broker.mosquitto(tmp_path) as port:
        sub = broker.Collector(port, "linegate/alerts/#")
        pub = MqttPublisher("127.0.0.1", port)
        try:
            broker.wait_for(lambda: pub._client.is_connected(), 10, "publisher connect")
            bus = AlertBus(pub)
            a = bus.publish(_alert())
            bus.update(a.id, explanation="checked", status=DONE)
            broker.wait_for(lambda: len(sub.messages) >= 2, 10, "two MQTT messages")
        finally:
            sub.close()
            bus.close()
    (t1, p1), (t2, p2) = sub.messages[:2]
    assert t1 == t2 == "linegate/alerts/line3/labeler"
    m1, m2 = json.loads(p1), json.loads(p2)
    assert m1["event"] == "alert" and m1["template"] == "JAM detected at PE-<NUM>" and m1["lines"] == ["JAM detected at PE-12"]
    assert m2["event"] == "update" and m2["explanation"] == "checked"
