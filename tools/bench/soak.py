"""Soak: `linegate serve` (a subprocess, a real mosquitto) under mixed load for --minutes: lines at
--rate per second split over syslog TCP, syslog UDP, MQTT (QoS 1), HTTP NDJSON and a tailed file;
an operator question every --question-s; an alert storm every --storm-s. Samples the server's RSS,
engine lag and ingest backlog every --sample-s (a CSV and an SVG plot under --out).

At the end the store is read directly: every line carries its transport and sequence number, so
lost = acknowledged by the transport - stored (UDP: sent - stored - drops the server counted).

Issue 42's acceptance (tools/bench/soak_judge.py): the reading lag's p50/p95/max over the run and its
second half and its slope there, the token queue's counters, the questions, a sample of the summaries the
model read (/api/stats?summaries=N) checked against the store's rows, and an `accept` block.
--variety high: few repeats per template (tools/bench/soak_lines.py). --engine-cpus: the served appliance
(all its threads: it inherits the affinity at start) on those CPUs, the load generator on the others.
Not in `make test`. A printed summary, then the last line of output: one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.settings import AlertSettings                                          # noqa: E402
from tests import mqtt_broker                                                        # noqa: E402
from tools.bench.harness import Served, cpu_here, free_port, print_result, rss_mb  # noqa: E402
from tools.bench.soak_judge import (SummarySample, accept, check_summaries, lag_figures, pct,  # noqa: E402
                                    queue_figures, question_figures, stage_figures, summary_lines)
from tools.bench.soak_lines import (HIGH_TEMPLATES, STORM_LINES, TRANSPORTS, VARIETIES, count_stored,  # noqa: E402
                                   line_maker, storm_body)

TICK_S = 0.05
# uvicorn closes an idle keep-alive connection after 5 s; a client reusing one at that moment gets a
# reset that the server never saw as a request. Expire ours first.
KEEPALIVE_S = 2.0
QUESTIONS = ("How many error lines were there in the last minute?", "Which host logged the most lines recently?",
             "Were there any faults on line 3?", "最近一分钟有多少条错误日志？")
SUMMARIES_PER_SAMPLE = 256    # the last summaries asked for with each sample (the feed keeps about this many)


def parse_cpus(spec: str) -> set[int]:
    """"1", "0,2", "0-3" -> CPU numbers."""
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.strip().partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def threads_cpus(pid: int) -> list[str]:
    """The distinct CPU lists the threads of process `pid` may run on (/proc: Cpus_allowed_list)."""
    seen = set()
    for st in Path(f"/proc/{pid}/task").glob("*/status"):
        with contextlib.suppress(OSError):
            seen.update(ln.split(":", 1)[1].strip() for ln in st.read_text().splitlines()
                        if ln.startswith("Cpus_allowed_list:"))
    return sorted(seen)


class Sender(threading.Thread):
    """Sends `rate` lines/s of one transport until stopped; `acked` counts what the transport
    acknowledged (HTTP 200, MQTT PUBACK from the broker, TCP/file written, UDP sent)."""

    def __init__(self, transport: str, rate: float, ctx: dict) -> None:
        super().__init__(name=f"send-{transport}", daemon=True)
        self.transport, self.rate, self.ctx = transport, rate, ctx
        self.text = ctx["text"]       # (transport, n) -> the line (soak_lines: the --variety)
        self.sent = self.acked = 0
        self.errors: dict[str, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        send = getattr(self, f"_open_{self.transport}")()
        t0 = time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - t0) * self.rate) - self.sent
            if due > 0:
                try:
                    send(range(self.sent, self.sent + due))
                except Exception as exc:   # counted: a failed send is not acknowledged
                    key = type(exc).__name__
                    self.errors[key] = self.errors.get(key, 0) + 1
                self.sent += due
            time.sleep(TICK_S)
        getattr(self, "_close", lambda: None)()

    def _open_tcp(self):
        sock = socket.create_connection(("127.0.0.1", self.ctx["tcp_port"]))
        self._close = sock.close

        def send(ns):
            sock.sendall(b"".join(b"<14>1 - soakhost app - - - %s\n" % self.text("tcp", n).encode() for n in ns))
            self.acked += len(ns)
        return send

    def _open_udp(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._close = sock.close

        def send(ns):
            for n in ns:
                sock.sendto(b"<14>1 - soakhost app - - - " + self.text("udp", n).encode(), ("127.0.0.1", self.ctx["udp_port"]))
                self.acked += 1
        return send

    def _open_mqtt(self):
        import paho.mqtt.client as mqtt
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="soak-publisher")
        c.max_inflight_messages_set(1000)
        c.max_queued_messages_set(0)
        c.on_publish = lambda *a: setattr(self, "acked", self.acked + 1)
        c.connect("127.0.0.1", self.ctx["mqtt_port"])
        c.loop_start()

        def close():
            deadline = time.monotonic() + 60
            while self.acked < self.sent and time.monotonic() < deadline:
                time.sleep(0.1)
            c.loop_stop()
            c.disconnect()
        self._close = close
        return lambda ns: [c.publish(f"factory/soak{n % 4}/logs", self.text("mqtt", n), qos=1) for n in ns]

    def _open_http(self):
        client = self.ctx["http"]

        def send(ns):
            body = "\n".join(json.dumps({"text": self.text("http", n), "host": "soak/http"}) for n in ns)
            r = client.post("/api/ingest", content=body)
            self.ctx["status"](r.status_code)
            if r.status_code == 200:
                self.acked += r.json()["accepted"]
        return send

    def _open_tail(self):
        f = open(self.ctx["tail"], "a", buffering=1 << 16)
        self._close = f.close

        def send(ns):
            f.write("".join(self.text("tail", n) + "\n" for n in ns))
            f.flush()
            self.acked += len(ns)
        return send


def svg_plot(rows: list[dict], path: Path) -> None:
    """RSS (MB) and engine lag (s) against time, two panels, plain SVG (no plotting library)."""
    w, h, pad = 720, 200, 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{2 * h + 20}" font-size="11">']
    t_max = max(r["t_s"] for r in rows) or 1
    for k, (key, label) in enumerate((("rss_mb", "server RSS (MB)"), ("lag_s", "engine lag (s)"))):
        y0 = k * (h + 20)
        vals = [r[key] for r in rows]
        lo, hi = min(vals), max(vals)
        hi = hi if hi > lo else lo + 1
        pts = " ".join(f"{pad + (r['t_s'] / t_max) * (w - 2 * pad):.1f},"
                       f"{y0 + h - pad / 2 - (r[key] - lo) / (hi - lo) * (h - pad):.1f}" for r in rows)
        parts += [f'<text x="{pad}" y="{y0 + 14}">{label}: {lo:.1f} .. {hi:.1f} over {t_max:.0f} s</text>',
                  f'<rect x="{pad}" y="{y0 + pad / 2}" width="{w - 2 * pad}" height="{h - pad}" fill="none" stroke="#ccc"/>',
                  f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{pts}"/>']
    path.write_text("\n".join(parts + ["</svg>"]) + "\n")


class Soak:
    """One run: a broker, `linegate serve` with every transport on, the HTTP client and its counts."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="soak-"))
        self.out = args.out or self.tmp
        self.out.mkdir(parents=True, exist_ok=True)
        # --engine-cpus: this thread (and so the broker and the senders started from it) on the other CPUs,
        # the server started from it while it is on the engine's: a child inherits its starter's affinity.
        every = os.sched_getaffinity(0)
        self.engine_cpus = parse_cpus(args.engine_cpus) & every if args.engine_cpus else set()
        if args.engine_cpus and not self.engine_cpus:
            raise SystemExit(f"soak: --engine-cpus {args.engine_cpus}: none of them is available ({sorted(every)})")
        self.load_cpus = (every - self.engine_cpus) or every
        if self.engine_cpus:
            os.sched_setaffinity(0, self.load_cpus)
        self.broker = contextlib.ExitStack()   # the tests' mosquitto (tests/mqtt_broker.py), stopped in stop()
        self.mqtt_port = self.broker.enter_context(mqtt_broker.mosquitto(self.tmp, extra="max_queued_messages 1000000\n"))
        self.data, self.tail = self.tmp / "data", self.tmp / "line.log"
        self.tail.write_text("")
        self.tcp_port, self.udp_port = free_port(), free_port(socket.SOCK_DGRAM)
        engine = ('[engine]\nenabled = false\n' if args.model == "none" else
                  f'[engine]\nmodel = "{args.model}"\n' + (f"n_threads = {args.threads}\n" if args.threads else ""))
        cfg = (engine + f'[ingest.demo]\nenabled = false\n[ingest.syslog]\ntcp_port = {self.tcp_port}\n'
               f'udp_port = {self.udp_port}\n[ingest.tail]\nfiles = ["{self.tail}"]\npoll_s = 0.1\n'
               f'[ingest.mqtt]\nenabled = true\nport = {self.mqtt_port}\ntopics = ["factory/+/logs"]\n'
               f'[alerts]\nmqtt_publish = true\nmqtt_port = {self.mqtt_port}\n')
        if self.engine_cpus:
            os.sched_setaffinity(0, self.engine_cpus)
        try:
            self.server = Served(self.tmp, cfg, data_dir=self.data, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                 linegate=os.path.abspath(self.args.linegate) if self.args.linegate else None)
        finally:
            if self.engine_cpus:
                os.sched_setaffinity(0, self.load_cpus)
        self.api_port, self.key = self.server.port, self.server.key
        self.codes: dict[int, int] = {}
        self.transport_errors: dict[str, int] = {}
        self._lock = threading.Lock()
        self.http = self.client()
        self.alert_ids: set[int] = set()
        self.chat_s: list[float] = []
        self.chat_stages: list[list[dict]] = []   # per answer, its queries' stage timings (ms)
        self.chat_asked: list[tuple[str, str]] = []   # per answer, the question and the answer's text
        self.chat_refusals: list[dict] = []
        self.questions = {"asked": 0, "refused": 0, "failed": 0}
        self.samples: list[dict] = []
        self.summaries = SummarySample()
        self.storm_sent = 0
        self.server_threads_cpus: list[str] = []

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}", timeout=120,
                            headers={"Authorization": f"Bearer {self.key}"},
                            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_S))

    def status(self, code: int) -> None:
        with self._lock:
            self.codes[code] = self.codes.get(code, 0) + 1

    def call(self, method: str, url: str, client: httpx.Client | None = None, **kw) -> httpx.Response | None:
        """One request; a transport failure (no HTTP status) is counted apart, never as a 5xx."""
        try:
            r = (client or self.http).request(method, url, **kw)
        except httpx.TransportError as exc:
            name = type(exc).__name__
            with self._lock:
                self.transport_errors[name] = self.transport_errors.get(name, 0) + 1
            return None
        self.status(r.status_code)
        return r

    def wait_ready(self) -> None:
        t0 = time.monotonic()
        while True:
            try:
                r = self.http.get("/api/stats")
                if r.status_code == 200 and r.json().get("ready"):
                    return
            except httpx.TransportError:
                pass
            if not self.server.alive() or time.monotonic() - t0 > 600:
                raise SystemExit(f"soak: server did not become ready; see {self.tmp / 'server.log'}")
            time.sleep(0.5)

    def subscribe_alerts(self):
        import paho.mqtt.client as mqtt
        sub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="soak-alerts")
        sub.on_message = lambda c, u, m: (self.alert_ids.add(json.loads(m.payload)["id"])
                                          if b'"event": "alert"' in m.payload else None)
        sub.on_connect = lambda c, u, f, rc, p: c.subscribe("linegate/alerts/#", qos=1)
        sub.connect("127.0.0.1", self.mqtt_port)
        sub.loop_start()
        time.sleep(0.5)
        return sub

    def stats_params(self) -> dict:
        """/api/stats with the last summaries the model read (none without a model: no feed)."""
        return {"summaries": SUMMARIES_PER_SAMPLE} if self.args.model != "none" else {}

    def sample(self, t_s: float, senders: list[Sender]) -> None:
        """One sample: RSS, the reading lag (the queue's, and the oldest unread line's, open summaries
        included), the ingest backlog, /health's answer time; and the last summaries the model read."""
        th = time.monotonic()
        h = self.call("GET", "/health")
        health_ms = (time.monotonic() - th) * 1000 if h is not None and h.status_code == 200 else None
        r = self.call("GET", "/api/stats", params=self.stats_params())
        if r is None or r.status_code != 200:
            return
        st = r.json()
        tq = st.get("token_queue") or {}
        self.summaries.add(tq.get("recent_summaries") or [])
        self.samples.append({"t_s": round(t_s, 1), "rss_mb": round(rss_mb(self.server.pid), 1),
                             "lag_s": round(tq.get("lag_s") or 0.0, 2),
                             "oldest_unread_s": round(tq.get("oldest_unread_s") or 0.0, 2),
                             "backlog_lines": sum(s.acked for s in senders) - st["ingest"]["lines"],
                             "health_ms": round(health_ms, 1) if health_ms is not None else None})

    def ask_loop(self, t0: float, end: float, stop: threading.Event) -> None:
        """The operator: a question every --question-s after the last answer, on its own thread and client
        so that the samples go on while the engine answers (when the reading lag peaks)."""
        http = self.client()
        q_i = 0
        next_q = t0 + self.args.question_s
        while not stop.wait(max(0.0, next_q - time.monotonic())) and time.monotonic() < end:
            self.ask(http, QUESTIONS[q_i % len(QUESTIONS)], time.monotonic() - t0)
            q_i += 1
            next_q = time.monotonic() + self.args.question_s
        http.close()

    def ask(self, http: httpx.Client, question: str, t_s: float) -> None:
        """One operator question: answered (200), refused (an HTTP error answer, kept for the report) or
        failed (no HTTP answer)."""
        tq = time.monotonic()
        self.questions["asked"] += 1
        r = self.call("POST", "/v1/chat/completions", http, json={
            "messages": [{"role": "user", "content": question}], "max_tokens": 48})
        if r is None:
            self.questions["failed"] += 1
        elif r.status_code == 200:
            self.chat_s.append(time.monotonic() - tq)
            body = r.json()
            choices = body.get("choices") or [{}]
            self.chat_asked.append((question, str((choices[0].get("message") or {}).get("content") or "")))
            # the answer's stages (its query sources' timing, its wait for the engine among them); the rest
            # of its latency is HTTP and the route
            self.chat_stages.append([{**s["timing"], "call": s.get("call")} for s in body.get("sources") or []
                                     if isinstance(s, dict) and s.get("timing")])
        else:
            self.questions["refused"] += 1
            if len(self.chat_refusals) < 50:   # why: kept for the report
                self.chat_refusals.append({"t_s": round(t_s, 1), "code": r.status_code,
                                           "detail": r.json().get("detail") if r.headers.get(
                                               "content-type", "").startswith("application/json") else r.text[:200]})

    def drive(self, senders: list[Sender]) -> None:
        """The run itself: samples and storms on their clocks, questions on theirs (ask_loop), until
        --minutes is over."""
        a = self.args
        t0 = time.monotonic()
        end = t0 + a.minutes * 60
        for s in senders:
            s.start()
        stop = threading.Event()
        asker = threading.Thread(target=self.ask_loop, args=(t0, end, stop), name="soak-questions", daemon=True)
        asker.start()
        next_storm, next_sample = t0 + min(a.storm_s, 60.0), t0
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_sample:
                self.sample(now - t0, senders)
                next_sample += a.sample_s
            if now >= next_storm:
                r = self.call("POST", "/api/ingest", content=storm_body())
                self.storm_sent += STORM_LINES if r is not None and r.status_code == 200 else 0
                next_storm += a.storm_s
            time.sleep(0.2)
        stop.set()
        for s in senders:
            s.stop.set()
        for s in senders + [asker]:
            s.join(120)

    def drain(self, acked_total: int) -> float:
        """Wait until the server counted every acknowledged line, or made no progress for 30 s."""
        t0 = time.monotonic()
        last, still = -1, 0
        while time.monotonic() < t0 + 1800:
            r = self.call("GET", "/api/stats")
            n = r.json()["ingest"]["lines"] if r is not None and r.status_code == 200 else last
            still = still + 1 if n == last else 0
            if n >= acked_total or still >= 30:
                break
            last = n
            time.sleep(1)
        return time.monotonic() - t0

    def stop(self) -> None:
        self.server.stop(timeout_s=120)
        self.broker.close()


