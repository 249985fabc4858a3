"""MQTT subscription source (paho-mqtt): each message is one log line, or a JSON object shaped
like an NDJSON line ({"text", "host", "severity", "ts"}); the host defaults to the topic.

Knows nothing about the store: records go through a Batcher to the sink.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

from gateway.ingest.batch import Batcher
from gateway.ingest.ndjson import parse_ndjson
from gateway.ingest.record import MAX_HOST_CHARS, LogRecord, SourceCounters, clean_field

log = logging.getLogger(__name__)

SOURCE = "mqtt"
MQTT_QOS = 1


class MqttSource:
    def __init__(self, sink: Callable[[list[LogRecord]], list[int]], counters: SourceCounters, *,
                 host: str = "127.0.0.1", port: int = 1883, topics: Sequence[str] = ("factory/+/logs",),
                 username: str | None = None, password: str | None = None,
                 client_id: str = "linegate-ingest") -> None:
        import paho.mqtt.client as mqtt   # only when an MQTT source is configured (network client, threads)

        self.counters = counters
        self.batcher = Batcher(sink, counters, SOURCE)
        self.topics = list(topics)
        self.host, self.port = host, port
        self.connected = False
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        if username:
            self._client.username_pw_set(username, password)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_message = self._on_message
        self._client.reconnect_delay_set(1, 30)

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            log.warning("mqtt source: connect to %s:%d refused: %s", self.host, self.port, reason_code)
            return
        for t in self.topics:           # (re)subscribe on every connect
            client.subscribe(t, qos=MQTT_QOS)
        self.connected = True

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self.connected = False

    def _on_message(self, client, userdata, msg) -> None:
        problems: dict[str, int] = {}
        try:
            records, _ = parse_ndjson(msg.payload, source=SOURCE, problems=problems)
        except ValueError:   # more lines than one body may hold: counted, the source lives on
            self.counters.add(SOURCE, "oversized_messages")
            return
        if not msg.payload.lstrip().startswith((b"{", b"[", b'"')):
            problems.pop("not_json", None)   # a plain-text payload is a normal MQTT log line
        self.counters.add_problems(SOURCE, problems)
        for rec in records:
            if not rec.host:
                rec.host = clean_field(msg.topic, MAX_HOST_CHARS)
            rec.source = SOURCE
            self.batcher.put(rec)

    def start(self) -> None:
        self.batcher.start()
        self._client.connect_async(self.host, self.port, keepalive=30)
        self._client.loop_start()

    def stop(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()
        self.batcher.stop()
