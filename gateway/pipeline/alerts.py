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
    """Publishes alert JSON to a broker (paho-mqtt, background network loop, reconnects itself)."""

    def __init__(self, host: str, port: int = 1883, prefix: str = DEFAULT_TOPIC_PREFIX,
                 client_id: str = "linegate-alerts", username: str | None = None,
                 password: str | None = None) -> None:
        import paho.mqtt.client as mqtt   # only when alerts are published to MQTT

        self.prefix = prefix
        self.published = 0
        self.failed = 0
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        if username:
            self._client.username_pw_set(username, password)
        self._client.reconnect_delay_set(1, 30)
        self._client.connect_async(host, port, keepalive=30)
        self._client.loop_start()

    def publish(self, alert: dict, event: str) -> None:
        payload = json.dumps({"event": event, **alert}, ensure_ascii=False)
        info = self._client.publish(topic_for(self.prefix, alert.get("host", "")), payload, qos=MQTT_QOS)
        if info.rc == 0:
            self.published += 1
        else:   # not connected yet: paho queues qos>0 messages only while connected
            self.failed += 1

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()


class AlertBus:
    """publish(alert) -> alert (id assigned; out at once); update(id, ...) attaches an explanation.

    recent(limit) -> [dict] newest first; subscribe(loop=None) -> Subscription.
    Thread-safe: any thread may publish, update or subscribe.
    """

    def __init__(self, mqtt: MqttPublisher | None = None) -> None:
        self.mqtt = mqtt
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._recent: collections.OrderedDict[int, Alert] = collections.OrderedDict()
        self._subs: list[Subscription] = []
        self.counts = collections.Counter()   # published, updated, by kind, explanation status

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
        self._fan_out("alert", d)
        return alert

    def update(self, alert_id: int, *, explanation: str | None = None, status: str,
               explanation_ms: float | None = None) -> dict | None:
        """Attach an explanation (or record why there is none); publishes an "update" event."""
        with self._lock:
            alert = self._recent.get(alert_id)
            if alert is None:
                return None
            alert.explanation = explanation
            alert.explanation_status = status
            alert.explanation_ms = explanation_ms
            self.counts[f"explanation_{status}"] += 1
            d = alert.to_dict()
        self._fan_out("update", d)
        return d

    def _fan_out(self, event: str, d: dict) -> None:
        if self.mqtt is not None:
            try:
                self.mqtt.publish(d, event)
            except Exception as exc:   # the broker is optional; subscribers still get the alert
                log.warning("MQTT publish failed: %s", exc)
        with self._lock:
            subs = list(self._subs)
        for s in subs:
            s._deliver({"event": event, "alert": d})

    def get(self, alert_id: int) -> dict | None:
        with self._lock:
            a = self._recent.get(alert_id)
            return a.to_dict() if a else None

    def recent(self, limit: int = 50) -> list[dict]:
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
        return d

    def close(self) -> None:
        if self.mqtt is not None:
            self.mqtt.close()
