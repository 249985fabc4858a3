"""The server under hostile load (issue 30): /health, the UI, stats and metrics answer while every
worker thread is stuck and while triage's lock is held; half-sent request heads are closed; an
abandoned non-streamed chat is cancelled; ingest replies say which lines were malformed and why."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn

import gateway.server.timeouts as timeouts
from gateway.server.app import create_app
from tests.server.conftest import serve_in_thread
from tests.server.stand_in_engine import StandInEngine

WORKER_THREADS = 40     # anyio's default thread limiter: the pool sync routes run in


def test_health_ui_stats_answer_while_every_worker_thread_is_stuck(appliance, settings, key, monkeypatch):
    stuck = threading.Event()
    monkeypatch.setattr(appliance.store, "search", lambda *a, **k: stuck.wait(30) and [])
    auth = {"Authorization": f"Bearer {key}"}
    with serve_in_thread(create_app(appliance, settings)) as url:
        blockers = [threading.Thread(target=lambda: httpx.get(url + "/api/logs/search", headers=auth, timeout=40))
                    for _ in range(WORKER_THREADS + 5)]
        for b in blockers:
            b.start()
        time.sleep(1.0)
        try:
            with httpx.Client(timeout=3) as c:
                assert c.get(url + "/health").status_code == 200
                assert c.get(url + "/").status_code == 200 and b"<html" in c.get(url + "/").content.lower()
                assert c.get(url + "/api/stats", headers=auth).status_code == 200
                assert c.get(url + "/metrics", headers=auth).status_code == 200
                assert c.get(url + "/app.js").status_code == 200
                assert c.get(url + "/no-such-file.js").status_code == 404
        finally:
            stuck.set()
            for b in blockers:
                b.join(40)


def test_stats_and_metrics_do_not_wait_for_triage(client, auth, appliance):
    got = {}

    def fetch():
        got["stats"] = client.get("/api/stats", headers=auth)
        got["metrics"] = client.get("/metrics", headers=auth)

    with appliance.triage._lock:                 # as held by an ingest's line update
        t = threading.Thread(target=fetch, daemon=True)
        t.start()
        t.join(10)
        assert not t.is_alive(), "stats waited for the triage lock"
    assert got["stats"].status_code == 200 and "templates_by_source" in got["stats"].json()["triage"]
    assert "linegate_triage_overflow_lines" in got["metrics"].text


def test_half_sent_request_heads_are_closed(appliance, settings, monkeypatch):
    monkeypatch.setattr(timeouts, "HEADER_TIMEOUT_S", 0.5)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(appliance, settings), log_level="warning",
                                           http=timeouts.TimedH11Protocol, timeout_keep_alive=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.settimeout(5)
            t0 = time.monotonic()
            assert slow.recv(1) == b""                   # closed by the server
            assert time.monotonic() - t0 < 3
        with httpx.Client() as c:                        # a whole request still works
            assert c.get(f"http://127.0.0.1:{port}/health").status_code == 200
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _slow_answer(h) -> None:
    """An answer that takes ~5 s (a token every 10 ms) unless cancelled."""
    n = 0
    while n < 500 and not h.cancelled:
        h._emit({"type": "token", "id": 1, "text": "x"})
        n += 1
        time.sleep(0.01)
    h._emit({"type": "done", "result": {"completion_tokens": n, "prompt_tokens": 10,
                                         "finish_reason": "cancelled" if h.cancelled else "length"}})


def test_abandoned_plain_chat_is_cancelled(appliance, settings, key, monkeypatch):
    engine = StandInEngine(_slow_answer)
    monkeypatch.setattr(appliance, "engine_thread", engine)
    with serve_in_thread(create_app(appliance, settings)) as url:
        port = int(url.rsplit(":", 1)[1])
        body = json.dumps({"messages": [{"role": "user", "content": "status?"}], "max_tokens": 500}).encode()
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        end = time.monotonic() + 5
        while not engine.handles and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.3)
        s.close()                                        # the client gives up
        while not engine.handles[0].cancelled and time.monotonic() < end:
            time.sleep(0.02)
        assert engine.handles[0].cancelled
        # a client that stays gets its whole answer
        r = httpx.post(url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                       json={"messages": [{"role": "user", "content": "status?"}], "max_tokens": 500})
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 500


@pytest.mark.parametrize("content", ['"half \\ud800 pair"', '[{"type": "text", "text": "\\udfff"}]'])
def test_lone_surrogate_in_chat_text_is_422(client, auth, content):
    body = '{"messages": [{"role": "user", "content": %s}]}' % content
    r = client.post("/v1/chat/completions", content=body, headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 422 and "unicode" in r.text.lower()


def test_failed_keys_are_throttled_per_client(client, auth, settings):
    codes = [client.get("/api/stats", headers={"Authorization": "Bearer wrong"}).status_code
             for _ in range(settings.server.failed_key_burst + 2)]
    assert codes[:settings.server.failed_key_burst] == [401] * settings.server.failed_key_burst
    assert codes[-1] == 429
    r = client.get("/api/stats", headers=auth)            # even the right key waits out the throttle
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert client.get("/health").status_code == 200
