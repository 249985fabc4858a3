"""GET /health: 503 until the appliance is ready, then 200; never needs a key."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.appliance import Appliance
from gateway.server.app import create_app


def test_503_until_ready_then_200(settings):
    appliance = Appliance(settings)            # not started: nothing loaded
    client = TestClient(create_app(appliance, settings))
    r = client.get("/health")
    assert r.status_code == 503 and r.json() == {"status": "loading", "ready": False}
    appliance.start()
    try:
        r = client.get("/health")
        assert r.status_code == 200 and r.json() == {"status": "ok", "ready": True}
    finally:
        appliance.stop()
