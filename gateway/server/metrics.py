"""The server's own Prometheus metrics (requests, chat tokens, refusals) and the middleware that counts.

The appliance's metrics live in its own registry; /metrics serves both. Label values are route
templates, never raw paths, so a scanner cannot blow up the label set.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("linegate_http_requests", "HTTP requests by route and status",
                                ["route", "method", "status"], registry=self.registry)
        self.latency = Histogram("linegate_http_request_seconds", "Time to the response's first byte",
                                 ["route"], registry=self.registry)
        self.chat_tokens = Counter("linegate_chat_completion_tokens", "Tokens streamed to chat clients",
                                   registry=self.registry)
        self.chat_refused = Counter("linegate_chat_refused", "Chat jobs refused, by reason",
                                    ["reason"], registry=self.registry)
        self.answer_checks = Counter("linegate_answer_checks", "Query answers checked against their result, "
                                     "by action (kept, cited, replaced)", ["action"], registry=self.registry)


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: ServerMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()

        async def send_counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                route = getattr(scope.get("route"), "path", None) or "unmatched"
                self.metrics.requests.labels(route, scope["method"], str(message["status"])).inc()
                self.metrics.latency.labels(route).observe(time.perf_counter() - t0)
            await send(message)

        await self.app(scope, receive, send_counted)
