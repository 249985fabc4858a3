"""Request body size limit (pure ASGI middleware): a body over the limit gets 413 before the app runs.

A declared Content-Length over the limit is refused without reading; a chunked body is read up to
the limit and replayed to the app. Each part of a body must arrive within BODY_READ_TIMEOUT_S (else
408), so a client that stops sending mid-body does not hold its request for ever. Knows nothing about routes beyond a path prefix -> limit map.
"""

from __future__ import annotations

import asyncio
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


BODY_READ_TIMEOUT_S = 15.0


class BodyTimeout(Exception):
    pass


def timed(receive: Receive) -> Receive:
    """`receive` whose body messages must come within BODY_READ_TIMEOUT_S each (BodyTimeout); after
    the body, waiting (for a disconnect) is untimed."""
    done = False

    async def timed_receive() -> Message:
        nonlocal done
        if done:
            return await receive()
        try:
            message = await asyncio.wait_for(receive(), BODY_READ_TIMEOUT_S)
        except asyncio.TimeoutError:
            raise BodyTimeout from None
        done = message["type"] != "http.request" or not message.get("more_body", False)
        return message

    return timed_receive


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
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._limited(scope, timed(receive), send_tracked)
        except BodyTimeout:
            if not started:
                await _reply(send, 408, f"request body not received within {BODY_READ_TIMEOUT_S:g} s")

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
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
