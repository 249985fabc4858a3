"""The composition root: builds sources -> store -> triage -> token queue -> engine thread, the
alert bus and the metrics registry from Settings, and exposes them to the server.

Knows nothing about HTTP: gateway/server reads the attributes documented on Appliance.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from gateway.fleet.node.reader import FleetStoreReader
from gateway.fleet.node.surface import FleetSurface
from gateway.fleet.shipper import Shipper
from gateway.ingest import header_layout
from gateway.ingest.demo import DemoLine, DemoSource
from gateway.ingest.mqtt import MqttSource
from gateway.ingest.record import LogRecord, SourceCounters
from gateway.ingest.syslog import SyslogServer
from gateway.ingest.tail import TailSource
from gateway.pipeline.alerts import DONE, FAILED, MISSED, PENDING, REFUSED, Alert, AlertBus, MqttPublisher
from gateway.pipeline.outbox import AlertOutbox
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store, StoreFull
from gateway.pipeline.token_queue import ContextFeed, TokenQueue
from gateway.pipeline.triage import Triage, load_rules
from gateway.sdnotify import Watchdog
from gateway.serve.engine_thread import EngineThread
from gateway.serve.answer.call import tool_help
from gateway.serve.answer.tool import QueryTool
from gateway.serve.layouts import layout_grammar
from gateway.serve.jobs import NotReady, PromptTooLong, QueueFull, Refused
from gateway.serve.prompts import Prompts
from gateway.settings import Settings

log = logging.getLogger(__name__)

INGEST_CHUNK = 1_000     # lines classified and committed together (bounds how long another caller waits)
INGEST_MINING_S = 2.0    # template mining one ingest call may spend; later lines are stored unmined
LAYOUT_CHECK_S = 30.0    # how often sources without a found header are looked for (header_layout)
LAYOUT_JOB_S = 120.0     # the most one layout proposal may take
NEW_KINDS_RELEASE_S = 5.0  # how often grouped new-kind alerts whose window ended are released on a quiet line


class ApplianceStopped(RuntimeError):
    pass


class Appliance:
    """One running linegate. start() builds and starts everything; stop() stops it in reverse.

    For the server:
      ready: bool               the model is loaded (True at once when engine.enabled is false)
      store: Store              search(...), get(id), count(), stats()
      ingest(records) -> ids    classify, store durably (fsynced before return), publish alerts, feed the
                                token queue
      alerts: AlertBus          recent(limit), subscribe(loop=...), get(id)
      engine_thread: EngineThread | None
                                submit_chat(...), prompts, admission, n_scratch; None without an engine
      triage: Triage            templates(limit), template(id)
      stats() -> dict           engine, token_queue, admission, ingest, store, alerts figures
      registry                  prometheus_client CollectorRegistry of the appliance's metrics
      counters: SourceCounters  per-source line/malformed counters (sources and the HTTP route add to it)
      shipper: Shipper | None   ships the store to the plant's ClickHouse ([fleet] with urls and box_id)
      fleet_surface, fleet_reader   [fleet] node = true: the chat's queries and the log search read every
                                box's lines in ClickHouse (gateway/fleet/node/); None on a box
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.counters = SourceCounters()
        self.registry = CollectorRegistry()
        self.store: Store | None = None
        self.triage: Triage | None = None
        self.alerts = AlertBus()
        self.engine_thread: EngineThread | None = None
        self.shipper: Shipper | None = None
        self.fleet_surface: FleetSurface | None = None
        self.fleet_reader: FleetStoreReader | None = None
        self.engine_error: str | None = None   # the engine could not be built (a corrupt model file)
        self.token_queue: TokenQueue | None = None
        self.feed: ContextFeed | None = None
        self.sources: list[Any] = []
        self._started = False
        self._lock = threading.Lock()
        self.ingest_calls = 0
        self.ingest_lines = 0
        self.triage_errors = 0
        self.explain_unavailable = 0
        self.started_at = 0.0
        # systemd's watchdog (Type=notify units): fed by the engine loop once the engine runs; by a timer while
        # it loads, when it failed or is off (ingest and the store still run then).
        self.watchdog = Watchdog.from_env()
        self._stopping = threading.Event()    # set by stop(): ingest ends at its next chunk, the watchdog timer ends

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "Appliance":
        s = self.settings
        with self._lock:
            if self._started:
                return self
            s.data_dir.mkdir(parents=True, exist_ok=True)
            self._stopping.clear()
            self.started_at = time.time()
            # [fleet]: built before the store so that a bad cursor (another box's) stops the start with nothing
            # open; the store's retention keeps what it has not shipped (Shipper.keep_from, docs/fleet.md)
            self.shipper = (Shipper(s.fleet, s.store_path, s.data_dir / "alerts.db", s.data_dir / "fleet_cursor.json")
                            if s.fleet.ships else None)
            self.store = Store(s.store_path, s.store.max_bytes,
                               keep_from=self.shipper.keep_from if self.shipper is not None else None)
            rules = load_rules(s.triage.rules_file) if s.triage.rules_file else []
            self.triage = Triage(s.data_dir, rules, new_template_alerts=s.triage.new_template_alerts,
                                 min_alert_severity=s.triage.min_alert_severity, dedup_s=s.triage.dedup_s,
                                 baseline_lines=s.triage.baseline_lines,
                                 baseline_s=s.triage.baseline_s, header_patterns=s.ingest.header_patterns)
            outbox = AlertOutbox(s.data_dir / "alerts.db")      # history and undelivered alerts
            self.alerts.use_outbox(outbox)
            if s.alerts.mqtt_publish:
                self.alerts.mqtt = MqttPublisher(s.alerts.mqtt_host, s.alerts.mqtt_port, s.alerts.topic_prefix,
                                                 outbox=outbox)
            if self.shipper is not None:
                self.shipper.start()
            if s.fleet.node:                   # the fleet node: reads go to the plant (nothing is read yet)
                self.fleet_surface = FleetSurface.from_settings(s.fleet)
                self.fleet_reader = FleetStoreReader.of(self.fleet_surface)
            self.engine_error = None
            if s.engine.enabled:
                try:
                    self._build_engine_thread()
                except Exception as exc:     # a corrupt model file: the line side still runs; /health says why
                    self.engine_error = f"engine failed to start: {exc}"
                    log.exception("engine failed to start")
                else:
                    self.engine_thread.start()
            self.registry.register(_Collector(self))
            self.sources = _build_sources(self)
            for src in self.sources:
                src.start()
            self._started = True
            threading.Thread(target=self._release_new_kinds, name="new-kinds", daemon=True).start()
            if self.engine_thread is not None:
                threading.Thread(target=self._propose_layouts, name="layouts", daemon=True).start()
            if self.watchdog.period_s is not None:
                threading.Thread(target=self._watchdog_until_engine_runs, name="watchdog", daemon=True).start()
        log.info("appliance started: data_dir=%s, sources=%s, engine=%s", s.data_dir,
                 [type(x).__name__ for x in self.sources], s.engine.model if s.engine.enabled else "off")
        return self

    def _build_engine_thread(self) -> None:
        """The model side, wired explicitly: the prompts (the model's tokenizer and chat template), the
        token queue, the feed that fills it with log lines tokenized as the prompts say, and the
        engine thread that drains it."""
        s = self.settings
        prompts = Prompts.for_model(s.engine.model, s.ui.language, tool_help(s.fleet.node) if s.engine.query else "")
        self.token_queue = TokenQueue(s.token_queue.n_tokens, s.token_queue.n_entries)
        q = s.token_queue
        self.feed = ContextFeed(self.token_queue, prompts.log_tokens, q.collapse_window_s, read_share=q.read_share,
                                target_lag_s=q.target_lag_s, max_window_s=q.max_window_s)
        self.engine_thread = et = EngineThread(
            s.engine, self.feed, prompts=prompts, heartbeat=self.watchdog.pet, kernel_plan_dir=s.cache_dir,
            query_tool=QueryTool(self.fleet_surface or QuerySurface(self.store.path), prompts.tokenizer)
            if s.engine.query else None)
        # the budget follows the engine's measured reading rate (admission's prefill EMA); None until measured
        self.feed.reading_rate = lambda: (1000.0 / et.admission.prefill_ms_per_tok
                                          if et.admission is not None and et.admission.prefill_ms_per_tok else None)

    def _release_new_kinds(self) -> None:
        """Grouped new-kind alerts go out when their window ends even if no further line arrives (a
        quiet line would otherwise hold them)."""
        while not self._stopping.wait(NEW_KINDS_RELEASE_S):
            t = self.triage
            if t is not None:
                for alert in t.new_kind_alerts(time.time()):
                    self.publish_alert(alert)

    def _propose_layouts(self) -> None:
        while not self._stopping.wait(LAYOUT_CHECK_S):
            self.propose_layouts()

    def propose_layouts(self) -> int:
        """Asks the model once for the header layout of each source whose format the statistics did
        not find (gateway.ingest.header_layout), decoded under the layout grammar (gateway.serve.layouts,
        so the answer always reads as a layout); the layout is kept only if it parses the source's
        next lines. A refused or failed job is asked again at the next check. Returns layouts kept."""
        e, t = self.engine_thread, self.triage
        if e is None or t is None or t.headers is None or not e.ready or e.error is not None:
            return 0
        kept = 0
        for source, sample in t.headers.unsure():
            try:
                job = e.submit_chat([{"role": "user", "content": header_layout.prompt(sample)}], max_tokens=64,
                                    ttft_budget_ms=self.settings.alerts.ttft_budget_ms, grammar=layout_grammar())
                text = job.result(timeout=LAYOUT_JOB_S)["text"]
            except Exception as exc:                 # refused, busy, timed out: next time
                log.info("no header layout for %s yet: %s", source, exc)
                continue
            if t.headers.adopt(source, header_layout.layout_from_answer(text)):
                kept += 1
                log.info("source %s: the model's header layout parses its lines; kept", source)
            else:
                log.info("source %s: the model's header layout %r did not parse its lines; not kept", source, text)
        return kept

    def _watchdog_until_engine_runs(self) -> None:
        while not self._stopping.wait(self.watchdog.period_s / 4):
            e = self.engine_thread
            if e is None or not e.ready or e.error is not None:
                self.watchdog.pet()

    def stop(self) -> None:
        self._stopping.set()           # an ingest in progress ends at its next chunk
        if self.triage is not None:
            for alert in self.triage.new_kind_alerts():   # held groups go out before the line stops
                self.alerts.publish(alert)
            self.triage.close()        # ... or at its next line (saves the templates)
        with self._lock:
            if not self._started:
                return
            self._stopping.set()
            for src in reversed(self.sources):
                try:
                    src.stop()
                except Exception:
                    log.exception("stopping source %s", type(src).__name__)
            if self.engine_thread is not None:
                self.engine_thread.stop()
            if self.shipper is not None:
                self.shipper.stop()
            if self.store is not None:
                self.store.close()
            if self.fleet_surface is not None:
                self.fleet_surface.close()
            self.alerts.close()
            self._started = False

    def __enter__(self) -> "Appliance":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def not_ready_reason(self) -> str | None:
        """Why the appliance is not ready: the engine's start error (a corrupt or missing model file),
        "loading", or None when ready."""
        e = self.engine_thread
        if self.engine_error is not None or (e is not None and e.error is not None):
            return self.engine_error or e.error
        return None if self.ready else "loading"

    @property
    def ready(self) -> bool:
        if not self._started or self.engine_error is not None:
            return False
        if self.engine_thread is None:
            return True
        return self.engine_thread.ready and self.engine_thread.error is None

    # --- the pipeline --------------------------------------------------------------------------
    def ingest(self, records: Sequence[LogRecord], keys: Sequence[tuple[str, bool] | None] | None = None) -> list[int]:
        """Store `records` durably (returns after the fsynced commits) and run them through triage,
        alerts and the token queue. `keys`: message identities for the store's duplicate check
        (Store.append). Safe from any thread. A large batch goes through in chunks of INGEST_CHUNK
        lines, so another caller's lines are stored between them instead of waiting for the whole
        batch (their ids may then interleave with this batch's)."""
        if not records:
            return []
        ids: list[int] = []
        self.ingest_calls += 1
        deadline = time.monotonic() + INGEST_MINING_S
        for i in range(0, len(records), INGEST_CHUNK):
            if self._stopping.is_set():
                raise ApplianceStopped("the appliance is stopping")
            try:
                ids.extend(self._ingest_chunk(records[i:i + INGEST_CHUNK], keys[i:i + INGEST_CHUNK] if keys else None,
                                              deadline))
            except (ValueError, StoreFull) as exc:   # say what of this batch is stored already
                if ids:
                    exc.args = (f"{exc.args[0] if exc.args else exc} (the first {len(ids)} lines of this batch "
                                f"were stored, ids {min(ids)}..{max(ids)})",)
                raise
        return ids

    def _ingest_chunk(self, records: Sequence[LogRecord], keys: Sequence[tuple[str, bool] | None] | None,
                      deadline: float) -> list[int]:
        assert self.store is not None and self.triage is not None, "Appliance.start() first"
        try:
            classified = self.triage.classify(records, deadline)
        except Exception:   # triage is derived data; the line itself must not be lost
            log.exception("triage failed; storing lines without templates")
            self.triage_errors += 1
            classified = None
        ids = self.store.append(records, [c.template_id for c in classified] if classified else None,
                                [c.fields for c in classified] if classified else None, keys)
        self.ingest_lines += len(records)
        if classified is None:
            return ids
        alerted: set[int] = set()
        new_kinds: set[int] = set()   # judged new kinds: their grouped alert may come later
        for alert in self.triage.evaluate(records, ids, classified, new_kinds=new_kinds):
            alerted.update(alert.line_ids)
            self.publish_alert(alert)
        if self.feed is not None and self.engine_thread is not None:
            for rec, cl, line_id in zip(records, classified, ids):
                self.feed.add(rec.ts, rec.host, cl.template_id, rec.text, important=line_id in alerted,
                              new=cl.is_new or line_id in new_kinds, template=cl.template,
                              params=cl.fields.params if cl.fields else None, line_id=line_id)
            self.engine_thread.notify()
        return ids

    def publish_alert(self, alert: Alert) -> None:
        """Publish `alert` at once; then, when its kind asks for one and the model is up, queue its
        explanation (the alert is updated when it comes, or marked refused/failed)."""
        cfg = self.settings.alerts
        want = alert.kind in cfg.explain
        w = self.engine_thread
        if want and w is not None and w.ready and w.error is None:
            alert.explanation_status = PENDING
        self.alerts.publish(alert)            # out at once, before any model work
        if alert.explanation_status != PENDING:
            if want:
                self.explain_unavailable += 1
            return

        def on_event(ev: dict) -> None:
            if ev["type"] == "done":
                r = ev["result"]
                self.alerts.update(alert.id, explanation=r["text"], status=MISSED if r["late"] else DONE,
                                   explanation_ms=r["total_ms"])
            elif ev["type"] == "error":
                self.alerts.update(alert.id, status=FAILED)

        try:
            w.submit_explain(alert.to_dict(), max_tokens=cfg.explanation_max_tokens, budget_ms=cfg.alert_budget_ms,
                             on_event=on_event)
        except (Refused, QueueFull, NotReady, PromptTooLong):
            self.alerts.update(alert.id, status=REFUSED)   # the fallback: the alert stands alone

    # --- figures -------------------------------------------------------------------------------
    def fleet_node_stats(self) -> dict | None:
        """The fleet node's plant: lines per box (a ClickHouse read: call it off the event loop); None on a box."""
        if self.fleet_reader is None:
            return None
        try:
            return self.fleet_reader.stats()
        except (RuntimeError, ConnectionError) as exc:
            return {"error": str(exc)}

    def queue_stats(self) -> dict[str, dict]:
        """Per source with a batch queue (syslog, mqtt): depth, max, dropped (queue full)."""
        return {b.source: b.stats() for b in (getattr(x, "batcher", None) for x in self.sources) if b is not None}

    def stats(self) -> dict:
        d: dict[str, Any] = {
            "ready": self.ready,
            "uptime_s": time.time() - self.started_at if self._started else 0.0,
            "ingest": {"calls": self.ingest_calls, "lines": self.ingest_lines, "triage_errors": self.triage_errors,
                       "sources": self.counters.snapshot(), "queues": self.queue_stats()},
            "alerts": self.alerts.stats() | {"explain_unavailable": self.explain_unavailable},
        }
        if self.store is not None:
            d["store"] = self.store.stats()
        if self.triage is not None:
            d["triage"] = self.triage.stats()
        if self.shipper is not None:
            d["fleet"] = self.shipper.figures()     # shipped, pending, oldest_unshipped_s, last_error, ...
        if self.engine_thread is not None:
            w = self.engine_thread.stats()
            d["engine"] = w.pop("engine", {}) | {"model": w.get("model"), "error": w.get("error")}
            d["token_queue"] = w.pop("token_queue", {}) | {"lag_s": w.get("lag_s"), "lag_tokens": w.get("lag_tokens")}
            d["admission"] = w.pop("admission", {})
            d["drafter"] = w.pop("drafter")    # which drafter runs and why (auto, an NPU fallback)
            if "speculative" in w:             # drafter figures: acceptance, tokens per target forward
                d["speculative"] = w.pop("speculative")
            d["engine_thread"] = w
        elif self.feed is not None:
            d["token_queue"] = self.feed.stats()
        return d


