"""LogRecord (the one shape every source produces), severity parsing, line clipping, counters.

Knows nothing about transports: syslog/tail/mqtt/ndjson/demo build records with these helpers.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import asdict, dataclass
from enum import IntEnum

# A line longer than this (in UTF-8 bytes) is cut and marked; 1 MB lines must not reach the
# store, the FTS index or the model. 16 KiB is twice the common syslog-over-TCP maximum (8 KiB).
MAX_LINE_BYTES = 16 * 1024
TRUNCATION_MARKER = " …[truncated {n} bytes]"
FRAME_CUT_MARKER = " …[truncated: frame over {limit} bytes]"
FRAME_END_MARKER = " …[truncated: connection closed mid-frame]"
MAX_HOST_CHARS = 255   # RFC 5424 HOSTNAME is at most 255 printable US-ASCII characters
MAX_SOURCE_CHARS = 64


class Severity(IntEnum):
    """Syslog severities (RFC 5424 §6.2.1): lower is more severe."""

    EMERGENCY = 0
    ALERT = 1
    CRITICAL = 2
    ERROR = 3
    WARNING = 4
    NOTICE = 5
    INFO = 6
    DEBUG = 7


_NAMES = {
    "emerg": Severity.EMERGENCY, "emergency": Severity.EMERGENCY, "panic": Severity.EMERGENCY,
    "alert": Severity.ALERT,
    "crit": Severity.CRITICAL, "critical": Severity.CRITICAL, "fatal": Severity.CRITICAL,
    "err": Severity.ERROR, "error": Severity.ERROR, "severe": Severity.ERROR, "failure": Severity.ERROR,
    "warn": Severity.WARNING, "warning": Severity.WARNING,
    "notice": Severity.NOTICE,
    "info": Severity.INFO, "information": Severity.INFO, "informational": Severity.INFO,
    "debug": Severity.DEBUG, "trace": Severity.DEBUG, "verbose": Severity.DEBUG,
}
# Level words as they appear inside free text ("2024-01-01 12:00 WARN pump ..."), upper-case only,
# so that "error" inside a sentence ("no error") does not raise the severity.
_LEVEL_IN_TEXT = re.compile(
    r"(?<![A-Za-z])(EMERG(?:ENCY)?|PANIC|ALERT|CRIT(?:ICAL)?|FATAL|ERR(?:OR)?|SEVERE|WARN(?:ING)?|NOTICE|INFO|DEBUG|TRACE)(?![A-Za-z])"
)
_TEXT_SCAN_CHARS = 160   # the level word sits near the start of a line


def severity_name(sev: int) -> str:
    return Severity(sev).name.lower()


def parse_severity(value: int | str | None, default: Severity = Severity.INFO) -> Severity:
    """A severity from a number 0..7 or a name ("warn", "WARNING", "err"); unknown -> `default`."""
    if value is None:
        return default
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return Severity(value) if 0 <= value <= 7 else default
    s = str(value).strip().lower()
    if s.isdigit():
        n = int(s)
        return Severity(n) if 0 <= n <= 7 else default
    return _NAMES.get(s, default)


def parse_severity_strict(value: int | str) -> Severity:
    """Like parse_severity but refuses unknown values (for config files and API parameters)."""
    sev = parse_severity(value, default=None)  # type: ignore[arg-type]
    if sev is None:
        raise ValueError(f"unknown severity {value!r}: use 0..7 or one of {sorted(set(_NAMES))}")
    return sev


def severity_from_text(text: str, default: Severity = Severity.INFO) -> Severity:
    """The first upper-case level word near the start of the line, else `default`."""
    m = _LEVEL_IN_TEXT.search(text, 0, _TEXT_SCAN_CHARS)
    return _NAMES[m.group(1).lower()] if m else default


def clip_text(text: str, limit: int = MAX_LINE_BYTES) -> tuple[str, bool]:
    """Cut `text` to at most `limit` UTF-8 bytes (on a character boundary) plus a marker."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text, False
    kept = raw[:limit].decode("utf-8", "ignore")
    return kept + TRUNCATION_MARKER.format(n=len(raw) - len(kept.encode("utf-8"))), True


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(text: str) -> tuple[str, int]:
    """Lone UTF-16 surrogates (valid in JSON text as "\\ud800", not encodable as UTF-8, so SQLite
    refuses them) -> U+FFFD. Returns the text and how many were replaced."""
    try:
        text.encode("utf-8")
        return text, 0
    except UnicodeEncodeError:
        return _SURROGATE.subn("\ufffd", text)


