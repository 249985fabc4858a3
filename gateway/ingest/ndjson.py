"""NDJSON bodies (HTTP POST /api/ingest) -> LogRecords. The route itself is the server's.

One JSON object per line: {"text": "...", "host": "...", "severity": "warning" | 4,
"ts": 1700000000.0 | "2024-01-01T12:00:00Z", "source": "..."}; only "text" is required
("message"/"msg" are accepted for it). A line that is not such an object is stored as text
(what could be read) and counted as malformed; nothing is dropped silently.
"""

from __future__ import annotations

import json
import time
from datetime import datetime

from gateway.ingest.record import (MAX_HOST_CHARS, MAX_SOURCE_CHARS, LogRecord, clean_field, clip_text,
                                   decode_line, escape_text, parse_severity, scrub_surrogates,
                                   severity_from_text)

MAX_NDJSON_LINES = 100_000      # per body; the server also bounds the body's bytes
TEXT_KEYS = ("text", "message", "msg")
MAX_FUTURE_S = 86_400           # a timestamp further ahead than this is replaced by now
MAX_REASONS = 20                # malformed lines described one by one (line number, problems)


def _ts(value, now: float) -> tuple[float, bool]:
    if value is None:
        return now, True
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, (int, float)):
            t = float(value)
        else:
            t = datetime.fromisoformat(str(value)).timestamp()
        if not (0 <= t <= now + MAX_FUTURE_S):
            return now, False
        return t, True
    except (TypeError, ValueError, OverflowError):
        return now, False


def parse_ndjson(body: bytes, source: str = "http", problems: dict[str, int] | None = None,
                 reasons: list[dict] | None = None) -> tuple[list[LogRecord], int]:
    """Returns (records, malformed): every non-blank line yields a record; `malformed` counts the
    lines that needed repair (not JSON, not an object, no text, bad field, invalid UTF-8, cut).
    `problems`, when given, is incremented by kind (not_json, no_text, bad_field, invalid_utf8,
    binary, truncated, lone_surrogate); `reasons`, when given, gets {"line": n (1-based), "problems":
    [kinds]} for the first MAX_REASONS malformed lines. Raises ValueError only for a body over
    MAX_NDJSON_LINES lines."""
    found: dict[str, int] = problems if problems is not None else {}
    line_kinds: list[str] = []

    def count(kind: str) -> None:
        found[kind] = found.get(kind, 0) + 1
        if kind not in line_kinds:
            line_kinds.append(kind)

    def done(line_no: int, bad: bool) -> None:
        if bad and reasons is not None and len(reasons) < MAX_REASONS:
            reasons.append({"line": line_no, "problems": list(line_kinds) or ["bad_field"]})
        line_kinds.clear()

    lines = body.split(b"\n")
    if len(lines) > MAX_NDJSON_LINES + 1:
        raise ValueError(f"NDJSON body has {len(lines)} lines; the limit is {MAX_NDJSON_LINES} per request")
    now = time.time()
    records: list[LogRecord] = []
    malformed = 0
    for line_no, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        text, p = decode_line(raw)
        for kind in p:
            count(kind)
        bad = bool(p)
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, str):
            obj = {"text": obj}
        if not isinstance(obj, dict):
            count("not_json")
            records.append(LogRecord(now, clean_field(source, MAX_SOURCE_CHARS), "", int(severity_from_text(text)), text))
            malformed += 1
            done(line_no, True)
            continue
        body_text = next((obj[k] for k in TEXT_KEYS if isinstance(obj.get(k), str)), None)
        if body_text is None:
            body_text, bad = text, True         # keep the whole object as the line
            count("no_text")
        body_text, n_surrogates = scrub_surrogates(body_text)
        if n_surrogates:                        # JSON "\ud800": not UTF-8, the store would refuse it
            bad = True
            count("lone_surrogate")
        body_text, p = escape_text(body_text)   # as raw bytes are: no control characters stored
        for kind in p:
            count(kind)
        bad |= bool(p)
        body_text, cut = clip_text(body_text)
        ts, ok = _ts(obj.get("ts"), now)
        if cut:
            count("truncated")
        if not ok:
            count("bad_field")
        bad |= cut or not ok
        sev_raw = obj.get("severity")
        sev = parse_severity(sev_raw, default=None) if sev_raw is not None else None   # type: ignore[arg-type]
        if sev_raw is not None and sev is None:
            bad = True
            count("bad_field")
        if sev is None:
            sev = severity_from_text(body_text)
        host = obj.get("host")
        src = obj.get("source")
        if (host is not None and not isinstance(host, str)) or (src is not None and not isinstance(src, str)):
            bad = True
            count("bad_field")
        elif any(isinstance(v, str) and scrub_surrogates(v)[1] for v in (host, src)):
            bad = True                          # clean_field replaces them
            count("lone_surrogate")
        host = clean_field(host if isinstance(host, str) else "", MAX_HOST_CHARS)
        src = clean_field(src if isinstance(src, str) and src else source, MAX_SOURCE_CHARS)
        records.append(LogRecord(ts, src, host, int(sev), body_text))
        malformed += bad
        done(line_no, bad)
    return records, malformed