def _reading_families(q: dict):
    """The reading budget's figures (gateway/pipeline/reading_budget.py): nothing dropped uncounted."""
    for name, key, why in (("linegate_token_queue_summarised_lines", "summarised_lines",
                            "Lines folded into per-template summaries the model read"),
                           ("linegate_token_queue_skipped_lines", "skipped_lines",
                            "Lines whose summary did not fit the reading budget (kept in the store)")):
        c = CounterMetricFamily(name, why)
        c.add_metric([], q.get(key, 0) or 0)
        yield c
    g = GaugeMetricFamily("linegate_oldest_unread_seconds",
                          "Age of the oldest line not yet read by the model (queued or in an open summary)")
    g.add_metric([], q.get("oldest_unread_s") or 0.0)
    yield g
    g = GaugeMetricFamily("linegate_reading_budget_tokens_per_second",
                          "Tokens/s the feed may send (read_share x the measured reading rate)")
    g.add_metric([], (q.get("budget") or {}).get("budget_tokens_per_s") or 0.0)
    yield g


# stats()["alerts"] counters -> the label value of their metric family. Named here rather than cut from the
# key, so that a key added to the bus's counts is exported once it is listed, under the label written here.
ALERT_KIND_LABELS = {"kind_new_template": "new_template", "kind_severity": "severity", "kind_rule": "rule"}
EXPLANATION_STATUS_LABELS = {"explanation_pending": "pending", "explanation_done": "done",
                             "explanation_refused": "refused", "explanation_missed": "missed",
                             "explanation_failed": "failed", "explanation_none": "none"}


