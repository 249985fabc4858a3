"""A source's format, learned once from its first lines: which header fields its lines carry, the
leading message columns that are really header (induction), and an operator's header pattern from the
config, which wins while it parses the source's lines, or a layout the model proposed where the
statistics found nothing (gateway.ingest.header_layout). What was learned is a JSON-able dict per source
(persisted by gateway.pipeline.triage, shown by /api/sources). Knows nothing about storage or HTTP.

Induction: the first INDUCE_LINES lines of a source are watched; leading columns of their messages
(after the general header rules of gateway.ingest.header) that keep one token *shape* (letters ->
a/A, digits -> 9) with a digit or capitals in it, in nearly every line, are header columns of that
source (ids, hosts, unit tags, counters); once learned they are cut from that source's messages.

Drift: each source counts, over its last DRIFT_WINDOW lines, those its learned format does not fit
(the columns' shapes, the pattern); past DRIFT_SHARE the format is learned again from the next lines.
"""

from __future__ import annotations

import re
import threading
from collections import Counter

from gateway.ingest.header import Header, _level, delimited_shape, match_ts, parse_ts, scan
from gateway.ingest.header_layout import PATTERN_FIELDS, layout_to_regex

INDUCE_LINES = 24                # lines of a source watched before its columns are decided
INDUCE_MIN_SHARE = 0.9           # share of lines a column must keep its shape in
MAX_INDUCED_COLUMNS = 4
MAX_SOURCES = 1024               # format state is kept for at most this many sources
DRIFT_WINDOW = 200               # lines a source's fit is judged over
DRIFT_SHARE = 0.5                # ... and the share that may not fit before it is learned again
EXAMPLE_CHARS = 200
UNSURE_TIME_SHARE = 0.5          # fewer sample lines with a time, and no columns: ask the model for a layout
VALIDATE_LINES = 50              # lines after the sample a proposed layout is judged on ...
MIN_VALIDATE_LINES = 10          # ... at least these many ...
ADOPT_SHARE = 0.9                # ... and the share it must parse


def shape(tok: str) -> str:
    """Letters -> a/A, digits -> 9, runs collapsed: "node-246" -> "a-9", "R02-M1" -> "A9-A9"."""
    out = []
    for ch in tok:
        c = "9" if ch.isdigit() else "A" if ch.isupper() else "a" if ch.isalpha() else ch
        if not out or out[-1] != c or c not in "9Aa":
            out.append(c)
    return "".join(out)


def induce_columns(messages: list[str]) -> list[str]:
    """Shapes of the leading columns that are header in (nearly) every message: a shape with a
    digit or two capitals, kept by >= INDUCE_MIN_SHARE of the lines, with a message left after."""
    split = [m.split() for m in messages]
    cols: list[str] = []
    for c in range(MAX_INDUCED_COLUMNS):
        shapes = Counter(shape(t[c]) for t in split if len(t) > c + 1)
        if not shapes:
            break
        sh, k = shapes.most_common(1)[0]
        if k < INDUCE_MIN_SHARE * len(split) or not (re.search(r"9", sh) or re.match(r"A[^a]*$", sh)):
            break
        values = Counter(t[c] for t in split if len(t) > c + 1)
        if len(values) == 1 and "9" not in sh and len(split) > 1 and sh == "A":
            break                                    # one constant capitalised word: a message word
        cols.append(sh)
    return cols


class HeaderPattern:
    """An operator's header pattern: a regular expression whose named groups are among
    PATTERN_FIELDS, with `message`; parse(line) -> Header or None when the line does not match."""

    def __init__(self, text: str) -> None:
        try:
            self.rx = re.compile(text)
        except re.error as exc:
            raise ValueError(f"header pattern {text!r} does not compile: {exc}") from None
        names = set(self.rx.groupindex)
        bad = names - set(PATTERN_FIELDS)
        if bad or "message" not in names:
            raise ValueError(f"header pattern {text!r}: named groups must be among {', '.join(PATTERN_FIELDS)} "
                             f"and include message (found {', '.join(sorted(names)) or 'none'})")
        self.text = text

    def parse(self, line: str, year: int | None = None) -> Header | None:
        m = self.rx.match(line)
        if not m:
            return None
        g = {k: v for k, v in m.groupdict().items() if v is not None}
        h = Header(message=g["message"].strip() or line, host=g.get("host"), component=g.get("component"))
        if g.get("ts"):
            h.ts_text = g["ts"]
            tm = match_ts(g["ts"], 0)
            h.ts = parse_ts(tm, year) if tm else None
        if g.get("level"):
            lv = _level(g["level"], loose=True)
            h.level, h.level_text = lv if lv else (g["level"].lower(), g["level"])
        if g.get("pid", "").isdigit() and len(g["pid"]) <= 10:
            h.pid = int(g["pid"])
        return h


