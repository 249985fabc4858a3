"""Server test fixtures: appliance Settings under tmp_path, an engine-less appliance, an app, a key."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
from fastapi.testclient import TestClient

from gateway.appliance import Appliance
from gateway.ingest.record import LogRecord
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.server.settings import ServerSettings
from gateway.settings import Settings


def make_settings(tmp_path, engine: bool = False, demo: bool = False, **server) -> Settings:
    """Settings under tmp_path; by default no engine and no demo line (store, triage, alerts run)."""
    return Settings(data_dir=tmp_path, server=ServerSettings(**server),
                    engine={"enabled": engine, "model": "smollm2-135m-instruct", "n_ring": 256, "n_scratch": 384},
                    ingest={"demo": {"enabled": demo}})


@pytest.fixture
def settings(tmp_path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def appliance(settings):
    a = Appliance(settings).start()
    yield a
    a.stop()


@pytest.fixture
def key(settings) -> str:
    return KeyStore(settings.server.key_path(settings.data_dir)).create(name="test")


@pytest.fixture
def client(appliance, settings, key) -> TestClient:
    return TestClient(create_app(appliance, settings))


@pytest.fixture
def auth(key) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def add_lines(appliance, *texts: str, host: str = "line3/plc", ts: float = 1_700_000_000.0) -> list[int]:
    return appliance.ingest([LogRecord.make(t, source="test", host=host, ts=ts + i) for i, t in enumerate(texts)])


@pytest.fixture
def live_server(appliance, settings, key):
    """(base URL, key) of the app under a real uvicorn on a free port, in a thread."""
    with serve_in_thread(create_app(appliance, settings)) as url:
        yield url, key


@contextlib.contextmanager
def serve_in_thread(app):
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


MODEL_READY_S = 300   # SmolLM2-135M loads in seconds; the shared CI box can be slow


@pytest.fixture(scope="session")
def model_server(tmp_path_factory):
    """(url, key, appliance): SmolLM2-135M reading the demo line (faults every few seconds), served by uvicorn."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("model"),
        server=ServerSettings(rate_limit_per_s=1000, rate_limit_burst=1000, max_chat_tokens=24),
        engine={"enabled": True, "model": "smollm2-135m-instruct", "n_ring": 256, "n_scratch": 384},
        # one jam early (its alert gets an explanation), then a quiet line: the one engine thread
        # (on a shared 2-core box) must not spend the test prefilling and explaining
        ingest={"demo": {"enabled": True, "cycle_s": 2.0, "first_fault_s": 0.0, "jam_every_s": 3600.0,
                         "overtemp_every_s": None, "estop_every_s": None}},
        alerts={"ttft_budget_ms": 120_000, "alert_budget_ms": 120_000, "explanation_max_tokens": 8,
                "explain": ["severity"]})
    key = KeyStore(settings.server.key_path(settings.data_dir)).create(name="model tests")
    appliance = Appliance(settings)
    with serve_in_thread(create_app(appliance, settings, manage_appliance=True)) as url:
        end = time.monotonic() + MODEL_READY_S
        while not appliance.ready and time.monotonic() < end:
            assert not (appliance.engine_thread and appliance.engine_thread.error), appliance.engine_thread.error
            time.sleep(0.2)
        assert appliance.ready, f"model not ready after {MODEL_READY_S} s"
        yield url, key, appliance