# The token queue's drops under its name, and under the name it had before (one release, for dashboards).
DROPPED_ENTRIES_METRICS = {
    "linegate_token_queue_dropped_entries": "",
    "linegate_ring_dropped_entries": " (deprecated: use linegate_token_queue_dropped_entries)",
}


class _Collector:
    """Prometheus view of stats(), computed at scrape time."""

    def __init__(self, app: Appliance) -> None:
        self.app = app

    def collect(self):
        s = self.app.stats()
        yield GaugeMetricFamily("linegate_ready", "1 when the model is loaded", value=float(s["ready"]))
        c = CounterMetricFamily("linegate_ingest_lines", "Lines accepted (durable)")
        c.add_metric([], s["ingest"]["lines"])
        yield c
        src = CounterMetricFamily("linegate_source_events", "Per-source counts: lines and malformed kinds",
                                  labels=["source", "kind"])
        for name, per in s["ingest"]["sources"].items():
            for kind, n in per.items():
                src.add_metric([name, kind], n)
        yield src
        depth = GaugeMetricFamily("linegate_ingest_queue_depth", "Records waiting in a source's batch queue",
                                  labels=["source"])
        dropped = CounterMetricFamily("linegate_ingest_queue_dropped", "Records dropped: batch queue full (UDP)",
                                      labels=["source"])
        for name, q in s["ingest"]["queues"].items():
            depth.add_metric([name], q["depth"])
            dropped.add_metric([name], q["dropped"])
        yield depth
        yield dropped
        if "store" in s:
            g = GaugeMetricFamily("linegate_store_bytes", "Store files on disk (db + wal + shm)")
            g.add_metric([], s["store"]["file_bytes"])
            yield g
            r = CounterMetricFamily("linegate_store_retention_deleted", "Rows deleted by size retention")
            r.add_metric([], s["store"]["retention_deleted"])
            yield r
        if "triage" in s:
            t = s["triage"]
            g = GaugeMetricFamily("linegate_triage_templates", "Templates held by triage")
            g.add_metric([], t.get("templates", 0))
            yield g
            o = CounterMetricFamily("linegate_triage_overflow_lines", "Lines past a source's template cap or "
                                    "the work budget (its overflow template)", labels=["source"])
            for name, n in t.get("overflow_lines", {}).items():
                o.add_metric([name], n)
            yield o
        yield _labelled(CounterMetricFamily("linegate_alerts", "Alerts published, by kind", labels=["kind"]),
                        s["alerts"], ALERT_KIND_LABELS)
        yield _labelled(CounterMetricFamily("linegate_alert_explanations", "Alert explanations by outcome",
                                            labels=["status"]), s["alerts"], EXPLANATION_STATUS_LABELS)
        if "token_queue" in s:
            q = s["token_queue"]
            for name, why in DROPPED_ENTRIES_METRICS.items():
                d = CounterMetricFamily(name, f"Context lines dropped from the token queue because the engine lagged{why}")
                d.add_metric([], q.get("dropped_entries", 0))
                yield d
            lag = GaugeMetricFamily("linegate_engine_lag_seconds", "Age of the oldest line not yet prefilled")
            lag.add_metric([], q.get("lag_s") or 0.0)
            yield lag
            yield from _reading_families(q)
        if "fleet" in s:
            yield from _fleet_families(s["fleet"])
        if s.get("admission"):
            adm = CounterMetricFamily("linegate_admission_jobs", "Jobs by admission outcome", labels=["outcome"])
            for k in ("admitted", "refused", "missed"):
                adm.add_metric([k], s["admission"].get(k, 0))
            yield adm
            for k in ("prefill_ms_per_tok", "decode_ms_per_tok"):
                g = GaugeMetricFamily(f"linegate_{k}", f"EMA (alpha 0.2) of measured {k.replace('_', ' ')}")
                g.add_metric([], s["admission"][k])
                yield g


