"""Soak: `linegate serve` (a subprocess, a real mosquitto) under mixed load for --minutes: lines at
--rate per second split over syslog TCP, syslog UDP, MQTT (QoS 1), HTTP NDJSON and a tailed file;
an operator question every --question-s; an alert storm every --storm-s. Samples the server's RSS,
engine lag and ingest backlog every --sample-s (a CSV and an SVG plot under --out).

At the end the store is read directly: every line carries its transport and sequence number, so
lost = acknowledged by the transport - stored (UDP: sent - stored - drops the server counted).
Not in `make test`. Last line of output: one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests import mqtt_broker                                                        # noqa: E402
from tools.bench.harness import Served, cpu_here, free_port, print_result, rss_mb  # noqa: E402

TRANSPORTS = ("tcp", "udp", "mqtt", "http", "tail")
TICK_S = 0.05
# uvicorn closes an idle keep-alive connection after 5 s; a client reusing one at that moment gets a
# reset that the server never saw as a request. Expire ours first.
KEEPALIVE_S = 2.0
QUESTIONS = ("How many error lines were there in the last minute?", "Which host logged the most lines recently?",
             "Were there any faults on line 3?", "最近一分钟有多少条错误日志？")
STORM_LINES = 200
STORM_KINDS = ("servo overcurrent", "vacuum loss", "encoder drift", "gripper timeout", "coolant low",
               "spindle stall", "label misfeed", "fieldbus dropout", "door interlock open", "torque limit")
LINE = re.compile(r"soak (tcp|udp|mqtt|http|tail) seq=(\d+) ")


def text(transport: str, n: int) -> str:
    return f"soak {transport} seq={n} cycle complete station {n % 7} count {n % 97}"


class Sender(threading.Thread):
    """Sends `rate` lines/s of one transport until stopped; `acked` counts what the transport
    acknowledged (HTTP 200, MQTT PUBACK from the broker, TCP/file written, UDP sent)."""

    def __init__(self, transport: str, rate: float, ctx: dict) -> None:
        super().__init__(name=f"send-{transport}", daemon=True)
        self.transport, self.rate, self.ctx = transport, rate, ctx
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
            sock.sendall(b"".join(b"<14>1 - soakhost app - - - %s\n" % text("tcp", n).encode() for n in ns))
            self.acked += len(ns)
        return send

    def _open_udp(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._close = sock.close

        def send(ns):
            for n in ns:
                sock.sendto(b"<14>1 - soakhost app - - - " + text("udp", n).encode(), ("127.0.0.1", self.ctx["udp_port"]))
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
        return lambda ns: [c.publish(f"factory/soak{n % 4}/logs", text("mqtt", n), qos=1) for n in ns]

    def _open_http(self):
        client = self.ctx["http"]

        def send(ns):
            body = "\n".join(json.dumps({"text": text("http", n), "host": "soak/http"}) for n in ns)
            r = client.post("/api/ingest", content=body)
            self.ctx["status"](r.status_code)
            if r.status_code == 200:
                self.acked += r.json()["accepted"]
        return send

    def _open_tail(self):
        f = open(self.ctx["tail"], "a", buffering=1 << 16)
        self._close = f.close

        def send(ns):
            f.write("".join(text("tail", n) + "\n" for n in ns))
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


def count_stored(db: Path) -> dict[str, set[int]]:
    seen: dict[str, set[int]] = {t: set() for t in TRANSPORTS}
    dups = 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    for (t,) in con.execute("SELECT text FROM logs WHERE text LIKE '%soak %'"):
        m = LINE.search(t)
        if m:
            s = seen[m.group(1)]
            n = int(m.group(2))
            dups += n in s
            s.add(n)
    con.close()
    seen["_dups"] = dups   # type: ignore[assignment]
    return seen


class Soak:
    """One run: a broker, `linegate serve` with every transport on, the HTTP client and its counts."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="soak-"))
        self.out = args.out or self.tmp
        self.out.mkdir(parents=True, exist_ok=True)
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
        self.server = Served(self.tmp, cfg, data_dir=self.data, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.api_port, self.key = self.server.port, self.server.key
        self.codes: dict[int, int] = {}
        self.transport_errors: dict[str, int] = {}
        self._lock = threading.Lock()
        self.http = self.client()
        self.alert_ids: set[int] = set()
        self.chat_s: list[float] = []
        self.chat_refusals: list[dict] = []
        self.samples: list[dict] = []
        self.storm_sent = 0

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=f"http://127.0.0.1:{self.api_port}", timeout=120,
                            headers={"Authorization": f"Bearer {self.key}"},
                            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_S))

    def status(self, code: int) -> None:
        with self._lock:
            self.codes[code] = self.codes.get(code, 0) + 1

    def call(self, method: str, url: str, **kw) -> httpx.Response | None:
        """One request; a transport failure (no HTTP status) is counted apart, never as a 5xx."""
        try:
            r = self.http.request(method, url, **kw)
        except httpx.TransportError as exc:
            name = type(exc).__name__
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

    def drive(self, senders: list[Sender]) -> None:
        """The run itself: samples, storms and questions on their clocks until --minutes is over."""
        a = self.args
        t0 = time.monotonic()
        for s in senders:
            s.start()
        next_q, next_storm, next_sample = t0 + a.question_s, t0 + min(a.storm_s, 60.0), t0
        q_i = 0
        while time.monotonic() < t0 + a.minutes * 60:
            now = time.monotonic()
            if now >= next_sample:
                r = self.call("GET", "/api/stats")
                if r is not None and r.status_code == 200:
                    st = r.json()
                    self.samples.append({"t_s": round(now - t0, 1), "rss_mb": round(rss_mb(self.server.pid), 1),
                                         "lag_s": round((st.get("token_queue") or {}).get("lag_s") or 0.0, 2),
                                         "backlog_lines": sum(s.acked for s in senders) - st["ingest"]["lines"]})
                next_sample += a.sample_s
            if now >= next_storm:
                lines = [json.dumps({"text": f"ERROR {STORM_KINDS[i % len(STORM_KINDS)]} on axis {i} code E{100 + i}",
                                     "host": f"line3/cell{i % 5}", "severity": "error"}) for i in range(STORM_LINES)]
                r = self.call("POST", "/api/ingest", content="\n".join(lines))
                self.storm_sent += STORM_LINES if r is not None and r.status_code == 200 else 0
                next_storm += a.storm_s
            if now >= next_q:
                tq = time.monotonic()
                r = self.call("POST", "/v1/chat/completions", json={
                    "messages": [{"role": "user", "content": QUESTIONS[q_i % len(QUESTIONS)]}], "max_tokens": 48})
                if r is not None and r.status_code == 200:
                    self.chat_s.append(time.monotonic() - tq)
                elif r is not None and len(self.chat_refusals) < 50:   # why: kept for the report
                    self.chat_refusals.append({"t_s": round(tq - t0, 1), "code": r.status_code,
                                               "detail": r.json().get("detail") if r.headers.get(
                                                   "content-type", "").startswith("application/json") else r.text[:200]})
                q_i += 1
                next_q = time.monotonic() + a.question_s
            time.sleep(0.2)
        for s in senders:
            s.stop.set()
        for s in senders:
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
    with open(run.out / "soak-samples.csv", "w") as f:
        f.write("t_s,rss_mb,lag_s,backlog_lines\n")
        f.writelines(f"{x['t_s']},{x['rss_mb']},{x['lag_s']},{x['backlog_lines']}\n" for x in samples)
    if len(samples) > 1:
        svg_plot(samples, run.out / "soak-rss-lag.svg")
    srt = sorted(run.chat_s)
    return {
        "bench": "soak", "minutes": a.minutes, "rate_lines_s": a.rate, "model": a.model,
        "cpu": cpu_here()["model_name"], "nproc": os.cpu_count(),
        "lines_sent": sum(s.sent for s in senders), "lines_acked": sum(s.acked for s in senders),
        "lines_stored": sum(len(v) for v in stored.values()), "storm_lines": run.storm_sent,
        "lines_lost": sum(max(0, per[t]["acked"] - per[t]["stored"]) for t in ("tcp", "mqtt", "http", "tail")),
        "duplicates": dups, "udp_dropped_counted": udp_counted,
        "udp_lost_uncounted": max(0, per["udp"]["sent"] - per["udp"]["stored"] - udp_counted),
        "per_transport": per,
        "alerts_raised": final["alerts"].get("published", 0), "alerts_delivered_mqtt": len(run.alert_ids),
        "alerts_outbox_pending": final["alerts"].get("outbox_pending"),
        "chat_n": len(srt), "chat_p50_s": round(statistics.median(srt), 2) if srt else None,
        "chat_p99_s": round(srt[min(len(srt) - 1, int(0.99 * len(srt)))], 2) if srt else None,
        "rss_start_mb": rss_start, "rss_end_mb": round(rss_end, 1),
        "rss_growth_pct": round(100 * (rss_end - rss_start) / rss_start, 2) if rss_start else None,
        "http_5xx": sum(n for c, n in run.codes.items() if c >= 500), "http_codes": run.codes,
        "http_transport_errors": run.transport_errors, "drain_s": round(drain_s, 1),
        "chat_refused": len(run.chat_refusals), "chat_refusals": run.chat_refusals[:10],
        "admission": final.get("admission"),
        "token_queue_dropped_entries": (final.get("token_queue") or {}).get("dropped_entries"),
        "kv": {k: (final.get("engine") or {}).get(k) for k in
               ("kv_policy", "n_ring", "stream_total", "evicted_oldest", "evicted_important", "shifted_keys",
                "evict_seconds", "prefill_ms_per_tok_ema")},
        # issue 42 part 3: the stream read between jobs' steps (gateway/serve/job_reading.py)
        "reading_during_jobs": {k: (final.get("engine") or {}).get(k) for k in
                                ("read_during_jobs", "stream_chunks_during_jobs", "stream_tokens_during_jobs",
                                 "reads_skipped_deadline", "reads_skipped_share", "reads_skipped_lost",
                                 "job_view_lost_tokens")},
        "samples": str(run.out / "soak-samples.csv"),
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
    run = Soak(ap.parse_args())
    run.wait_ready()
    sub = run.subscribe_alerts()
    ctx = {"tcp_port": run.tcp_port, "udp_port": run.udp_port, "mqtt_port": run.mqtt_port, "tail": run.tail,
           "status": run.status, "http": run.client()}
    senders = [Sender(t, run.args.rate / len(TRANSPORTS), ctx) for t in TRANSPORTS]
    run.drive(senders)
    drain_s = run.drain(sum(s.acked for s in senders) + run.storm_sent)
    final = run.http.get("/api/stats").json()
    rss_end = rss_mb(run.server.pid)
    run.stop()
    sub.loop_stop()
    sub.disconnect()
    print_result(report(run, senders, final, rss_end, drain_s))


if __name__ == "__main__":
    main()
