"""Every protected route: 401 without a key and with a wrong one; 413 over the body limit; 429 on a flood."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from fastapi.routing import APIRoute

import gateway.server.routes as routes_pkg
from fastapi.testclient import TestClient

from gateway.server.app import create_app
from gateway.appliance import Appliance
from tests.server.conftest import make_settings

PUBLIC = {"/health"}   # and the static UI (a Mount, not an APIRoute)


def all_api_routes() -> list[APIRoute]:
    """Every route of every module under gateway/server/routes (a new module is found by itself)."""
    out = []
    for info in pkgutil.iter_modules(routes_pkg.__path__):
        module = importlib.import_module(f"{routes_pkg.__name__}.{info.name}")
        out += [r for r in module.router.routes if isinstance(r, APIRoute)]
    return out


def protected_routes(app) -> list[tuple[str, str]]:
    out = []
    for r in all_api_routes():
        if r.path not in PUBLIC:
            for method in sorted(r.methods - {"HEAD", "OPTIONS"}):
                out.append((method, r.path.replace("{line_id}", "1")))
    return out


def test_route_enumeration_sees_every_router(client):
    paths = {p for _, p in protected_routes(client.app)}
    assert {"/v1/chat/completions", "/v1/models", "/api/alerts", "/api/alerts/stream", "/api/logs/search",
            "/api/stats", "/api/ingest", "/metrics"} <= paths
    # ...and the app serves exactly these routes (plus /health): nothing mounted elsewhere escapes the check.
    schema_paths = set(client.app.openapi()["paths"])
    assert schema_paths == {r.path for r in all_api_routes()}


def test_no_key_401_on_every_protected_route(client):
    for method, path in protected_routes(client.app):
        r = client.request(method, path, content=b"{}" if method == "POST" else None)
        assert r.status_code == 401, (method, path, r.status_code, r.text)
        assert r.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("header", ["Bearer lg_wrongwrongwrong", "Bearer ", "Basic dXNlcjpwYXNz", "lg_nobearer",
                                    "Bearer " + "x" * 5000])
def test_wrong_key_401_on_every_protected_route(client, key, header):
    for method, path in protected_routes(client.app):
        r = client.request(method, path, headers={"Authorization": header},
                           content=b"{}" if method == "POST" else None)
        assert r.status_code == 401, (method, path, r.status_code)


def test_near_miss_key_is_refused(client, key):
    near = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert client.get("/api/stats", headers={"Authorization": f"Bearer {near}"}).status_code == 401
    assert client.get("/api/stats", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert client.get("/api/stats", headers={"Authorization": f"bearer {key}"}).status_code == 200


def test_health_and_ui_need_no_key(client):
    assert client.get("/health").status_code == 200
    r = client.get("/")
    assert r.status_code == 200 and "linegate" in r.text
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert client.get("/app.js").status_code == 200


def test_oversized_bodies_413(client, auth, settings):
    limit = settings.server.max_body_bytes
    big = b"x" * (limit + 1)
    r = client.post("/v1/chat/completions", content=big, headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 413 and str(limit) in r.json()["detail"]

    def chunked():   # no Content-Length: the limit still holds
        for _ in range(limit // 4096 + 2):
            yield b"y" * 4096

    r = client.post("/v1/chat/completions", content=chunked(), headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 413

    def small_chunks():   # under the limit, chunked: replayed to the app intact
        yield b'{"text": "chunked '
        yield b'line"}\n'

    r = client.post("/api/ingest", content=small_chunks(), headers=auth)
    assert r.status_code == 200 and r.json()["accepted"] == 1
    ingest_limit = settings.server.max_ingest_body_bytes
    r = client.post("/api/ingest", content=b"z" * (ingest_limit + 1), headers=auth)
    assert r.status_code == 413 and str(ingest_limit) in r.json()["detail"]


def test_flood_429_with_retry_after(tmp_path):
    settings = make_settings(tmp_path, rate_limit_per_s=1.0, rate_limit_burst=5)
    appliance = Appliance(settings).start()
    try:
        from gateway.server.auth import KeyStore
        k1 = KeyStore(settings.server.key_path(tmp_path)).create()
        k2 = KeyStore(settings.server.key_path(tmp_path)).create()
        client = TestClient(create_app(appliance, settings))
        codes = [client.get("/api/stats", headers={"Authorization": f"Bearer {k1}"}).status_code for _ in range(20)]
        assert codes[:5] == [200] * 5 and codes.count(429) >= 14
        r = client.get("/api/stats", headers={"Authorization": f"Bearer {k1}"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        # the limit is per key: another key is unaffected
        assert client.get("/api/stats", headers={"Authorization": f"Bearer {k2}"}).status_code == 200
    finally:
        appliance.stop()


def test_cors_closed_by_default(client, auth):
    r = client.get("/api/stats", headers={**auth, "Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    r = client.options("/api/stats", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"})
    assert "access-control-allow-origin" not in r.headers
