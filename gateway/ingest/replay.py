"""Replay a log file at N lines/s, either into a running appliance over HTTP (POST /api/ingest,
NDJSON, Bearer key) or into any in-process sink. Knows nothing about the appliance's inside.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Iterator

from gateway.ingest.record import MAX_LINE_BYTES, LogRecord, decode_line, severity_from_text

SOURCE = "replay"
BATCHES_PER_S = 10          # pacing grain: rate/10 lines every 100 ms
HTTP_TIMEOUT_S = 30
MAX_RATE = 1_000_000


def read_lines(path: str | Path, loop: bool = False) -> Iterator[str]:
    """Lines of `path` as text (bad UTF-8 replaced, over-long lines cut at MAX_LINE_BYTES)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"replay: {path} is not a file")
    while True:
        with open(path, "rb") as f:
            for raw in f:
                text, _ = decode_line(raw[: MAX_LINE_BYTES + 1])
                if text.strip():
                    yield text
        if not loop:
            return


def paced(lines: Iterator[str], rate: float, send: Callable[[list[str]], int],
          max_lines: int | None = None, max_seconds: float | None = None) -> dict:
    """Send `lines` in batches so that about `rate` lines/s go out; `send(batch) -> acknowledged`.
    Returns {sent, acknowledged, seconds, rate}."""
    if not 0 < rate <= MAX_RATE:
        raise ValueError(f"--rate {rate} must be within (0, {MAX_RATE}] lines/s")
    per_batch = max(1, int(rate / BATCHES_PER_S))
    t0 = time.monotonic()
    sent = acked = 0
    batch: list[str] = []
    for line in lines:
        if max_lines is not None and sent + len(batch) >= max_lines:
            break
        batch.append(line)
        if len(batch) >= per_batch:
            acked += send(batch)
            sent += len(batch)
            batch = []
            if max_lines is not None and sent >= max_lines:
                break
            if max_seconds is not None and time.monotonic() - t0 >= max_seconds:
                break
            ahead = t0 + sent / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    if batch:
        acked += send(batch)
        sent += len(batch)
    dt = time.monotonic() - t0
    return {"sent": sent, "acknowledged": acked, "seconds": dt, "rate": sent / dt if dt > 0 else 0.0}


def to_ndjson(lines: list[str], host: str) -> bytes:
    return b"".join(json.dumps({"text": t, "host": host, "source": SOURCE}, ensure_ascii=False).encode() + b"\n"
                    for t in lines)


def http_sender(url: str, key: str | None, host: str) -> Callable[[list[str]], int]:
    """A send() that POSTs NDJSON to URL/api/ingest and returns the lines the appliance stored."""
    endpoint = url.rstrip("/") + "/api/ingest"

    def send(batch: list[str]) -> int:
        headers = {"Content-Type": "application/x-ndjson"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(endpoint, data=to_ndjson(batch, host), headers=headers, method="POST")
        for attempt in range(5):
            try:
                with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
                    return int(json.loads(resp.read())["accepted"])
            except urllib.error.HTTPError as exc:
                if exc.code in (429, 503):            # back off as the appliance asks
                    time.sleep(float(exc.headers.get("Retry-After") or 1))
                    continue
                raise RuntimeError(f"replay: {endpoint} answered {exc.code}: {exc.read()[:200]!r}") from None
        raise RuntimeError(f"replay: {endpoint} kept refusing (429/503) after 5 attempts")

    return send


def record_sender(sink: Callable[[list[LogRecord]], list[int]], host: str) -> Callable[[list[str]], int]:
    """A send() into an in-process sink (e.g. Appliance.ingest)."""
    def send(batch: list[str]) -> int:
        now = time.time()
        return len(sink([LogRecord(now, SOURCE, host, int(severity_from_text(t)), t) for t in batch]))
    return send
