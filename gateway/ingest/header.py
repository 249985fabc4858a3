"""Header fields of raw log lines, found without configuration: timestamp, level, host,
component/program, pid, and the message (the rest of the line).

Two steps, both general (no format is named after a product):

1. A scanner reads the line from the left, one token at a time, while the tokens look like a
   header: timestamps (ISO, syslog "Mon DD hh:mm:ss", "[Sun Dec 04 04:47:44 2005]", yy/mm/dd,
   yymmdd hhmmss, MM-DD hh:mm:ss.mmm, MM.DD hh:mm:ss, yyyymmdd-hh:mm:ss, epoch seconds), level
   words (INFO, [notice], Info, "D" before a tag), separators ("-", "|"), numbers after a
   timestamp (pid, tid), bracketed groups next to other header parts (thread, context), and a
   program token ("sshd[42]:", "kernel:", "org.x.Y:", "name[42] (ctx):") that ends the header.
   A plain word is header only when the header continues after it: a timestamp or level ahead
   (within a few tokens; the word must look like an identifier: digits, dots, dashes, capitals),
   a program token right after it (the syslog host), "-" after it (a program before its
   message), or, right after a level, an identifier followed by a column gap or a bracket.
2. Per source (gateway.ingest.source_format): columns learned from the source's first lines, and
   an operator's header pattern from the config.
3. Lines that name their own fields (JSON, logfmt: gateway.ingest.structured), and delimited
   headers ("ts|level|host|component|message", tabs, CSV).

Times without a zone are read as UTC; a syslog time without a year takes the year of the
line's arrival. The original text of the time is kept (ts_text).
"""

from __future__ import annotations

import itertools
import re
import time as _time
from collections.abc import Iterator
from dataclasses import dataclass

from gateway.ingest.header_time import _TS_PATTERNS, _parse_groups, match_ts, parse_ts  # noqa: F401 (re-exported)
from gateway.ingest.structured import SYSLOG_SEVERITIES, level_value, message_of, pairs_of, roles

MAX_HEADER_TOKENS = 16           # the header is within the first tokens of a line
LOOKAHEAD = 4                    # a word is header if a timestamp/level follows within this many

_LEVELS = {
    "emerg": "emergency", "emergency": "emergency", "panic": "emergency", "alert": "alert",
    "crit": "critical", "critical": "critical", "fatal": "critical", "severe": "error",
    "err": "error", "error": "error", "failure": "error", "warn": "warning", "warning": "warning",
    "notice": "notice", "info": "info", "information": "info", "informational": "info",
    "debug": "debug", "trace": "debug", "verbose": "debug", "fine": "debug", "finest": "debug",
    "alarm": "alert", "fault": "error", "dbg": "debug", "inf": "info", "ntc": "notice", "wrn": "warning", "crt": "critical",
    "ftl": "critical", "emr": "emergency",
    # Chinese level words (as written by Chinese PLC, MES and Java logging setups)
    "紧急": "emergency", "报警": "alert", "警报": "alert", "严重": "critical", "致命": "critical",
    "错误": "error", "故障": "error", "告警": "warning", "警告": "warning", "注意": "notice",
    "通知": "notice", "信息": "info", "提示": "info", "消息": "info", "调试": "debug", "跟踪": "debug",
}
_LETTER_LEVELS = {"V": "debug", "D": "debug", "I": "info", "W": "warning", "E": "error", "F": "critical", "A": "alert"}
_PROG = re.compile(r"(?P<c>[A-Za-z_$(][\w.\-/$()@#~+]*?|[\w.\-/]+)(?:\[(?P<p>\d+)\])?:$")
_PROG_NOCOLON = re.compile(r"(?P<c>[A-Za-z_][\w.\-/$()@#~+]*)\[(?P<p>\d+)\]$")
_IDENT = re.compile(r"[A-Za-z_$][\w.$\-/]*$")
_HEADERISH = re.compile(r"[\d._:\-/]|^[A-Z][A-Z0-9_]+$")
_SEPS = {"-", "|", "--", ":", "::"}
_PRI = re.compile(r"<\d{1,3}>")
_RFC5424 = re.compile(r"<\d{1,3}>1 (?P<ts>\S+) (?P<host>\S+) (?P<app>\S+) (?P<pid>\S+) \S+ (?:-|(?:\[(?:[^\]\\]|\\.)*\])+) ?")
_TOKEN = re.compile(r"\S+")
_DATED = re.compile(r"\d{4}[-_.]\d{2}[-_.]\d{2}")
_RECORD_NO = re.compile(r"#?\d+")
_LOOSE_LETTERS = frozenset("VDIWEF")    # a letter after the time is a level ("A" and others are words)
MAX_DELIMITED_FIELDS = 8
_DELIMITERS = ("|", "\t", ",", ";")
MAX_FIELD_CHARS = 256
_ZK_COMPONENT = re.compile(r"(?:^|[:/])(?P<c>[A-Za-z_$][\w.$]*)@\d+$")