def _fields_present(hs: list[Header]) -> dict[str, float]:
    n = max(1, len(hs))
    return {f: round(sum(getattr(h, a) is not None for h in hs) / n, 3)
            for f, a in (("time", "ts_text"), ("level", "level"), ("host", "host"), ("component", "component"),
                         ("pid", "pid"))}


def _kind(line: str, h: Header) -> str:
    s = line.lstrip()
    if s.startswith("{"):
        return "json"
    if h.message != line and "=" in line[:64] and line.split(None, 1)[0].count("=") == 1:
        return "key=value"
    if h.ts_text and any(c in line[:80] for c in "|\t"):
        return "delimited"
    return "text"


class SourceFormats:
    """parse(line, source, year) -> Header, learning each source's format on its first lines.
    formats() / set_formats(): the learned formats (JSON-able), to persist and show. Thread-safe."""

    def __init__(self, patterns: dict[str, str] | None = None, induce_lines: int = INDUCE_LINES) -> None:
        self.induce_lines = induce_lines
        self._lock = threading.Lock()
        self._patterns = {s: HeaderPattern(p) for s, p in (patterns or {}).items()}
        self._samples: dict[str, list[tuple[str, Header]]] = {}
        self._formats: dict[str, dict] = {}
        self._misfit: dict[str, list[int]] = {}     # source -> [lines judged, lines not fitting] this window
        self.relearned = 0                           # formats dropped for drift (learned again)
        self._recent: dict[str, list[str]] = {}      # unsure source -> its lines after the sample

    def parse(self, line: str, source: str = "", year: int | None = None) -> Header:
        pat = self._patterns.get(source)
        if pat is not None:
            h = pat.parse(line, year)
            self._judge(source, h is not None)
            if h is not None:
                return h
        fmt = self._formats.get(source)
        h = scan(line, year, fmt.get("delimited") if fmt else None)
        if fmt is None:
            self._learn(source, line, h)
            return h
        if fmt.get("unsure") and source not in self._patterns:
            recent = self._recent.setdefault(source, [])
            if len(recent) < VALIDATE_LINES:
                recent.append(line)
        cols = fmt.get("columns") or []
        if cols:
            self._judge(source, _apply_columns(h, cols))
        return h

    def _judge(self, source: str, fits: bool) -> None:
        """Counts a line against its source's format; too many misfits: learn the format again."""
        with self._lock:
            w = self._misfit.setdefault(source, [0, 0])
            w[0] += 1
            w[1] += not fits
            if w[0] < DRIFT_WINDOW:
                return
            if w[1] > DRIFT_SHARE * w[0] and source in self._formats:
                self._drop_pattern(source)
                self._formats.pop(source)
                self.relearned += 1
            w[0] = w[1] = 0

    def _learn(self, source: str, line: str, h: Header) -> None:
        with self._lock:
            if source in self._formats:
                return
            sample = self._samples.setdefault(source, [])
            sample.append((line, h))
            if len(sample) < self.induce_lines:
                return
            del self._samples[source]
            if len(self._formats) >= MAX_SOURCES:
                self._formats.pop(next(iter(self._formats)))
            kinds = Counter(_kind(x, hh) for x, hh in sample)
            shapes = [delimited_shape(x) for x, _ in sample]
            seps = Counter(d[0] for d in shapes if d)
            delimited = None
            if seps and seps.most_common(1)[0][1] >= INDUCE_MIN_SHARE * len(sample):
                sep = seps.most_common(1)[0][0]     # a message may hold the separator: the fewest fields
                delimited = min(d[1] for d in shapes if d and d[0] == sep)
            fields = _fields_present([hh for _, hh in sample])
            columns = induce_columns([hh.message for _, hh in sample])
            unsure = fields["time"] < UNSURE_TIME_SHARE and not columns and not delimited \
                and source not in self._patterns
            self._formats[source] = {
                "unsure": unsure, "sample": [x[:EXAMPLE_CHARS] for x, _ in sample[:8]] if unsure else [],
                "delimited": delimited,
                "columns": columns,
                "kind": kinds.most_common(1)[0][0], "lines": len(sample),
                "fields": fields,
                "example": sample[0][0][:EXAMPLE_CHARS],
                "origin": "config" if source in self._patterns else "induced"}

    def formats(self) -> dict[str, dict]:
        with self._lock:
            out = {k: dict(v) for k, v in self._formats.items()}
        for s, p in self._patterns.items():
            out.setdefault(s, {"origin": "config"})["pattern"] = p.text
        return out

    def _drop_pattern(self, source: str) -> None:
        """A model's pattern the source's lines left behind (drift): gone with the learned format."""
        fmt = self._formats.get(source)
        if fmt is not None and fmt.get("origin") == "model":
            self._patterns.pop(source, None)

    def unsure(self) -> list[tuple[str, list[str]]]:
        """(source, its first lines) of each source whose header the statistics did not find (no time
        in most lines, no columns) and for which no layout was tried yet."""
        with self._lock:
            return [(k, list(v["sample"])) for k, v in self._formats.items()
                    if v.get("unsure") and not v.get("proposed") and v.get("sample")]

    def adopt(self, source: str, layout: str | None) -> bool:
        """A proposed layout (gateway.ingest.header_layout) for an unsure source: kept if it parses at
        least ADOPT_SHARE of the source's lines seen since (with a time, when it names {ts}), else
        dropped; either way the source is not asked about again until its format is learned anew."""
        with self._lock:
            fmt = self._formats.get(source)
            recent = list(self._recent.get(source, []))
            if fmt is None:
                return False
            fmt["proposed"] = layout or ""
        try:
            pat = HeaderPattern(layout_to_regex(layout or ""))
        except ValueError:
            return False
        hs = [pat.parse(x) for x in recent]
        ok = sum(h is not None and ("(?P<ts>" not in pat.text or h.ts is not None) for h in hs)
        if len(recent) < MIN_VALIDATE_LINES or ok < ADOPT_SHARE * len(recent):
            return False
        with self._lock:
            self._patterns[source] = pat
            fmt.update(origin="model", pattern=pat.text, unsure=False, sample=[])
            self._recent.pop(source, None)
        return True

    def learning(self) -> int:
        """Sources whose first lines are still being watched."""
        with self._lock:
            return len(self._samples)

    def set_formats(self, formats: dict[str, dict | list]) -> None:
        """Formats saved earlier; a list is the columns alone (stores written before formats)."""
        with self._lock:
            for k, v in formats.items():
                self._formats[k] = {"columns": list(v), "origin": "induced"} if isinstance(v, list) else dict(v)
                if self._formats[k].get("origin") == "model" and self._formats[k].get("pattern"):
                    try:
                        self._patterns[k] = HeaderPattern(self._formats[k]["pattern"])
                    except ValueError:
                        self._formats[k]["origin"] = "induced"

    # The induced columns alone (what earlier versions persisted and tests read).
    def columns(self) -> dict[str, list[str]]:
        with self._lock:
            return {k: list(v.get("columns") or []) for k, v in self._formats.items()}


def _apply_columns(h: Header, cols: list[str]) -> bool:
    """Cuts the source's columns from the message into header fields; False when the line lacks them."""
    parts = h.message.split(None, len(cols))
    if len(parts) <= len(cols):
        return False
    for sh, tok in zip(cols, parts):
        if shape(tok) != sh:
            return False                              # this line does not have the source's columns
    for tok in parts[:len(cols)]:
        if tok.isdigit() and h.pid is None and len(tok) <= 10:
            h.pid = int(tok)
        elif h.host is None and re.search(r"\d", tok):
            h.host = tok
        elif h.component is None:
            h.component = tok
    h.message = parts[len(cols)]
    return True
