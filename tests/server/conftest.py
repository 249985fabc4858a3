"""Server test fixtures: appliance Settings under tmp_path, an engine-less appliance, an app, a key."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from gateway.alerts import AlertBus
from gateway.ingest.record import LogRecord
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.server.settings import ServerSettings
from gateway.settings import Settings
from gateway.store import Store


class StoreAppliance:
    """The appliance's server-facing parts with no engine: a real Store and a real AlertBus."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.store = Store(settings.store_path)
        self.alerts = AlertBus()
        self.registry = CollectorRegistry()
        self.ready = True
        self.worker = None

    def ingest(self, records):
        return self.store.append(records)

    def stats(self):
        return {"store": self.store.stats(), "alerts": self.alerts.stats()}

    def start(self):
        pass

    def stop(self):
        self.store.close()


def make_settings(tmp_path, **server) -> Settings:
    return Settings(data_dir=tmp_path, server=ServerSettings(**server))


@pytest.fixture
def settings(tmp_path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def appliance(settings):
    a = StoreAppliance(settings)
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
