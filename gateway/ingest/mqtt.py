"""MQTT subscription source (paho-mqtt): each message is one log line, or a JSON object shaped
like an NDJSON line ({"text", "host", "severity", "ts"}); the host defaults to the topic.

Delivery is at least once, storage exactly once: a persistent session (clean_session=False, a
fixed client id) at QoS 1, so the broker keeps what is published while the appliance is down;
a message is acknowledged (PUBACK) only after the store committed its lines; a redelivery (DUP
flag) of a message already stored is recognised by its identity and not stored twice.

Knows nothing about the store: records go through a Batcher to the sink.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Callable, Sequence

from gateway.ingest.batch import Batcher
from gateway.ingest.ndjson import parse_ndjson
from gateway.ingest.record import MAX_HOST_CHARS, LogRecord, SourceCounters, clean_field

log = logging.getLogger(__name__)

SOURCE = "mqtt"
MQTT_QOS = 1


def message_key(topic: str, mid: int, payload: bytes) -> str:
    """A message's identity while it may be redelivered: its topic, packet id and a payload digest
    (a packet id alone is reused after 65,535 messages)."""
    return f"mqtt:{topic}:{mid}:{hashlib.blake2b(payload, digest_size=8).hexdigest()}"


class _Settle:
    """Acknowledges one message once all its records are settled, and only if all were stored."""

    def __init__(self, ack: Callable[[], None], n: int) -> None:
        self.ack, self.left, self.ok = ack, n, True
        self.lock = threading.Lock()

    def __call__(self, ok: bool) -> None:
        with self.lock:
            self.left -= 1
            self.ok &= ok
            fire = self.left == 0 and self.ok
        if fire:
            self.ack()


class MqttSource:
    def __init__(self, sink: Callable[..., list[int]], counters: SourceCounters, *,
                 host: str = "127.0.0.1", port: int = 1883, topics: Sequence[str] = ("factory/+/logs",),
                 username: str | None = None, password: str | None = None,
                 client_id: str = "linegate-ingest") -> None:
        """sink(records, keys) -> ids (Appliance.ingest). `client_id` names the broker session: it
        must be stable across restarts and unique per appliance."""
        import paho.mqtt.client as mqtt   # only when an MQTT source is configured (network client, threads)

        self.counters = counters
        self.batcher = Batcher(sink, counters, SOURCE, keyed=True)
        self.topics = list(topics)
        self.host, self.port = host, port
        self.connected = False
        self._stopping = False
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False,
                                   protocol=mqtt.MQTTv311, manual_ack=True)
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
        if self._stopping:
            return
        ack = (lambda: client.ack(msg.mid, msg.qos)) if msg.qos else (lambda: None)
        problems: dict[str, int] = {}
        try:
            records, _ = parse_ndjson(msg.payload, source=SOURCE, problems=problems)
        except ValueError:   # more lines than one body may hold: counted and acknowledged (never storable)
            self.counters.add(SOURCE, "oversized_messages")
            ack()
            return
        if not msg.payload.lstrip().startswith((b"{", b"[", b'"')):
            problems.pop("not_json", None)   # a plain-text payload is a normal MQTT log line
        self.counters.add_problems(SOURCE, problems)
        if msg.dup:
            self.counters.add(SOURCE, "redelivered")
        if not records:
            ack()
            return
        key = message_key(msg.topic, msg.mid, msg.payload)
        settle = _Settle(ack, len(records))
        for i, rec in enumerate(records):
            if not rec.host:
                rec.host = clean_field(msg.topic, MAX_HOST_CHARS)
            rec.source = SOURCE
            # blocks paho's network thread while the queue is full: the broker holds the rest
            self.batcher.put(rec, key=(f"{key}#{i}", bool(msg.dup)), done=settle, block=True)

    def start(self) -> None:
        self.batcher.start()
        self._client.connect_async(self.host, self.port, keepalive=30)
        self._client.loop_start()

    def stop(self) -> None:
        """Store (and acknowledge) what is queued, then disconnect. Messages that arrive meanwhile
        are left unacknowledged: the session (never unsubscribed) has the broker redeliver them."""
        self._stopping = True
        self.batcher.stop()
        self._client.disconnect()
        self._client.loop_stop()
