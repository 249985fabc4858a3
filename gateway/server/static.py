"""The web UI's static files, read into memory once and served from the event loop: no file I/O, no
worker thread and no lock per request, so the UI loads while every worker thread is busy (issue 30).

Knows nothing of the API routes; mounted at "/" after them.
"""

from __future__ import annotations

import hashlib
import mimetypes
from pathlib import Path

from starlette.types import Receive, Scope, Send

MAX_UI_BYTES = 16 << 20     # the UI is small; a folder bigger than this is a mistake, refused at start


class MemoryStatic:
    """GET/HEAD of the files under `directory`; "/" and folders serve their index.html; else 404."""

    def __init__(self, directory: str | Path) -> None:
        root = Path(directory).resolve()
        self.files: dict[str, tuple[bytes, list[tuple[bytes, bytes]]]] = {}
        total = 0
        for p in sorted(root.rglob("*")):
            if not p.is_file():
                continue
            body = p.read_bytes()
            total += len(body)
            if total > MAX_UI_BYTES:
                raise ValueError(f"web folder {root} holds over {MAX_UI_BYTES} bytes")
            kind = mimetypes.guess_type(p.name)[0] or "application/octet-stream"
            if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
                kind += "; charset=utf-8"
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            headers = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()),
                       (b"etag", etag.encode())]
            rel = "/" + p.relative_to(root).as_posix()
            self.files[rel] = (body, headers)
            if p.name == "index.html":
                folder = rel[: -len("index.html")]
                self.files[folder] = (body, headers)
                if folder != "/":
                    self.files[folder.rstrip("/")] = (body, headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        path = scope["path"][len(scope.get("root_path", "")):] if scope.get("root_path") else scope["path"]
        found = self.files.get(path or "/")
        if scope["method"] not in ("GET", "HEAD"):
            status, body, headers = 405, b'{"detail":"Method Not Allowed"}', [(b"content-type", b"application/json"),
                                                                            (b"allow", b"GET, HEAD")]
        elif found is None:
            status, body, headers = 404, b'{"detail":"Not Found"}', [(b"content-type", b"application/json")]
        else:
            body, headers = found
            status = 200
            if (b"if-none-match", dict(headers)[b"etag"]) in scope.get("headers", []):
                status, body = 304, b""
        if status != 200:
            headers = [h for h in headers if h[0] != b"content-length"] + [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