@dataclass(slots=True)
class Header:
    """Header fields of one line; `message` is the line minus its header (the whole line if none)."""

    message: str
    ts: float | None = None
    ts_text: str | None = None
    level: str | None = None       # canonical name: error, warning, info, ...
    level_text: str | None = None  # as written
    host: str | None = None
    component: str | None = None
    pid: int | None = None


def stored_level(h: Header) -> str | None:
    """The level a line is stored and queried by: the word as written, lower-cased ("severe", "warn",
    "fatal": an operator asks for the log's own level words and BGL writes SEVERE beside ERROR), the
    canonical name for a one-letter level (logcat's "E")."""
    if h.level_text and len(h.level_text) > 1 and h.level_text.lower() in _LEVELS:
        return h.level_text.lower()
    return h.level


def _prog(tok: str) -> re.Match | None:
    """_PROG.match(tok); a token never ends in a newline, so only one ending in ":" can match."""
    return _PROG.match(tok) if tok[-1:] == ":" else None


def _level(tok: str, *, loose: bool) -> tuple[str, str] | None:
    """(canonical, as written) when `tok` is a level word: upper-case or Capitalized anywhere in
    the header ("INFO", "Info", "<WARN>", "ERROR:"); lower-case only where `loose` (right after a
    timestamp or in brackets)."""
    w = tok.strip("[]<>(),:")
    c = _LEVELS.get(w.lower())
    if c is None:
        return None
    if loose or w.isupper() or (w[:1].isupper() and w[1:].islower()) or (not w.isascii() and tok != w):
        return c, w
    return None


def _tokens(line: str, start: int) -> list[tuple[int, int]]:
    """Whitespace tokens; a "[...]" group is one token even with spaces inside (balanced)."""
    return list(itertools.islice(_iter_tokens(line, start), MAX_HEADER_TOKENS))


def _iter_tokens(line: str, start: int) -> Iterator[tuple[int, int]]:
    n = len(line)
    pos = start
    while True:
        for m in _TOKEN.finditer(line, pos):
            s, e = m.span()
            if line[s] == "[":
                i = _bracket_end(line, s, n)
                if i and (i >= n or line[i] in " \t,:"):
                    e2 = i + (1 if i < n and line[i] in ",:" else 0)
                    if e2 != e:                              # the group spans spaces (or ends inside
                        yield s, e2                          # the token): go on after it
                        pos = e2
                        break
            yield s, e
        else:
            return


class _Toks:
    """A line's header tokens, read as the scan needs them (most scans stop after a few of them)."""

    __slots__ = ("list", "_it")

    def __init__(self, line: str, start: int) -> None:
        self.list: list[tuple[int, int]] = []
        self._it = _iter_tokens(line, start)

    def upto(self, k: int) -> int:
        """Reads tokens until k are known or the line's first MAX_HEADER_TOKENS are; how many are known."""
        lst = self.list
        while len(lst) < k and len(lst) < MAX_HEADER_TOKENS:
            t = next(self._it, None)
            if t is None:
                break
            lst.append(t)
        return len(lst)


