"""GET /health: 503 until the appliance is ready, then 200; never needs a key."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from gateway.appliance import Appliance
from gateway.server.app import create_app
from gateway.settings import Settings


def test_503_until_ready_then_200(settings):
    appliance = Appliance(settings)            # not started: nothing loaded
    client = TestClient(create_app(appliance, settings))
    r = client.get("/health")
    assert r.status_code == 503 and r.json() == {"status": "loading", "ready": False, "reason": "loading"}
    appliance.start()
    try:
        r = client.get("/health")
        assert r.status_code == 200 and r.json() == {"status": "ok", "ready": True, "reason": None}
    finally:
        appliance.stop()


def test_a_corrupt_model_file_gives_503_with_the_reason(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"GGUF" + b"\x00\xff" * 4096)      # a GGUF magic, then garbage
    settings = Settings(data_dir=tmp_path / "data", engine={"enabled": True, "model": str(bad)},
                        ingest={"demo": {"enabled": False}})
    appliance = Appliance(settings).start()
    try:
        if appliance.engine_thread is not None:       # failed at load on the engine thread, or before it
            with pytest.raises(RuntimeError, match="engine failed to start"):
                appliance.engine_thread.wait_ready(30)
        r = TestClient(create_app(appliance, settings)).get("/health")
        body = r.json()
        assert r.status_code == 503 and body["status"] == "error" and not body["ready"]
        assert "engine failed to start" in body["reason"]
        assert appliance.ingest([]) == []                    # the store side still runs
    finally:
        appliance.stop()
