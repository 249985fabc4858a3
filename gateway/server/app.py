"""create_app(): the FastAPI app over a running appliance: routers, key check, limits, CORS, the static UI.

Knows nothing about how the appliance is built or started (gateway/server/cli.py and the
appliance do that); it reads the appliance's parts through deps.py.
"""

from __future__ import annotations

import json
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.resources import data_path
from gateway.sdnotify import notify
from gateway.server.auth import KeyStore, RateLimiter
from gateway.server.deps import KEYED_RESPONSES
from gateway.server.limits import BodyLimitMiddleware
from gateway.server.metrics import MetricsMiddleware, ServerMetrics
from gateway.server.routes import alerts, chat, health, ingest, logs, metrics, sources, stats
from gateway.server.settings import ServerSettings
from gateway.server.static import MemoryStatic

WEB_DIR = data_path("web")
# The UI loads only its own files; no inline script, so injected markup could not run even if
# some code path ever rendered log text as HTML.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _validation_error(_request: Request, exc: RequestValidationError) -> Response:
    """FastAPI's 422, with text the request carried that no UTF-8 holds (a lone surrogate) escaped:
    its own handler would fail to encode it and answer 500."""
    body = json.dumps({"detail": jsonable_encoder(exc.errors())}, ensure_ascii=True, default=str)
    return Response(body, status_code=422, media_type="application/json")


def create_app(appliance: Any, settings: Any, *, manage_appliance: bool = False) -> FastAPI:
    """The app serving `appliance`, configured by the appliance Settings (`settings.server`,
    `settings.data_dir`). With manage_appliance, the app's lifespan starts and stops the appliance."""
    server: ServerSettings = settings.server
    keys = KeyStore(server.key_path(settings.data_dir))

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        if manage_appliance:
            appliance.start()
            notify("READY=1")        # systemd Type=notify: started (the engine may still be loading)
        try:
            yield
        finally:
            if manage_appliance:
                notify("STOPPING=1")
                appliance.stop()

    # No /docs or /redoc: they load Swagger/ReDoc from a CDN, and the appliance has no internet
    # (the CSP would block them too). The schema itself is at /openapi.json.
    app = FastAPI(title="linegate", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Operator API of a linegate appliance: chat over the live line, alerts, "
                              "log search, stats. Every route but /health needs `Authorization: Bearer KEY`.")
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.state.appliance = appliance
    app.state.settings = settings
    app.state.server_settings = server
    app.state.keys = keys
    app.state.rate_limiter = RateLimiter(server.rate_limit_per_s, server.rate_limit_burst)
    app.state.failed_keys = RateLimiter(server.failed_key_per_s, server.failed_key_burst)   # per client address
    app.state.metrics = ServerMetrics()
    app.state.started = time.time()

    app.include_router(health.router)
    for module in (chat, alerts, logs, sources, stats, ingest, metrics):
        app.include_router(module.router, responses=KEYED_RESPONSES)

    web_dir = Path(server.web_dir) if server.web_dir else WEB_DIR
    if web_dir.is_dir():
        app.mount("/", MemoryStatic(web_dir), name="web")

    if server.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=server.cors_origins,
                           allow_methods=["GET", "POST"], allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(BodyLimitMiddleware, default_limit=server.max_body_bytes,
                       prefix_limits={"/api/ingest": server.max_ingest_body_bytes})
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    return app