def _bracket_end(line: str, s: int, n: int) -> int:
    """Where the "[" at `s` is closed (the index after its "]", within 512 characters), else 0."""
    lim = min(n, s + 512)
    j = line.find("]", s + 1, lim)
    if j < 0:
        return 0
    if line.find("[", s + 1, j) < 0:
        return j + 1                                         # no nested group: the first "]" closes it
    depth, i = 0, s
    while i < lim:
        ch = line[i]
        depth += ch == "["
        depth -= ch == "]"
        i += 1
        if depth == 0:
            return i
    return 0


class _Scan:
    """State of one left-to-right header scan."""

    def __init__(self, line: str, year: int | None) -> None:
        self.line = line
        self.year = year
        self.h = Header(message=line)
        self.words: list[str] = []
        self.ctx: list[str] = []
        self.end = 0                    # character offset where the message starts
        self.ts_rank = 0
        self.pri_level: str | None = None  # the syslog PRI's severity ("<34>": 34 % 8 = critical)
        self.column = False             # the component is a column after the level (a later "word:" is the message's)

    def set_ts(self, m: re.Match) -> None:
        """The header's time: the first one, except that a written date and time replaces an epoch or
        a date alone before it (BGL writes both: operators read, and ask by, the written one)."""
        g = m.groupdict()
        written = bool(g.get("H") and (g.get("m") or g.get("b")))      # a date and a time of day
        rank = 2 if written and (g.get("Y") or g.get("y")) else 1      # 2: ... with its year
        year = self.year
        if rank == 1 and self.h.ts is not None and written:
            # "- 1131566461 2005.11.09 dn228 Nov 9 12:01:01": a written time without a year after an
            # epoch or a date takes their year, and wins as BGL's does
            rank, year = 2, _time.gmtime(self.h.ts).tm_year
        if self.h.ts_text is None or self.h.ts is None or rank > self.ts_rank:
            t = _parse_groups(g, year)
            if t is not None or self.h.ts_text is None:
                self.h.ts, self.h.ts_text = t, m.group(0).rstrip(",")
                self.ts_rank = rank


def _anchor_ahead(line: str, toks: list[tuple[int, int]], i: int) -> bool:
    for s, e in toks[i + 1:i + 1 + LOOKAHEAD]:
        tok = line[s:e]
        if match_ts(line, s) or _level(tok, loose=tok.startswith("[")):
            return True
        if tok.startswith("[") and match_ts(line, s + 1):
            return True
    return False


def _bracket(sc: _Scan, tok: str) -> bool:
    """A bracketed token: timestamp, level, or context. Returns True if it is a timestamp/level."""
    inner = tok.rstrip(",:")[1:-1].strip()
    m = match_ts(inner, 0)
    if m and m.end() >= len(inner.rstrip(",")) - 1:
        sc.set_ts(m)
        return True
    lv = _level(inner, loose=True)
    if lv and " " not in inner:
        if sc.h.level is None:
            sc.h.level, sc.h.level_text = lv
        return True
    return False


def _take_prog(sc: _Scan, m: re.Match) -> None:
    sc.h.component = m.group("c")
    if m.group("p"):
        sc.h.pid = int(m.group("p"))


def scan(line: str, year: int | None = None, delimited: int | None = None) -> Header:
    """Header fields of `line` by the general rules; `delimited`: the number of fields a delimited
    source's lines carry after their time (learned per source: gateway.ingest.source_format)."""
    sc = _Scan(line, year)
    start = 0
    if line.startswith("<") and _rfc5424(sc):
        return _finish(sc)
    if line[:1] == "{" or "=" in line[:64]:
        pairs = pairs_of(line)
        if pairs:
            return _structured(sc, pairs)
    pm = _PRI.match(line)
    if pm:
        start = pm.end()
        sc.pri_level = SYSLOG_SEVERITIES[int(pm.group(0)[1:-1]) % 8]
    if not _delimited_header(sc, start, delimited):
        _scan_tokens(sc, start)
    return _finish(sc)