# Shipper.figures() key -> (metric, help) of the fleet's figures (docs/fleet.md)
FLEET_COUNTERS = {
    "shipped": ("linegate_fleet_shipped_lines", "Lines ClickHouse acknowledged (all runs)"),
    "dropped_unshipped": ("linegate_fleet_dropped_unshipped_lines",
                          "Lines retention deleted before they were shipped (past fleet.max_unshipped_lines)"),
    "rejected": ("linegate_fleet_rejected_lines", "Lines ClickHouse refused as data, skipped"),
    "failures": ("linegate_fleet_failures", "Shipping passes that failed (each followed by a backoff wait)"),
}
FLEET_GAUGES = {
    "pending": ("linegate_fleet_pending_lines", "Stored lines not shipped yet"),
    "oldest_unshipped_s": ("linegate_fleet_oldest_unshipped_seconds",
                           "Age of the oldest line not shipped yet (0 when none waits)"),
}


def _fleet_families(f: dict):
    for key, (name, text) in FLEET_COUNTERS.items():
        c = CounterMetricFamily(name, text)
        c.add_metric([], f.get(key) or 0)
        yield c
    for key, (name, text) in FLEET_GAUGES.items():
        g = GaugeMetricFamily(name, text)
        g.add_metric([], f.get(key) or 0)
        yield g


