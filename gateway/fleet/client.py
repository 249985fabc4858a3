"""ClickHouse over its HTTP interface: a statement (with a body, for INSERT ... FORMAT JSONEachRow) to one
of several URLs, settings as URL parameters. Only what ClickHouse 18.16 (Debian 12) and current releases
share. Knows nothing about the tables.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import urllib.parse
from typing import Any, Iterable

MAX_ERROR_CHARS = 2_000       # of a server's error text kept in an exception


class ClickHouseError(RuntimeError):
    """The server answered with an error (it was reachable): `code` is ClickHouse's, when given."""

    def __init__(self, message: str, status: int, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class Unreachable(ConnectionError):
    """No URL answered (refused, reset, timed out): worth retrying later."""


class ClickHouseHttp:
    """query(sql, body=None, settings=None) -> text. URLs are tried in order from the last one that
    answered; one persistent connection per URL and thread."""

    def __init__(self, urls: Iterable[str], user: str = "default", password: str = "",
                 timeout_s: float = 30.0, database: str | None = None) -> None:
        self.urls = [u.rstrip("/") for u in urls]
        if not self.urls:
            raise ValueError("ClickHouseHttp: no URL")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self._headers = {"Authorization": f"Basic {token}"}
        self.timeout_s = float(timeout_s)
        self.database = database
        self._preferred = 0
        self._local = threading.local()
        self._open: set[http.client.HTTPConnection] = set()    # every thread's, for close()
        self._open_lock = threading.Lock()

    def _conn(self, url: str) -> http.client.HTTPConnection:
        conns = self._local.__dict__.setdefault("conns", {})
        conn = conns.get(url)
        if conn is None:
            u = urllib.parse.urlsplit(url)
            cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
            conn = conns[url] = cls(u.hostname, u.port or (8443 if u.scheme == "https" else 8123),
                                    timeout=self.timeout_s)
            with self._open_lock:
                self._open.add(conn)
        return conn

    def _drop(self, url: str) -> None:
        conn = self._local.__dict__.get("conns", {}).pop(url, None)
        if conn is not None:
            conn.close()
            with self._open_lock:
                self._open.discard(conn)

    def query(self, sql: str, body: bytes | None = None, settings: dict[str, Any] | None = None,
              once: bool = False) -> str:
        """The response text of one statement. With `body`, the statement goes in the URL and the body is
        its data (INSERT ... FORMAT ...). Raises ClickHouseError (an answer) or Unreachable (none).

        `once`: the statement is sent at most once: a fresh connection to each URL in turn until one connects,
        and any failure after that raises Unreachable (the server may have run it) instead of sending it again
        or to the next URL (the next call starts there). The shipper's INSERTs: a line sent again must be
        marked as such (gateway/fleet/shipper.py), so no layer below may resend it unmarked."""
        params = {k: str(int(v) if isinstance(v, bool) else v) for k, v in (settings or {}).items()}
        if self.database:
            params["database"] = self.database
        if body is None:
            data = sql.encode()
        else:
            params["query"] = sql
            data = body
        path = "/?" + urllib.parse.urlencode(params)
        errors = []
        n = len(self.urls)
        for k in range(n):
            i = (self._preferred + k) % n
            url = self.urls[i]
            try:
                if once:
                    self._drop(url)
                    self._conn(url).connect()          # refused or unreachable: nothing was sent, try the next
            except OSError as exc:
                self._drop(url)
                errors.append(f"{url}: {exc.__class__.__name__}: {exc}")
                continue
            try:
                status, text = self._post(url, path, data, retry=not once)
            except (OSError, http.client.HTTPException) as exc:
                self._drop(url)
                if once:
                    self._preferred = (i + 1) % n
                    raise Unreachable(f"{url}: {exc.__class__.__name__}: {exc} (the statement may have run)") from exc
                errors.append(f"{url}: {exc.__class__.__name__}: {exc}")
                continue
            self._preferred = i
            if status != 200:
                raise ClickHouseError(f"{url}: HTTP {status}: {text[:MAX_ERROR_CHARS].strip()}", status,
                                      _code(text))
            return text
        raise Unreachable("no ClickHouse URL answered: " + "; ".join(errors))

    def _post(self, url: str, path: str, data: bytes, retry: bool = True) -> tuple[int, str]:
        for attempt in (0, 1) if retry else (1,):   # a kept-alive connection the server closed: once more, fresh
            conn = self._conn(url)
            try:
                conn.request("POST", path, body=data, headers=self._headers)
                resp = conn.getresponse()
                text = resp.read().decode("utf-8", "replace")
                if resp.getheader("Connection", "").lower() == "close":
                    self._drop(url)
                return resp.status, text
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop(url)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def rows(self, sql: str, settings: dict[str, Any] | None = None) -> list[dict]:
        """A SELECT's rows as dicts (JSONEachRow; 64-bit integers as numbers)."""
        text = self.query(sql + " FORMAT JSONEachRow",
                          settings={"output_format_json_quote_64bit_integers": 0, **(settings or {})})
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def insert_json(self, table: str, lines: bytes, settings: dict[str, Any] | None = None,
                    statement: str | None = None, once: bool = False) -> None:
        """INSERT `lines` (JSONEachRow: one JSON object per line) into `table` (or by `statement`, an INSERT
        naming its columns); `once` as in query()."""
        self.query(statement or f"INSERT INTO {table} FORMAT JSONEachRow", body=lines, settings=settings, once=once)

    def close(self) -> None:
        """Closes the connections of every thread (call it when no thread uses the client any more)."""
        with self._open_lock:
            conns, self._open = self._open, set()
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def __enter__(self) -> "ClickHouseHttp":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _code(text: str) -> int | None:
    if text.startswith("Code: "):
        head = text[6:].split(",", 1)[0]
        return int(head) if head.isdigit() else None
    return None
