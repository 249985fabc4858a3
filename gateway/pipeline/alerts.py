"""The alert bus: an alert goes out at once (MQTT + in-process subscribers, e.g. the server's SSE
stream); its LLM explanation, if any, follows later as an update of the same alert id.

Knows nothing about how alerts are raised (triage) or explained (the engine thread): it carries them.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import logging
import queue
import re
import threading
import time
from dataclasses import asdict, dataclass, field

from gateway.pipeline.outbox import AlertOutbox

log = logging.getLogger(__name__)

MAX_RECENT = 500            # alerts kept in memory for recent()
MAX_ALERT_LINES = 8         # example lines carried by one alert
SUBSCRIBER_QUEUE = 256      # events buffered per subscriber; a slow one loses the oldest (counted)
DEFAULT_TOPIC_PREFIX = "linegate/alerts"
MQTT_QOS = 1

# explanation_status values
PENDING, DONE, REFUSED, MISSED, FAILED, NONE = "pending", "done", "refused", "missed", "failed", "none"


@dataclass
class Alert:
    """One alert. kind: "new_template" | "severity" | "rule"."""

    kind: str
    severity: str                      # name: "warning", "error", ...
    host: str
    source: str
    template_id: int | None
    template: str
    lines: list[str]
    line_ids: list[int] = field(default_factory=list)
    count: int = 1                     # occurrences this alert stands for
    rule: str | None = None            # rule name for kind == "rule"
    ts: float = field(default_factory=time.time)
    id: int = 0                        # assigned by the bus
    explanation: str | None = None
    explanation_status: str = NONE     # pending | done | refused | missed | failed | none
    explanation_ms: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class Subscription:
    """Events {"event": "alert" | "update", "alert": {...}} from the moment of subscribing.

    Thread use: `get(timeout)`. asyncio use: create with `bus.subscribe(loop=asyncio.get_running_loop())`
    and `async for ev in sub` / `await sub.aget()`. Close it (or use `with`) when done.
    """

    def __init__(self, bus: "AlertBus", loop: asyncio.AbstractEventLoop | None) -> None:
        self._bus = bus
        self._loop = loop
        self._q: queue.Queue = queue.Queue(SUBSCRIBER_QUEUE)
        self._aq: asyncio.Queue | None = asyncio.Queue(SUBSCRIBER_QUEUE) if loop else None
        self.dropped = 0
        self.closed = False

    def _deliver(self, ev: dict) -> None:
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._put_async, ev)
            except RuntimeError:        # loop closed: the subscriber is gone
                self.close()
            return
        while True:
            try:
                self._q.put_nowait(ev)
                return
            except queue.Full:
                try:
                    self._q.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def _put_async(self, ev: dict) -> None:
        assert self._aq is not None
        if self._aq.full():
            self._aq.get_nowait()
            self.dropped += 1
        self._aq.put_nowait(ev)

    def get(self, timeout: float | None = None) -> dict | None:
        """The next event, or None after `timeout` seconds."""
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None

    async def aget(self) -> dict:
        if self._aq is None:
            raise RuntimeError("subscription was created without an event loop: use get()")
        return await self._aq.get()

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> dict:
        if self.closed:
            raise StopAsyncIteration
        return await self.aget()

    def close(self) -> None:
        self.closed = True
        self._bus._unsubscribe(self)

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def topic_for(prefix: str, host: str) -> str:
    """linegate/alerts/<host>; MQTT wildcards and empty levels in the host are replaced."""
    safe = re.sub(r"[+#\x00]", "_", host).strip("/") or "unknown"
    safe = re.sub(r"/+", "/", safe)
    return f"{prefix}/{safe}"


class MqttPublisher:
    """Publishes alert JSON to a broker (paho-mqtt, background network loop, reconnects itself with
    back-off 1..30 s). With an outbox, an event is marked delivered on its PUBACK; events still
    pending from an earlier run (or refused by paho) are published again on every connect. Paho
    itself resends what it holds across a reconnect, so delivery is at least once."""

    def __init__(self, host: str, port: int = 1883, prefix: str = DEFAULT_TOPIC_PREFIX,
                 client_id: str = "linegate-alerts", username: str | None = None,
                 password: str | None = None, outbox: AlertOutbox | None = None) -> None:
        import paho.mqtt.client as mqtt   # only when alerts are published to MQTT

        self.prefix = prefix
        self.outbox = outbox
        self.published = 0               # PUBACKs received
        self.failed = 0                  # refused by paho (queue full); an outbox event is retried
        self._lock = threading.Lock()    # held while paho publishes, so a mid is mapped before its PUBACK
        self._inflight: dict[int, int] = {}   # mid -> outbox seq
        self._queued: set[int] = set()        # outbox seqs paho holds
        self._events: queue.SimpleQueue = queue.SimpleQueue()   # PUBACK mids and connects, for _work
        self._worker = threading.Thread(target=self._work, name="alerts-outbox", daemon=True)
        self._worker.start()
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        if username:
            self._client.username_pw_set(username, password)
        self._client.on_publish = lambda c, u, mid, rc, props: self._events.put(("puback", mid))
        self._client.on_connect = lambda c, u, flags, rc, props: self._events.put(("connect", 0))
        self._client.reconnect_delay_set(1, 30)
        self._client.connect_async(host, port, keepalive=30)
        self._client.loop_start()

    def publish(self, alert: dict, event: str, seq: int | None = None) -> None:
        payload = json.dumps({"event": event, **alert}, ensure_ascii=False)
        self._send(seq, topic_for(self.prefix, alert.get("host", "")), payload)

    def _send(self, seq: int | None, topic: str, payload: str) -> None:
        import paho.mqtt.client as mqtt
        with self._lock:
            info = self._client.publish(topic, payload, qos=MQTT_QOS)
            # NO_CONN: paho holds the message and sends it once connected
            if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
                self.failed += 1
                return
            if seq is not None:
                self._inflight[info.mid] = seq
                self._queued.add(seq)

    def _work(self) -> None:
        """Marks PUBACKed events delivered; on a connect, publishes the outbox's pending events paho
        does not hold. Runs off paho's thread: paho calls on_publish holding its own locks."""
        while True:
            kind, mid = self._events.get()
            if kind == "stop":
                return
            if kind == "puback":
                with self._lock:
                    self.published += 1
                    seq = self._inflight.pop(mid, None)
                    if seq is not None:
                        self._queued.discard(seq)
                if seq is not None and self.outbox is not None:
                    self.outbox.delivered(seq)
            elif kind == "connect" and self.outbox is not None:
                for seq, host, payload in self.outbox.pending():
                    if seq not in self._queued:
                        self._send(seq, topic_for(self.prefix, host), payload)

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()
        self._events.put(("stop", 0))
        self._worker.join(5)


