"""Back-pressure over HTTP with the real engine worker: a full job queue -> 429 + Retry-After; a job
admission control cannot fit in its first-token budget -> 503 + Retry-After. (SmolLM2-135M, queue of 1.)"""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from gateway.appliance import Appliance
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.server.settings import ServerSettings
from gateway.settings import Settings
from tests.server.conftest import MODEL_READY_S, serve_in_thread

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def busy_server(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("busy"),
                        server=ServerSettings(rate_limit_per_s=1000, rate_limit_burst=1000),
                        engine={"enabled": True, "model": "smollm2-135m-instruct", "n_ring": 128, "n_scratch": 384,
                                "queue_size": 1},
                        ingest={"demo": {"enabled": False}}, alerts={"ttft_budget_ms": 300_000})
    key = KeyStore(settings.server.key_path(settings.data_dir)).create()
    appliance = Appliance(settings)
    with serve_in_thread(create_app(appliance, settings, manage_appliance=True)) as url:
        assert appliance.engine_thread.wait_ready(MODEL_READY_S)
        yield url, {"Authorization": f"Bearer {key}"}, appliance


QUESTION = {"model": "linegate", "max_tokens": 8, "stream": True,
            "messages": [{"role": "user", "content": "Describe the state of the packaging line in detail, please."}]}


def test_full_queue_429_with_retry_after(busy_server):
    url, auth, appliance = busy_server
    # Hold the engine thread inside a job (its event callback runs on that thread and waits),
    # so the queue's one place is taken by the next request: deterministic on any machine.
    release, holding = threading.Event(), threading.Event()

    def hold(ev: dict) -> None:
        if ev["type"] == "token" and not holding.is_set():
            holding.set()
            release.wait(60)

    held = appliance.engine_thread.submit_chat([{"role": "user", "content": "hi"}], max_tokens=2,
                                        ttft_budget_ms=300_000, on_event=hold)
    assert holding.wait(60)
    queued = threading.Event()
    results: list[str] = []

    def ask() -> None:
        with httpx.stream("POST", url + "/v1/chat/completions", json=QUESTION, headers=auth, timeout=120) as r:
            assert r.status_code == 200
            for line in r.iter_lines():   # the first chunk comes right after the job is queued
                queued.set()
                if line == "data: [DONE]":
                    results.append("done")

    t = threading.Thread(target=ask, daemon=True)
    t.start()
    try:
        assert queued.wait(60)
        r = httpx.post(url + "/v1/chat/completions", json=QUESTION, headers=auth, timeout=60)
        assert r.status_code == 429, r.text
        assert int(r.headers["retry-after"]) >= 1 and "queue is full" in r.json()["detail"]
    finally:
        release.set()
    t.join(120)
    held.result(60)
    assert results == ["done"]            # the queued job was served in full once the engine was free


def test_admission_refusal_503_with_retry_after(busy_server):
    url, auth, appliance = busy_server
    budget = appliance.settings.alerts.ttft_budget_ms
    appliance.settings.alerts.ttft_budget_ms = 1.0     # no job can show its first token within 1 ms
    try:
        r = httpx.post(url + "/v1/chat/completions", json={**QUESTION, "stream": False}, headers=auth, timeout=60)
    finally:
        appliance.settings.alerts.ttft_budget_ms = budget
    assert r.status_code == 503, r.text
    assert int(r.headers["retry-after"]) >= 1 and "admission control refused" in r.json()["detail"]
    assert appliance.stats()["admission"]["refused"] >= 1
    # with its budget back, the same question is answered
    r = httpx.post(url + "/v1/chat/completions", json={**QUESTION, "stream": False}, headers=auth, timeout=120)
    assert r.status_code == 200 and json.loads(r.text)["choices"][0]["message"]["content"]


def test_client_disconnect_stops_the_engine(busy_server, monkeypatch):
    url, auth, appliance = busy_server
    handles = []
    submit = appliance.engine_thread.submit_chat

    def recording_submit(*args, **kwargs):   # the real submit; keeps the handle to look at the end
        handles.append(submit(*args, **kwargs))
        return handles[-1]

    monkeypatch.setattr(appliance.engine_thread, "submit_chat", recording_submit)
    long_answer = {**QUESTION, "max_tokens": 300,
                   "messages": [{"role": "user", "content": "Count from 1 to 500, separated by commas."}]}
    with httpx.stream("POST", url + "/v1/chat/completions", json=long_answer, headers=auth, timeout=120) as r:
        contents = 0
        for line in r.iter_lines():
            if '"content": "' in line and '"content": ""' not in line:
                contents += 1
            if contents == 3:
                break                      # the operator closes the tab
    result = handles[0].result(120)
    assert result["finish_reason"] == "cancelled" and result["completion_tokens"] < 300, result
