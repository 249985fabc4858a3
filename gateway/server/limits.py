"""Request body size limit (pure ASGI middleware): a body over the limit gets 413 before the app runs.

A declared Content-Length over the limit is refused without reading; a chunked body is read up to
the limit and replayed to the app. Knows nothing about routes beyond a path prefix -> limit map.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, default_limit: int, prefix_limits: dict[str, int] | None = None):
        self.app = app
        self.default_limit = default_limit
        self.prefix_limits = dict(prefix_limits or {})

    def limit_for(self, path: str) -> int:
        for prefix, limit in self.prefix_limits.items():
            if path.startswith(prefix):
                return limit
        return self.default_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _reply(send, 400, "Content-Length is not an integer")
                    return
        if declared is not None:
            if declared > limit:
                await _reply(send, 413, f"request body of {declared} bytes is over the {limit}-byte limit "
                                        f"for {scope['path']}")
                return
            await self.app(scope, receive, send)
            return
        # No length declared (chunked): read it all, at most `limit` bytes, then replay it.
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":   # client went away
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await _reply(send, 413, f"request body is over the {limit}-byte limit for {scope['path']}")
                return
            chunks.append(body)
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
