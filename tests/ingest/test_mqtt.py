"""MQTT source against a real mosquitto broker started by the test."""

from __future__ import annotations

import json

import pytest

from gateway.ingest.mqtt import MqttSource
from gateway.ingest.record import SourceCounters

from tests import mqtt_broker as broker


@pytest.fixture
def port(tmp_path):
    with broker.mosquitto(tmp_path) as p:
        yield p


def test_mqtt_source_receives_text_json_and_garbage(port):
    import paho.mqtt.client as mqtt

    got = []
    counters = SourceCounters()
    src = MqttSource(lambda rs, keys: (got.extend(rs), list(range(len(rs))))[1], counters, port=port,
                     topics=["factory/+/logs"], client_id="t-ingest")
    src.start()
    try:
        broker.wait_for(lambda: src.connected, 10, "source connect")
        pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        pub.connect("127.0.0.1", port)
        pub.loop_start()
        pub.publish("factory/line3/logs", b"WARNING filler heater high", qos=1).wait_for_publish(5)
        pub.publish("factory/line3/logs", json.dumps({"text": "jam at labeler", "host": "line3/labeler",
                                                      "severity": "error"}), qos=1).wait_for_publish(5)
        pub.publish("factory/line4/logs", b"\xff\xfe\x00binary", qos=1).wait_for_publish(5)
        pub.publish("other/topic", b"not subscribed", qos=1).wait_for_publish(5)
        broker.wait_for(lambda: len(got) >= 3, 10, "three records")
        pub.loop_stop()
        pub.disconnect()
    finally:
        src.stop()
    by_text = {r.text: r for r in got}
    assert len(got) == 3
    assert by_text["WARNING filler heater high"].host == "factory/line3/logs"
    assert by_text["WARNING filler heater high"].severity == 4
    assert by_text["jam at labeler"].host == "line3/labeler" and by_text["jam at labeler"].severity == 3
    garbage = [r for r in got if r.host == "factory/line4/logs"][0]
    assert "binary" in garbage.text and "\ufffd" in garbage.text
    snap = counters.snapshot()["mqtt"]
    assert snap["lines"] == 3 and snap["invalid_utf8"] == 1 and snap["binary"] == 1