def _scan_tokens(sc: _Scan, start: int) -> None:
    """The left-to-right token scan of a text header (module doc, step 1)."""
    line = sc.line
    lazy = _Toks(line, start)
    toks = lazy.list
    sc.end = start
    i = 0
    seen_ts = False
    while i < (n := len(toks) if len(toks) >= i + 2 + LOOKAHEAD else lazy.upto(i + 2 + LOOKAHEAD)):
        # (all an iteration reads: toks[i - 1 .. i + 1 + LOOKAHEAD])
        s, e = toks[i]
        tok = line[s:e]
        nxt = line[toks[i + 1][0]:toks[i + 1][1]] if i + 1 < n else ""
        m = match_ts(line, s)
        if m and (m.end() - s > 6 or seen_ts or i == 0 or not tok.isdigit()):
            sc.set_ts(m)
            seen_ts = True
            while i < lazy.upto(i + 1) and toks[i][0] < m.end():
                i += 1
            sc.end = max(m.end(), toks[i - 1][1])
            continue
        if tok in _SEPS and (i > 0 or _anchor_ahead(line, toks, i)):
            i += 1
            sc.end = e
            if i > 1 and (sc.h.level or sc.ctx or sc.h.component):
                break                                         # "... INFO [ctx] - message"
            continue
        lv = _level(tok, loose=seen_ts and sc.h.level is None and i > 0 and not tok.startswith("["))
        if lv is None and len(tok) == 1 and tok in _LETTER_LEVELS and (
                _prog(nxt) or (seen_ts and i > 0 and tok in _LOOSE_LETTERS and nxt[:1].isalnum())):
            lv = (_LETTER_LEVELS[tok], tok)
        if lv and sc.h.level is None and not tok.startswith("["):
            sc.h.level, sc.h.level_text = lv
            i += 1
            sc.end = e
            continue
        if tok.startswith("[") and tok.rstrip(",:").endswith("]"):
            if _bracket(sc, tok):
                seen_ts = seen_ts or sc.h.ts_text is not None
            elif (_prog(nxt) or _level(nxt, loose=False) or nxt in _SEPS
                  or (sc.h.component and sc.ctx == [] and i > 0)):
                sc.ctx.append(tok.rstrip(",:")[1:-1])
            else:
                break
            i += 1
            sc.end = e
            continue
        if sc.column:
            break        # past a column component, the message's ("Warning  CSI  3b3562d1 Warning: ...")
        if tok.isdigit() and ((seen_ts and not sc.h.level and not sc.h.component) or _anchor_ahead(line, toks, i)):
            if sc.h.pid is None and seen_ts and len(tok) <= 10:
                sc.h.pid = int(tok)
            i += 1
            sc.end = e
            continue
        pm = _prog(tok)
        if pm and sc.h.component is not None and sc.ctx == [] and i > 0 and line[toks[i - 1][1]:s].startswith("  "):
            break                                             # "Info   CBS    Session: ...": the message's word
        if pm and (seen_ts or sc.h.level or i == 0 or sc.words) and not tok.startswith("http"):
            _take_prog(sc, pm)
            sc.end = e
            break
        pm = _PROG_NOCOLON.match(tok) if tok[-1:] == "]" else None
        if pm and (seen_ts or sc.h.level) and nxt.startswith("(") and nxt.endswith("):"):
            _take_prog(sc, pm)
            sc.end = toks[i + 1][1]
            break
        if (sc.h.level and not sc.h.component and not sc.words and _IDENT.match(tok) and i + 1 < n
                and line[e:e + 2] == "  "):
            sc.h.component, sc.column = tok, True             # "Info   CBS    Session: ...": a column
            i += 1
            sc.end = e
            continue
        if _HEADERISH.search(tok) and _anchor_ahead(line, toks, i):
            if not _DATED.search(tok) and not _RECORD_NO.fullmatch(tok):   # a file name or a record number:
                                                                            # not a host
                sc.words.append(tok)
        elif (seen_ts or sc.h.level) and (_prog(nxt) or (_PROG_NOCOLON.match(nxt) and i + 2 < n
                                                                and line[toks[i + 2][0]].startswith("("))):
            sc.words.append(tok)                              # the syslog host
        elif (seen_ts or sc.h.level) and nxt == "-" and not sc.h.component and _IDENT.match(tok) and i + 2 < n:
            sc.h.component = tok                              # "program - message"
            i += 2
            sc.end = toks[i - 1][1]
            break
        elif (sc.h.level and not sc.h.component and _IDENT.match(tok) and i + 1 < n
              and (nxt.startswith("[") or line[e:e + 2] == "  ")):
            sc.h.component, sc.column = tok, True             # a column after the level
        else:
            break
        i += 1
        sc.end = e


