"""Per-source baselines for "new kind of line" alerts (issue 40, point 3).

Each source first learns its baseline: the templates its lines use in its first `lines` lines and
`seconds` seconds of record time. While a source learns, no new-kind alert is raised for it. After,
a line whose template the source never used is a new kind. New kinds are grouped per source: the
first after a quiet spell alerts at once; those that follow within `window_s` fold into one alert
at the end of the window (listing them, counting the rest), so a storm of novel lines raises one
alert per window. The learning state and the known templates persist in the data dir.

Not thread-safe: Triage holds its alert lock around every call. Knows nothing of the miner.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field

from gateway.pipeline.alerts import MAX_ALERT_LINES

log = logging.getLogger(__name__)

BASELINE_FILE = "baselines.json"
# The default baseline: a source's first 2,000 lines AND 10 minutes, whichever comes later. Later, not
# first: a start-up burst (thousands of lines in seconds) is not the routine, and a quiet source's first
# minutes hold too few lines to know its kinds. With a period set, BASELINE_MAX_S ends a quiet source's
# learning anyway (at one line a minute, 2,000 lines take 33 h); with none, the count alone decides.
BASELINE_LINES = 2_000
BASELINE_S = 600.0
BASELINE_MAX_S = 86_400.0
GROUP_WINDOW_S = 60.0       # new kinds of one source this close together fold into one alert
# Kinds one grouped alert lists (the rest it counts): a boot's worth (Linux's sample ends with one: 91
# kernel kinds in 3 s); each clipped to LISTED_CHARS, with a line only for the first MAX_ALERT_LINES.
MAX_LISTED = 128
LISTED_CHARS = 160
MAX_KNOWN = 4_096           # template ids remembered per source; past it only created templates are new
MAX_SOURCES = 256           # sources with a baseline of their own; further ones share OTHER
OTHER = "*"
CLOCK_BACK_S = 5.0          # a line this much older than its group's start: the clock went back
SAVE_MIN_INTERVAL_S = 1.0   # known templates and finished baselines: saved at most this often
SAVE_INTERVAL_S = 30.0      # line counts alone: at most this often


@dataclass(slots=True)
class NewKind:
    """One line of a template new to its source (what a new-kind alert lists)."""

    template_id: int
    template: str
    text: str
    line_id: int
    ts: float
    host: str
    severity: int


@dataclass(slots=True)
class _Source:
    lines: int = 0                   # lines learned from
    first_ts: float | None = None    # record time of its first line
    last_ts: float | None = None     # the newest record time seen while learning
    done: bool = False
    known: set = field(default_factory=set)


@dataclass(slots=True)
class _Group:
    start: float
    kinds: list = field(default_factory=list)
    more: int = 0


class Baselines:
    """see(source, ts, template_id, created) -> bool (a new kind against a finished baseline);
    group(source, kind) / due(now) -> [(source, kinds, more)] (the new-kind alerts to raise);
    figures(), save(force), with persistence through `persist` (save_state/load_state; None: none)."""

    def __init__(self, persist, lines: int = BASELINE_LINES, seconds: float = BASELINE_S,
                 window_s: float = GROUP_WINDOW_S) -> None:
        self.persist = persist
        self.lines, self.seconds, self.window_s = lines, seconds, window_s
        self.sources: dict[str, _Source] = self._load()
        self.groups: dict[str, _Group] = {}
        self.new_kinds = 0
        self._dirty = self._urgent = False
        self._last_save = float("-inf")

    # --- learning ----------------------------------------------------------------------------
    def key(self, source: str) -> str:
        if source in self.sources or len(self.sources) < MAX_SOURCES:
            return source
        return OTHER

    def see(self, source: str, ts: float, template_id: int, created: bool) -> bool:
        k = self.key(source)
        s = self.sources.get(k)
        if s is None:
            s = self.sources[k] = _Source()
        if not s.done:
            if s.first_ts is None:
                s.first_ts = s.last_ts = ts
            s.last_ts = max(s.last_ts, ts)
            if not self._learned(s):
                s.lines += 1
                self._dirty = True
                if template_id not in s.known and len(s.known) < MAX_KNOWN:
                    s.known.add(template_id)
                    self._urgent = True
                self._learned(s)             # this line may end the baseline
                return False
        if template_id in s.known:
            return False
        if len(s.known) < MAX_KNOWN:
            s.known.add(template_id)
            self._urgent = True
        elif not created:            # full: only a template this line created is surely new
            return False
        self.new_kinds += 1
        return True

    def _learned(self, s: _Source) -> bool:
        span = s.last_ts - s.first_ts
        if (s.lines >= self.lines and span >= self.seconds) or (self.seconds > 0 and span >= BASELINE_MAX_S):
            s.done = self._urgent = True
        return s.done

    # --- grouping ----------------------------------------------------------------------------
    def group(self, source: str, kind: NewKind) -> list[tuple[str, list[NewKind], int]]:
        """The alerts `kind` releases: itself at once after a quiet spell; a closed window's group."""
        k = self.key(source)
        out = []
        g = self.groups.get(k)
        if g is not None and (kind.ts - g.start >= self.window_s or kind.ts < g.start - CLOCK_BACK_S):
            out += self._close(k, g, kind.ts)
            g = self.groups.get(k)
        if g is None:
            self.groups[k] = _Group(kind.ts)
            out.append((k, [kind], 0))
        elif len(g.kinds) < MAX_LISTED:       # held: bounded memory (clipped, no line past the examples)
            g.kinds.append(dataclasses.replace(kind, template=kind.template[:LISTED_CHARS],
                                               text=kind.text if len(g.kinds) < MAX_ALERT_LINES else ""))
        else:
            g.more += 1
        return out

    def due(self, now: float) -> list[tuple[str, list[NewKind], int]]:
        """The groups whose window has ended by record time `now` (float("inf"): all)."""
        out = []
        for k, g in list(self.groups.items()):
            if now - g.start >= self.window_s:
                out += self._close(k, g, now)
        return out

    def _close(self, k: str, g: _Group, now: float) -> list:
        if not g.kinds and not g.more:
            del self.groups[k]
            return []
        # a storm goes on: the kinds after this alert fold into the next window's
        self.groups[k] = _Group(now if now != float("inf") else g.start + self.window_s)
        return [(k, g.kinds, g.more)]

    # --- figures and persistence -------------------------------------------------------------
    def figures(self) -> dict:
        learning = {}
        for k, s in self.sources.items():
            if not s.done:
                span = (s.last_ts - s.first_ts) if s.first_ts is not None else 0.0
                learning[k] = {"lines": s.lines, "lines_left": max(0, self.lines - s.lines),
                               "s_left": round(max(0.0, self.seconds - span), 1)}
        return {"sources_learning": learning, "sources_learned": len(self.sources) - len(learning),
                "baseline_lines": self.lines, "baseline_s": self.seconds, "new_kinds": self.new_kinds,
                "new_kinds_held": sum(len(g.kinds) + g.more for g in self.groups.values())}

    def save(self, force: bool = False) -> None:
        """Writes the state when it changed: known templates and finished baselines within
        SAVE_MIN_INTERVAL_S, line counts within SAVE_INTERVAL_S; `force`: now."""
        if self.persist is None or not (self._dirty or self._urgent):
            return
        since = time.monotonic() - self._last_save
        if not force and since < (SAVE_MIN_INTERVAL_S if self._urgent else SAVE_INTERVAL_S):
            return
        d = {k: {"lines": s.lines, "first_ts": s.first_ts, "last_ts": s.last_ts, "done": s.done,
                 "known": sorted(s.known)} for k, s in self.sources.items()}
        self.persist.save_state(json.dumps({"version": 1, "sources": d}).encode())
        self._dirty = self._urgent = False
        self._last_save = time.monotonic()

    def _load(self) -> dict[str, _Source]:
        raw = self.persist.load_state() if self.persist is not None else None
        if raw is None:
            return {}
        try:
            out = {}
            for k, v in json.loads(raw)["sources"].items():
                first, last = v["first_ts"], v["last_ts"]
                out[str(k)] = _Source(int(v["lines"]), None if first is None else float(first),
                                      None if last is None else float(last), bool(v["done"]),
                                      {int(x) for x in v["known"][:MAX_KNOWN]})
            return out
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("ignoring unreadable source baselines in %s: every source learns again",
                        getattr(self.persist, "path", "?"))
            return {}