def _labelled(family, counts: dict, labels: dict[str, str]):
    """`family` with one sample per key of `labels` present in `counts`, labelled as `labels` names it."""
    for key, label in labels.items():
        if key in counts:
            family.add_metric([label], counts[key])
    return family


def _build_sources(app: Appliance) -> list[Any]:
    """The sources the settings turn on, each feeding app.ingest."""
    s = app.settings.ingest
    out: list[Any] = []
    if s.demo.enabled:
        out.append(DemoSource(DemoLine.from_settings(s.demo), app.ingest, app.counters))
    if s.syslog.udp_port or s.syslog.tcp_port or s.syslog.relp_port:
        out.append(SyslogServer(app.ingest, app.counters, bind=s.syslog.bind, udp_port=s.syslog.udp_port,
                                tcp_port=s.syslog.tcp_port, relp_port=s.syslog.relp_port))
    if s.tail.files:
        for path in s.tail.files:
            out.append(TailSource(path, app.settings.data_dir / "tail", app.ingest, app.counters, poll_s=s.tail.poll_s))
    if s.mqtt.enabled:
        out.append(MqttSource(app.ingest, app.counters, host=s.mqtt.host, port=s.mqtt.port, topics=s.mqtt.topics,
                              username=s.mqtt.username, password=s.mqtt.password, client_id=s.mqtt.client_id))
    return out