def _rfc5424(sc: _Scan) -> bool:
    """"<PRI>1 TIMESTAMP HOST APP PROCID MSGID [SD] MSG" (RFC 5424); "-" is a missing field."""
    m = _RFC5424.match(sc.line)
    if not m:
        return False
    sc.pri_level = SYSLOG_SEVERITIES[int(sc.line[1:sc.line.index(">")]) % 8]
    tm = match_ts(m.group("ts"), 0)
    if tm:
        sc.set_ts(tm)
    else:
        sc.h.ts_text = None if m.group("ts") == "-" else m.group("ts")
    if m.group("host") != "-":
        sc.words.append(m.group("host"))
    if m.group("app") != "-":
        sc.h.component = m.group("app")
    if m.group("pid").isdigit() and len(m.group("pid")) <= 10:
        sc.h.pid = int(m.group("pid"))
    sc.end = m.end()
    return True


def _delimiter_after_time(line: str, start: int) -> tuple[re.Match, str, int] | None:
    """(the time, the separator after it, where that separator is) of a delimited header line."""
    m = match_ts(line, start)
    if not m:
        return None
    pos = m.end() - (1 if m.group(0).endswith(",") else 0)
    while pos < len(line) and line[pos] == " ":
        pos += 1
    sep = line[pos:pos + 1]
    if sep not in _DELIMITERS or line.count(sep, pos) < 2 or (sep == "," and line[pos + 1:pos + 2] == " "):
        return None
    return m, sep, pos


def delimited_shape(line: str) -> tuple[str, int] | None:
    """(separator, fields after the time) of a delimited header line; None for other lines."""
    pm = _PRI.match(line)
    found = _delimiter_after_time(line, pm.end() if pm else 0)
    return (found[1], line.count(found[1], found[2])) if found else None


def _delimited_header(sc: _Scan, start: int, n_fields: int | None = None) -> bool:
    """"ts|level|host|component|message" and the same with tabs, ";", " | " or (CSV, quotes kept
    whole) "," between fields: a timestamp, a separator, then fields; the last of `n_fields` (the
    source's count, else this line's) is the message, so a message may hold the separator once the
    source's count is known. Of the plain fields the first is the host and the last the component
    (syslog's order; a location between them is neither); one alone is the component."""
    line = sc.line
    found = _delimiter_after_time(line, start)
    if found is None:
        return False
    m, sep, pos = found
    sc.set_ts(m)
    fields, starts = _split_fields(line, pos + 1, sep)
    n = min(n_fields or len(fields), len(fields), MAX_DELIMITED_FIELDS)
    plain: list[str] = []
    for field in fields[:n - 1]:
        field = field.strip()
        if not field:
            continue
        lv = _level(field, loose=True) if sc.h.level is None else None
        if lv is None and len(field) == 1 and field in _LETTER_LEVELS and sc.h.level is None:
            lv = (_LETTER_LEVELS[field], field)
        if lv:
            sc.h.level, sc.h.level_text = lv
        elif field.isdigit() and sc.h.pid is None:
            sc.h.pid = int(field) if len(field) <= 10 else None
        else:
            plain.append(field[:MAX_FIELD_CHARS])
    if len(plain) >= 2:
        sc.words.append(plain[0])
        sc.h.component = plain[-1]
    elif plain:
        sc.h.component = plain[0]
    sc.end = starts[n - 1]
    rest = line[sc.end:].strip()
    if sep == "," and n == len(fields) and len(rest) >= 2 and rest[0] == rest[-1] == '"':
        sc.line = line[:sc.end] + rest[1:-1].replace('""', '"')
    return True