def report(run: Soak, senders: list[Sender], final: dict, rss_end: float, drain_s: float) -> dict:
    """The JSON line: per transport sent/acked/stored (read from the store), alerts, chat, RSS, 5xx."""
    a, samples = run.args, run.samples
    stored = count_stored(run.data / "logs.db")
    dups = stored.pop("_dups")
    per = {s.transport: {"sent": s.sent, "acked": s.acked, "stored": len(stored[s.transport]),
                         "send_errors": s.errors} for s in senders}
    syslog = final["ingest"]["sources"].get("syslog", {})
    udp_counted = syslog.get("overflow", 0) + syslog.get("udp_dropped_kernel", 0)
    warm = [x for x in samples if x["t_s"] >= min(60.0, a.minutes * 60 / 4)] or samples
    rss_start = warm[0]["rss_mb"] if warm else 0.0
    cols = ("t_s", "rss_mb", "lag_s", "oldest_unread_s", "backlog_lines", "health_ms")
    with open(run.out / "soak-samples.csv", "w") as f:
        f.write(",".join(cols) + "\n")
        f.writelines(",".join("" if x.get(c) is None else str(x[c]) for c in cols) + "\n" for x in samples)
    if len(samples) > 1:
        svg_plot(samples, run.out / "soak-rss-lag.svg")
    srt = sorted(run.chat_s)
    udp_uncounted = max(0, per["udp"]["sent"] - per["udp"]["stored"] - udp_counted)
    lost = sum(max(0, per[t]["acked"] - per[t]["stored"]) for t in ("tcp", "mqtt", "http", "tail"))
    return {
        "bench": "soak", "minutes": a.minutes, "rate_lines_s": a.rate, "model": a.model, "threads": a.threads,
        "variety": a.variety, "templates_per_transport": a.templates if a.variety == "high" else None,
        "cpu": cpu_here()["model_name"], "nproc": os.cpu_count(),
        "lines_sent": sum(s.sent for s in senders), "lines_acked": sum(s.acked for s in senders),
        "lines_stored": sum(len(v) for v in stored.values()), "storm_lines": run.storm_sent,
        "lines_lost": lost, "duplicates": dups, "udp_dropped_counted": udp_counted, "udp_lost_uncounted": udp_uncounted,
        # acknowledged and not stored, plus UDP lines neither stored nor counted as dropped by the server
        "lines_lost_total": lost + udp_uncounted,
        "per_transport": per,
        "alerts_raised": final["alerts"].get("published", 0), "alerts_delivered_mqtt": len(run.alert_ids),
        "alerts_outbox_pending": final["alerts"].get("outbox_pending"),
        "chat_n": len(srt), "chat_p50_s": round(statistics.median(srt), 2) if srt else None,
        "chat_p99_s": round(srt[min(len(srt) - 1, int(0.99 * len(srt)))], 2) if srt else None,
        "rss_start_mb": rss_start, "rss_end_mb": round(rss_end, 1),
        "rss_growth_pct": round(100 * (rss_end - rss_start) / rss_start, 2) if rss_start else None,
        "http_5xx": sum(n for c, n in run.codes.items() if c >= 500), "http_codes": run.codes,
        "http_transport_errors": run.transport_errors, "drain_s": round(drain_s, 1),
        "chat_refused": run.questions["refused"], "chat_refusals": run.chat_refusals[:10],
        "admission": final.get("admission"),
        "token_queue_dropped_entries": (final.get("token_queue") or {}).get("dropped_entries"),
        "kv": {k: (final.get("engine") or {}).get(k) for k in
               ("kv_policy", "n_ring", "stream_total", "evicted_oldest", "evicted_important", "shifted_keys",
                "evict_seconds", "prefill_ms_per_tok_ema")},
        # issue 42 part 3: the stream read between jobs' steps (gateway/serve/job_reading.py)
        "reading_during_jobs": {k: (final.get("engine") or {}).get(k) for k in
                                ("read_during_jobs", "stream_chunks_during_jobs", "stream_tokens_during_jobs",
                                 "reads_skipped_deadline", "reads_stream_due", "reads_skipped_share", "reads_skipped_lost",
                                 "job_view_lost_tokens")},
        "samples": str(run.out / "soak-samples.csv"),
    } | issue42(run, final, lost + udp_uncounted)


