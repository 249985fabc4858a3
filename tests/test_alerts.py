"""Alert bus: publish at once, explanation as an update, subscribers (thread + asyncio), MQTT."""

from __future__ import annotations

import asyncio
import json

from gateway.pipeline.alerts import DONE, Alert, AlertBus, MqttPublisher, topic_for

from tests import mqtt_broker as broker
from tests.helpers import free_port


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


class _Subscriber:
    """A persistent-session QoS 1 subscriber: it gets what was published while it (or the broker,
    restarted with persistence) was away."""

    def __init__(self, port: int, topic: str = "linegate/alerts/#") -> None:
        import paho.mqtt.client as mqtt
        self.messages: list[dict] = []
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="t-alert-sub", clean_session=False)
        self.client.on_message = lambda c, u, m: self.messages.append(json.loads(m.payload))
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe(topic, qos=1)
        self.client.reconnect_delay_set(0.1, 0.5)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def test_alerts_raised_while_the_broker_is_down_are_delivered_after_it_returns(tmp_path):
    from gateway.pipeline.outbox import AlertOutbox
    port = free_port()
    conf = f"persistence true\npersistence_location {tmp_path}/\n"
    with broker.mosquitto(tmp_path, port=port, extra=conf):
        sub = _Subscriber(port)
        broker.wait_for(lambda: sub.client.is_connected(), 10, "subscriber")
        outbox = AlertOutbox(tmp_path / "alerts.db")
        pub = MqttPublisher("127.0.0.1", port, outbox=outbox)
        bus = AlertBus(pub, outbox)
        broker.wait_for(lambda: pub._client.is_connected(), 10, "publisher connect")
        bus.publish(_alert(template="before the outage"))
        broker.wait_for(lambda: outbox.counts()["outbox_delivered"] == 1, 10, "first PUBACK")
    # the broker is down (it saved its sessions): alerts keep coming
    for i in range(5):
        bus.publish(_alert(template=f"during the outage {i}"))
    bus.update(1, explanation="explained while down", status=DONE)
    assert outbox.counts()["outbox_pending"] == 6
    with broker.mosquitto(tmp_path, port=port, extra=conf):
        broker.wait_for(lambda: outbox.counts()["outbox_pending"] == 0, 60, "delivery after reconnect")
        broker.wait_for(lambda: len({(m["id"], m["event"]) for m in sub.messages}) == 7, 20, "all at the subscriber")
        sub.close()
        bus.close()
    got = {(m["event"], m["template"]) for m in sub.messages}
    assert got == {("alert", "before the outage"), ("update", "before the outage")} | {
        ("alert", f"during the outage {i}") for i in range(5)}


def test_alert_history_and_undelivered_alerts_survive_a_restart(tmp_path):
    from gateway.pipeline.outbox import AlertOutbox
    port = free_port()              # no broker yet: the first run cannot deliver
    outbox = AlertOutbox(tmp_path / "alerts.db")
    bus = AlertBus(MqttPublisher("127.0.0.1", port, outbox=outbox), outbox)
    a = bus.publish(_alert(template="first run"))
    bus.update(a.id, explanation="why it jammed", status=DONE, explanation_ms=5.0)
    bus.publish(_alert(template="first run, second"))
    bus.close()                            # the restart

    with broker.mosquitto(tmp_path, port=port) as port:
        col = broker.Collector(port, "linegate/alerts/#")
        outbox = AlertOutbox(tmp_path / "alerts.db")
        bus = AlertBus(MqttPublisher("127.0.0.1", port, outbox=outbox), outbox)
        try:
            assert [x["template"] for x in bus.recent(10)] == ["first run, second", "first run"]
            assert bus.get(1)["explanation"] == "why it jammed" and bus.get(1)["explanation_status"] == "done"
            c = bus.publish(_alert(template="second run"))
            assert c.id == 3                                      # ids continue
            bus.update(2, explanation="late", status=DONE)         # an alert from before the restart
            broker.wait_for(lambda: outbox.counts()["outbox_pending"] == 0, 20, "the backlog delivered")
            broker.wait_for(lambda: len(col.messages) >= 5, 10, "five messages")
        finally:
            col.close()
            bus.close()
    events = [(json.loads(p)["event"], json.loads(p)["id"]) for _, p in col.messages]
    assert sorted(events) == sorted([("alert", 1), ("update", 1), ("alert", 2), ("alert", 3), ("update", 2)])