def _split_fields(line: str, pos: int, sep: str) -> tuple[list[str], list[int]]:
    """The fields from `pos` on and where each starts; a CSV field in double quotes is one field."""
    fields, starts = [], []
    while True:
        starts.append(pos)
        if sep == "," and line[pos:pos + 1] == '"':
            j = pos + 1
            while True:
                j = line.find('"', j)
                if j < 0 or line[j + 1:j + 2] != '"':
                    break
                j += 2
            j = line.find(sep, j) if j >= 0 else -1
        else:
            j = line.find(sep, pos)
        if j < 0:
            fields.append(line[pos:].strip('"'))
            return fields, starts
        fields.append(line[pos:j].strip('"'))
        pos = j + 1


def _structured(sc: _Scan, pairs: dict[str, object]) -> Header:
    """A JSON or logfmt line (gateway.ingest.structured): its own keys name its fields."""
    role = roles(pairs, lambda v: _full_ts(v) is not None, lambda v: _value_level(v) is not None)
    h = sc.h
    if "time" in role:
        v = pairs[role["time"]]
        h.ts_text = str(v)
        h.ts = _epoch(v) if isinstance(v, (int, float)) or str(v).isdigit() else None
        if h.ts is None:
            m = _full_ts(str(v))
            h.ts = parse_ts(m, sc.year) if m else None
    if "level" in role:
        lv = _value_level(pairs[role["level"]])
        if lv:
            h.level, h.level_text = lv
    for f in ("host", "component"):
        if f in role and pairs[role[f]] not in (None, ""):
            setattr(h, f, str(pairs[role[f]])[:MAX_FIELD_CHARS])
    if "pid" in role and str(pairs[role["pid"]]).isdigit() and len(str(pairs[role["pid"]])) <= 10:
        h.pid = int(str(pairs[role["pid"]]))
    h.message = message_of(pairs, role) or sc.line
    return h


def _full_ts(v: str) -> re.Match | None:
    m = match_ts(v.strip(), 0)
    return m if m and m.end() >= len(v.strip().rstrip(",")) - 1 else None


def _epoch(v: object) -> float | None:
    """Epoch seconds, milliseconds or microseconds (by magnitude)."""
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    for scale in (1.0, 1e3, 1e6, 1e9):
        if 1e9 <= x / scale < 1e10:
            return x / scale
    return None


def _value_level(v: object) -> tuple[str, str] | None:
    s = str(v).strip()
    if len(s) == 1 and s in _LETTER_LEVELS:
        return _LETTER_LEVELS[s], s
    lv = _level(s, loose=True)
    if lv:
        return lv
    p = level_value(s)
    return (p, s) if p else None


def _finish(sc: _Scan) -> Header:
    h = sc.h
    if h.level is None and sc.pri_level is not None:
        h.level = h.level_text = sc.pri_level
    words = [w for w in sc.words if w not in _SEPS]
    if words:
        h.host = words[0]
        if h.component is None and len(words) > 1:
            rest = [w for w in words[1:] if w != h.host]
            if rest:
                h.component = rest[-1]
    if h.component is None:
        for c in sc.ctx:
            zm = _ZK_COMPONENT.search(c)
            if zm:
                h.component = zm.group("c")
                break
    if sc.end > 0:
        msg = sc.line[sc.end:].strip()
        h.message = msg if msg else sc.line
    return h