class AlertBus:
    """publish(alert) -> alert (id assigned; out at once); update(id, ...) attaches an explanation.

    recent(limit) -> [dict] newest first; subscribe(loop=None) -> Subscription.
    With an outbox (use_outbox), an alert and each update are written durably before they go
    out, and recent()/get() are read from it: the history survives a restart.
    Thread-safe: any thread may publish, update or subscribe.
    """

    def __init__(self, mqtt: MqttPublisher | None = None, outbox: AlertOutbox | None = None) -> None:
        self.mqtt = mqtt
        self.outbox: AlertOutbox | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        if outbox is not None:
            self.use_outbox(outbox)
        self._recent: collections.OrderedDict[int, Alert] = collections.OrderedDict()
        self._subs: list[Subscription] = []
        self.counts = collections.Counter()   # published, updated, by kind, explanation status

    def use_outbox(self, outbox: AlertOutbox) -> None:
        """Persist alerts in `outbox`; ids continue after the last one it holds."""
        with self._lock:
            self.outbox = outbox
            self._ids = itertools.count(outbox.last_id() + 1)

    def publish(self, alert: Alert) -> Alert:
        with self._lock:
            alert.id = next(self._ids)
            alert.lines = alert.lines[:MAX_ALERT_LINES]
            alert.line_ids = alert.line_ids[:MAX_ALERT_LINES]
            self._recent[alert.id] = alert
            while len(self._recent) > MAX_RECENT:
                self._recent.popitem(last=False)
            self.counts["published"] += 1
            self.counts[f"kind_{alert.kind}"] += 1
            d = alert.to_dict()
            seq = self._save(d, "alert")
        self._fan_out("alert", d, seq)
        return alert

    def _save(self, d: dict, event: str) -> int | None:
        if self.outbox is None:
            return None
        try:
            return self.outbox.save(d, event, deliver=self.mqtt is not None)
        except Exception as exc:   # the disk failed: the alert still goes out, unrecorded (counted)
            log.error("alert outbox write failed: %s", exc)
            self.counts["outbox_errors"] += 1
            return None

    def update(self, alert_id: int, *, explanation: str | None = None, status: str,
               explanation_ms: float | None = None) -> dict | None:
        """Attach an explanation (or record why there is none); publishes an "update" event."""
        with self._lock:
            alert = self._recent.get(alert_id)
            if alert is None and self.outbox is not None:     # raised before a restart
                saved = self.outbox.get(alert_id)
                alert = Alert(**saved) if saved else None
            if alert is None:
                return None
            alert.explanation = explanation
            alert.explanation_status = status
            alert.explanation_ms = explanation_ms
            self.counts[f"explanation_{status}"] += 1
            d = alert.to_dict()
            seq = self._save(d, "update")
        self._fan_out("update", d, seq)
        return d

    def _fan_out(self, event: str, d: dict, seq: int | None = None) -> None:
        if self.mqtt is not None:
            try:
                self.mqtt.publish(d, event, seq)
            except Exception as exc:   # the broker is optional; subscribers still get the alert
                log.warning("MQTT publish failed: %s", exc)
        with self._lock:
            subs = list(self._subs)
        for s in subs:
            s._deliver({"event": event, "alert": d})

    def get(self, alert_id: int) -> dict | None:
        if self.outbox is not None:
            return self.outbox.get(alert_id)
        with self._lock:
            a = self._recent.get(alert_id)
            return a.to_dict() if a else None

    def recent(self, limit: int = 50) -> list[dict]:
        if self.outbox is not None:
            return self.outbox.recent(limit)
        with self._lock:
            items = list(self._recent.values())[-limit:] if limit > 0 else []
            return [a.to_dict() for a in reversed(items)]

    def subscribe(self, loop: asyncio.AbstractEventLoop | None = None) -> Subscription:
        sub = Subscription(self, loop)
        with self._lock:
            self._subs.append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def stats(self) -> dict:
        with self._lock:
            d = dict(self.counts)
            d["subscribers"] = len(self._subs)
        if self.mqtt is not None:
            d["mqtt_published"] = self.mqtt.published
            d["mqtt_failed"] = self.mqtt.failed
        if self.outbox is not None:
            d |= self.outbox.counts()
        return d

    def close(self) -> None:
        if self.mqtt is not None:
            self.mqtt.close()
        if self.outbox is not None:
            self.outbox.close()
