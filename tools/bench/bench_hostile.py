"""Hostile-input benchmark (issue 30): a real `linegate serve` (SmolLM2, demo line on, one key) under
the probe's loads, measured from outside over HTTP and /proc:

  ingest   100,000 distinct never-seen lines in one request: its answer time; meanwhile a second
           client's 10-line ingests and /health (latencies, p99 / max); templates per source vs the cap
  abandon  200 abandoned /api/stats calls + 100 half-sent request heads: /health, /v1/models and GET /
           latencies while they are open; how many heads the server closed
  chat     a non-streamed chat right after one abandoned at 0.4 s, against the same chat on an idle
           engine (median of --chats each)
  leaks    --rounds rounds of 24 concurrent searches: fds, threads and RSS of the server before / after
  sigterm  SIGTERM during another 100,000-line ingest: seconds until the process is gone

`--repo DIR` serves another checkout (e.g. main, the peer before this change) with the same loads;
each phase has client-side timeouts, so a server that hangs yields figures, not a hung benchmark.
Last line of output: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
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

from tools.bench.harness import Served, cpu_here, print_result   # noqa: E402

HOSTILE_LINES = 100_000
PROBE_PERIOD_S = 0.05
CHAT = {"messages": [{"role": "user", "content": "Summarize the line's state in one sentence."}],
        "max_tokens": 32, "temperature": 0}
LONG_CHAT = {"messages": [{"role": "user", "content": "Write a long report on every station of the line."}],
             "max_tokens": 487, "temperature": 0}


def hostile_body(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return "\n".join(json.dumps({"text": f"u{rng.randrange(10**6)} v{rng.randrange(10**6)} k{rng.randrange(10**6)}"})
                     for _ in range(n)).encode()


class Server(Served):
    """The appliance under the probe's loads: `python -m gateway serve` from `repo`, SmolLM2, the demo line
    on, one key, a rate limit the loads do not reach."""

    CONFIG = ('[server]\nrate_limit_per_s = 1000.0\nrate_limit_burst = 1000\n'
              '[engine]\nmodel = "smollm2-135m-instruct"\n[ingest.demo]\nenabled = true\n'
              '[alerts]\nttft_budget_ms = 60000\n')   # latency is measured here, not admission

    def __init__(self, repo: Path, python: str, workdir: Path) -> None:
        super().__init__(workdir, self.CONFIG, python=python, cwd=repo, ready_timeout_s=300)

    def proc_figures(self) -> dict:
        pid = self.proc.pid
        status = Path(f"/proc/{pid}/status").read_text()
        field = {line.split(":")[0]: line.split(":")[1].strip() for line in status.splitlines() if ":" in line}
        targets = []
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except FileNotFoundError:      # closed meanwhile
                pass
        return {"fds": len(targets), "threads": int(field["Threads"]), "rss_mb": int(field["VmRSS"].split()[0]) / 1024,
                "db_handles": sum(t.endswith("logs.db") for t in targets)}


class Prober(threading.Thread):
    """GETs each path every PROBE_PERIOD_S until stopped; latencies (a timeout counts as its limit)."""

    def __init__(self, srv: Server, paths: list[str], timeout: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.srv, self.paths, self.timeout = srv, paths, timeout
        self.lat: dict[str, list[float]] = {p: [] for p in paths}
        self.failed = 0
        self.halt = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=self.timeout) as c:
            while not self.halt.is_set():
                for p in self.paths:
                    t0 = time.perf_counter()
                    try:
                        ok = c.get(self.srv.url + p, headers=self.srv.auth).status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    self.lat[p].append(time.perf_counter() - t0)
                    self.failed += not ok
                self.halt.wait(PROBE_PERIOD_S)

    def figures(self) -> dict:
        out = {}
        for p, xs in self.lat.items():
            xs = sorted(xs)
            out[p] = {"n": len(xs), "p99_s": round(xs[int(0.99 * (len(xs) - 1))], 4) if xs else None,
                      "max_s": round(xs[-1], 4) if xs else None}
        out["failed"] = self.failed
        return out


def small_ingests(srv: Server, halt: threading.Event, lat: list[float]) -> None:
    with httpx.Client(timeout=30) as c:
        i = 0
        while not halt.is_set():
            body = "\n".join(json.dumps({"text": f"second client line {j} of batch {i}", "host": "line9"})
                             for j in range(10))
            t0 = time.perf_counter()
            try:
                c.post(srv.url + "/api/ingest", content=body, headers=srv.auth).raise_for_status()
                lat.append(time.perf_counter() - t0)
            except httpx.HTTPError:
                lat.append(30.0)
            i += 1
            halt.wait(0.25)


def phase_ingest(srv: Server, seed: int, lines: int) -> dict:
    body = hostile_body(lines, seed)
    probe = Prober(srv, ["/health"])
    halt, small = threading.Event(), []
    side = threading.Thread(target=small_ingests, args=(srv, halt, small), daemon=True)
    probe.start()
    side.start()
    time.sleep(0.5)
    t0 = time.perf_counter()
    try:
        r = httpx.post(srv.url + "/api/ingest", content=body, headers=srv.auth, timeout=120)
        status, answer = r.status_code, (r.json() if r.headers.get("content-type", "").startswith("application/json")
                                         else r.text[:200])
    except httpx.HTTPError as exc:
        status, answer = None, repr(exc)
    took = time.perf_counter() - t0
    time.sleep(0.5)
    halt.set()
    probe.halt.set()
    side.join()
    probe.join()
    try:
        stats = httpx.get(srv.url + "/api/stats", headers=srv.auth, timeout=30).json()
    except httpx.HTTPError as exc:            # a peer whose stats wait for the classification
        stats = {"triage": {"error": repr(exc)}}
    tri = stats.get("triage", {})
    return {"body_bytes": len(body), "lines": lines, "status": status, "seconds": round(took, 2),
            "accepted": answer.get("accepted") if isinstance(answer, dict) else None,
            "second_client_max_s": round(max(small), 3) if small else None,
            "second_client_p99_s": round(sorted(small)[int(0.99 * (len(small) - 1))], 3) if small else None,
            "second_client_n": len(small), "health": probe.figures()["/health"],
            "templates": tri.get("templates"), "templates_by_source": tri.get("templates_by_source"),
            "template_cap_per_source": tri.get("template_cap_per_source"),
            "overflow_lines": tri.get("overflow_lines"), "unmined_lines": tri.get("unmined_lines")}


def phase_abandon(srv: Server) -> dict:
    host, port = "127.0.0.1", srv.port
    heads, t_heads = [], time.monotonic()
    probe = Prober(srv, ["/health", "/v1/models", "/"])
    probe.start()
    for _ in range(200):     # a whole request, then the client is gone before the answer
        s = socket.create_connection((host, port))
        s.sendall(f"GET /api/stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {srv.key}\r\n\r\n".encode())
        s.close()
    for _ in range(100):     # half a request head, kept open
        s = socket.create_connection((host, port))
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        heads.append(s)
    time.sleep(5.0)
    probe.halt.set()
    probe.join()
    closed = 0
    deadline = t_heads + 15.0
    for s in heads:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            closed += s.recv(1) == b""
        except (socket.timeout, OSError):
            pass
        s.close()
    return {"probe": probe.figures(), "half_heads": len(heads), "half_heads_closed_by_server_15s": closed}


def chat_once(srv: Server, body: dict) -> float:
    """Seconds to a complete answer; a 503 (engine busy, e.g. still prefilling a flood) is retried."""
    for _ in range(30):
        t0 = time.perf_counter()
        r = httpx.post(srv.url + "/v1/chat/completions", json=body, headers=srv.auth, timeout=120)
        if r.status_code != 503:
            r.raise_for_status()
            return time.perf_counter() - t0
        time.sleep(float(r.headers.get("retry-after", 1)))
    raise RuntimeError("chat refused 30 times")


def abandon_chat(srv: Server, after_s: float) -> None:
    payload = json.dumps(LONG_CHAT).encode()
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Authorization: Bearer {srv.key}\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
    time.sleep(after_s)
    s.close()


def phase_chat(srv: Server, n: int) -> dict:
    chat_once(srv, CHAT)                      # warm
    idle, after = [], []
    for _ in range(n):
        time.sleep(1.0)
        idle.append(chat_once(srv, CHAT))
        abandon_chat(srv, 0.4)
        after.append(chat_once(srv, CHAT))
    cancelled = httpx.get(srv.url + "/api/stats", headers=srv.auth, timeout=30).json().get("engine_thread", {}).get("jobs_cancelled")
    mi, ma = statistics.median(idle), statistics.median(after)
    return {"idle_s": round(mi, 3), "after_abandoned_s": round(ma, 3), "ratio": round(ma / mi, 2),
            "idle_all": [round(x, 3) for x in idle], "after_all": [round(x, 3) for x in after],
            "jobs_cancelled": cancelled}


def phase_leaks(srv: Server, rounds: int, settle_s: float) -> dict:
    def search(i: int) -> None:
        httpx.get(srv.url + "/api/logs/search", params={"q": f"line {i % 7}", "limit": 50},
                  headers=srv.auth, timeout=30)

    def round_(r: int) -> None:
        ts = [threading.Thread(target=search, args=(r * 24 + i,)) for i in range(24)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def settled() -> dict:
        time.sleep(settle_s)                  # idle worker threads expire (anyio: 10 s) ...
        search(0)                             # ... and are stopped at the pool's next use
        time.sleep(1.0)
        return srv.proc_figures()

    cold = settled()
    round_(0)                                 # warm-up: the read-connection pool grows to its bound
    before = settled()
    by_round = []
    for r in range(1, rounds + 1):
        round_(r)
        by_round.append(srv.proc_figures())
    peak = srv.proc_figures()
    after = settled()
    return {"rounds": rounds, "cold": cold, "before": before, "peak": peak, "after": after,
            "fds_by_round": [x["fds"] for x in by_round], "db_handles_by_round": [x["db_handles"] for x in by_round],
            "rss_growth_pct": round(100 * (after["rss_mb"] - before["rss_mb"]) / before["rss_mb"], 2)}


def phase_sigterm(srv: Server, seed: int, lines: int) -> dict:
    body = hostile_body(lines, seed)
    t = threading.Thread(target=lambda: _quiet_post(srv, body), daemon=True)
    t.start()
    time.sleep(1.5)
    return {"seconds": None if (s := srv.stop()) is None else round(s, 2), "exit_code": srv.proc.returncode}


def _quiet_post(srv: Server, body: bytes) -> None:
    try:
        httpx.post(srv.url + "/api/ingest", content=body, headers=srv.auth, timeout=60)
    except httpx.HTTPError:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, default=REPO, help="the checkout to serve (default: this one)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--lines", type=int, default=HOSTILE_LINES, help="never-seen lines in the hostile request")
    ap.add_argument("--chats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--settle-s", type=float, default=12.0)
    ap.add_argument("--skip", default="", help="comma-separated phases to skip")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    out: dict = {"bench": "hostile", "repo": str(args.repo), "cpu": cpu_here(),
                 "nproc": os.cpu_count(), "loadavg_start": os.getloadavg(), "nice": os.nice(0)}
    with tempfile.TemporaryDirectory(prefix="bench_hostile_") as tmp:
        srv = Server(args.repo.resolve(), args.python, Path(tmp))
        try:
            for name, run in (("ingest", lambda: phase_ingest(srv, 1, args.lines)), ("abandon", lambda: phase_abandon(srv)),
                              ("chat", lambda: phase_chat(srv, args.chats)),
                              ("leaks", lambda: phase_leaks(srv, args.rounds, args.settle_s)),
                              ("sigterm", lambda: phase_sigterm(srv, 2, args.lines))):
                if name in skip:
                    continue
                t0 = time.perf_counter()
                try:
                    out[name] = run()
                except Exception as exc:          # a stuck peer: record it, go on
                    out[name] = {"error": repr(exc)[:300]}
                print(name, json.dumps(out[name]), f"({time.perf_counter() - t0:.1f} s)", flush=True)
        finally:
            srv.stop(signal.SIGKILL)
    out["loadavg_end"] = os.getloadavg()
    i, a, c, lk = (out.get(k) if "error" not in out.get(k, {}) else {} for k in ("ingest", "abandon", "chat", "leaks"))
    i, a, c, lk = i or {}, a or {}, c or {}, lk or {}
    out["acceptance"] = {
        "ingest_answered_10s": i.get("status") is not None and i.get("seconds", 99) <= 10 if i else None,
        "second_client_1s": (i.get("second_client_max_s") or 99) <= 1.0 if i else None,
        "health_p99_0_5s": (i["health"]["p99_s"] or 99) <= 0.5 if i else None,
        "templates_capped": (all(n <= i["template_cap_per_source"] for n in (i.get("templates_by_source") or {}).values())
                             and bool(i.get("overflow_lines"))) if i and i.get("template_cap_per_source") else None,
        "abandon_0_5s": all((a["probe"][p]["max_s"] or 99) <= 0.5 for p in ("/health", "/v1/models", "/")) if a else None,
        "chat_1_5x": c.get("ratio", 99) <= 1.5 if c else None,
        # fds: SQLite keeps a closed connection's fd open while another connection of the process holds
        # a lock on the file (POSIX locks; reused by the next open), so the bound is the pool's peak
        "leaks_flat": (lk["after"]["threads"] <= lk["before"]["threads"] and lk["rss_growth_pct"] <= 5.0
                       and max(lk["db_handles_by_round"]) <= lk["db_handles_by_round"][0] + 4
                       and lk["after"]["fds"] <= lk["peak"]["fds"]) if lk else None,
        "sigterm_5s": (out["sigterm"].get("seconds") or 99) <= 5.0 if "sigterm" in out else None,
    }
    print_result(out)


if __name__ == "__main__":
    main()