def decode_line(data: bytes, limit: int = MAX_LINE_BYTES) -> tuple[str, dict[str, int]]:
    """Bytes -> printable text: invalid UTF-8 replaced (U+FFFD), control bytes escaped, clipped.

    Returns the text and the problems found ({"invalid_utf8": 1, "binary": 1, "truncated": 1}).
    """
    problems: dict[str, int] = {}
    cut = len(data) > limit
    dropped = len(data) - limit
    if cut:
        data = data[:limit]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if cut and exc.end == len(data) and exc.start >= len(data) - 3:
            text = data[: exc.start].decode("utf-8")   # only the character split by the cut
        else:
            problems["invalid_utf8"] = 1
            text = data.decode("utf-8", "replace")
    if _CONTROL.search(text):
        problems["binary"] = 1
        text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    text = text.rstrip("\r\n")
    if cut:
        problems["truncated"] = 1
        text = text + TRUNCATION_MARKER.format(n=dropped)
    text, clipped = clip_text(text, limit + 64)   # escaping may grow the text
    if clipped:
        problems["truncated"] = 1
    return text, problems


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def escape_text(text: str) -> tuple[str, dict[str, int]]:
    """Decoded text (e.g. a JSON string) held to what decode_line makes of raw bytes: control
    characters escaped as \\xNN ("binary"), lone surrogates, which no UTF-8 can hold, replaced
    by U+FFFD ("invalid_utf8")."""
    problems: dict[str, int] = {}
    if _SURROGATE.search(text):
        problems["invalid_utf8"] = 1
        text = _SURROGATE.sub("\ufffd", text)
    if _CONTROL.search(text):
        problems["binary"] = 1
        text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text, problems


def clean_field(value: str, limit: int) -> str:
    value = _CONTROL.sub("?", scrub_surrogates(value)[0])
    return value[:limit]


@dataclass(slots=True)
class LogRecord:
    """One log line. `ts` is Unix seconds (float, UTC); `severity` a syslog code 0..7."""

    ts: float
    source: str
    host: str
    severity: int
    text: str

    @classmethod
    def make(cls, text: str, *, source: str, host: str = "", ts: float | None = None,
             severity: int | str | None = None) -> "LogRecord":
        """A record with clipped text; severity parsed from `severity` or, if None, from the text."""
        text, _ = clip_text(scrub_surrogates(text)[0])
        sev = parse_severity(severity) if severity is not None else severity_from_text(text)
        return cls(ts=time.time() if ts is None else float(ts), source=clean_field(source, MAX_SOURCE_CHARS),
                   host=clean_field(host, MAX_HOST_CHARS), severity=int(sev), text=text)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["severity"] = severity_name(self.severity)
        return d


class SourceCounters:
    """Per-source counters (records, malformed kinds); thread-safe; read by the appliance's stats()."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, dict[str, int]] = {}

    def add(self, source: str, key: str, n: int = 1) -> None:
        with self._lock:
            per = self._counts.setdefault(source, {})
            per[key] = per.get(key, 0) + n

    def add_problems(self, source: str, problems: dict[str, int]) -> None:
        for key, n in problems.items():
            self.add(source, key, n)

    def get(self, source: str, key: str) -> int:
        with self._lock:
            return self._counts.get(source, {}).get(key, 0)

    def snapshot(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {s: dict(c) for s, c in self._counts.items()}