def issue42(run: Soak, final: dict, lines_lost: int) -> dict:
    """Issue 42's figures (tools/bench/soak_judge.py): the reading lag, the token queue's counters, the
    questions, the sampled summaries against the store, the engine's CPUs and the `accept` block."""
    a, samples = run.args, run.samples
    half = a.minutes * 60 / 2
    lag = lag_figures(samples, "lag_s", half)
    health = [x["health_ms"] for x in samples if x.get("health_ms") is not None]
    checked = check_summaries(run.data / "logs.db", run.summaries.kept, len(run.summaries.seen))
    budget_s = AlertSettings().ttft_budget_ms / 1000   # the soak's config leaves the default
    questions = question_figures(run.questions["asked"], run.chat_s, run.questions["refused"],
                                 run.questions["failed"], budget_s)
    questions["stages_p50_ms"] = stage_figures(run.chat_s, run.chat_stages)
    (run.out / "soak-questions.json").write_text(json.dumps(
        [{"q": q, "answer": a, "s": round(t, 2), "stages": st}
         for t, st, (q, a) in zip(run.chat_s, run.chat_stages, run.chat_asked)], ensure_ascii=False) + "\n")
    (run.out / "soak-summaries.json").write_text(json.dumps(run.summaries.kept, ensure_ascii=False) + "\n")
    return {
        "engine_cpus": sorted(run.engine_cpus) or None, "load_cpus": sorted(run.load_cpus),
        "server_threads_cpus": run.server_threads_cpus,   # as /proc saw them at the end
        "reading_lag": lag, "oldest_unread": lag_figures(samples, "oldest_unread_s", half),
        "token_queue": queue_figures(final.get("token_queue") or {}),
        "questions": questions,
        "health_ms": {"p50": pct(health, 0.5), "p95": pct(health, 0.95), "max": max(health, default=None),
                      "unanswered": sum(x.get("health_ms") is None for x in samples)},
        "summaries_check": checked | {"file": str(run.out / "soak-summaries.json"),
                                      "examples": [x.get("text") for x in run.summaries.kept[:3]]},
        "summaries_checked": checked["checked"], "summaries_mismatched": checked["mismatched"],
        "accept": accept(lag, lines_lost, checked, a.model != "none", questions),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=2000.0, help="lines/s over all transports")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct", help="engine model, or 'none'")
    ap.add_argument("--threads", type=int, default=None, help="engine threads")
    ap.add_argument("--question-s", type=float, default=30.0)
    ap.add_argument("--storm-s", type=float, default=600.0)
    ap.add_argument("--sample-s", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=None, help="folder for the samples CSV and the SVG plot")
    ap.add_argument("--variety", choices=VARIETIES, default="default",
                    help="default: one template per transport; high: few repeats per template (soak_lines.py)")
    ap.add_argument("--templates", type=int, default=HIGH_TEMPLATES,
                    help="--variety high: templates per transport (each comes back every this many lines of it)")
    ap.add_argument("--engine-cpus", default=None, metavar="LIST",
                    help="CPUs of the served appliance, e.g. 1 or 0-1 (the load generator gets the others)")
    ap.add_argument("--linegate", default=None, help="the `linegate` to serve (default: this checkout's gateway)")
    run = Soak(ap.parse_args())
    run.wait_ready()
    sub = run.subscribe_alerts()
    ctx = {"tcp_port": run.tcp_port, "udp_port": run.udp_port, "mqtt_port": run.mqtt_port, "tail": run.tail,
           "status": run.status, "http": run.client(), "text": line_maker(run.args.variety, run.args.templates)}
    senders = [Sender(t, run.args.rate / len(TRANSPORTS), ctx) for t in TRANSPORTS]
    run.drive(senders)
    drain_s = run.drain(sum(s.acked for s in senders) + run.storm_sent)
    final = run.http.get("/api/stats", params=run.stats_params()).json()
    run.summaries.add((final.get("token_queue") or {}).pop("recent_summaries", None) or [])
    rss_end = rss_mb(run.server.pid)
    run.server_threads_cpus = threads_cpus(run.server.pid)
    run.stop()
    sub.loop_stop()
    sub.disconnect()
    result = report(run, senders, final, rss_end, drain_s)
    print("\n".join(summary_lines(result)), flush=True)
    print_result(result)


if __name__ == "__main__":
    main()
