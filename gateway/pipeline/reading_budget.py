"""Read less, by budget (issue 42): what the token queue's producer sends the model, kept under the
engine's measured reading rate.

Every triaged line takes one of four ways, decided when it arrives:
- **alerted** (the triage alerted on it): verbatim, at once, never folded, whatever the budget (it may
  put the budget in debt, which holds back the rest);
- **new** (the first line of a template, or a kind new against its source's baseline): the same, without
  waiting for credit, while the backlog is under NEW_CAP x `target_lag_s`; past it (a source's first
  minutes with thousands of templates, where every line is new) it folds like a rare line, so that the
  queue does not fill with them and overwrite alerted lines, nor hold the backlog where every job behind
  it finishes past the lag the settings allow;
- **rare** (its template had fewer than RARE_LINES lines here, or none for RARE_GAP_S): verbatim while the
  backlog is under `target_lag_s`, else folded;
- **routine**: verbatim while the budget has credit and the backlog is under half of `target_lag_s` and
  its template has no open fold; a verbatim routine line opens an empty fold so that its repeats
  fold behind it (the old repeat collapsing); without credit it opens a fold holding itself.
Lines read verbatim go with an importance (`Rarity.importance`): the KV policy `novelty` keeps them
longer, and over its share lets the least important go first.

A fold is a per-template summary over a window (the hosts its lines came from named, up to MAX_HOSTS):
count, time span and, per template parameter,
the range of its numbers (or its one value, or its few values), from the parameters triage extracted,
which are the very (text, number) pairs the store writes (`params.text`, `params.num`), so a summary
says only what the store holds:
    `10:01:02-10:01:09 line3/filler heater zone 2 temperature 81.0-81.6 C (x312)`
The window is `window_s` at light load and widens with the load: the open folds' summaries, each closing
once a window, must fit SUMMARY_SHARE of the budget (up to `max_window_s`). A fold whose window ended goes
out when there is credit and room in the backlog; at `max_window_s` it may put the budget in debt (to
its floor, `target_lag_s` of reading), and past that it is skipped. A summary enters the queue stamped
with the time it is made (the queue's lag is the reading backlog); how long lines wait in open folds is
`oldest_fold_ts` (the feed's `oldest_unread_s` counts both).

Nothing is dropped uncounted: lines == verbatim + summarised + skipped + folding (held in open folds),
at every moment. Lines the queue itself later overwrites are its `dropped_entries`.

Knows nothing of the model or the queue: it is handed `push(text, ts, importance) -> tokens`,
`backlog_tokens() -> int` and `rate() -> tokens/s or None` (None: no figure yet; no budget).
Not thread-safe: the caller (ContextFeed) serializes.
"""

from __future__ import annotations

import collections
import time
from typing import Callable, Sequence

from gateway.pipeline.fields import fill, param_slots

RARE_LINES = 3              # a template with fewer lines than this (here, since start) is rare ...
RARE_GAP_S = 600.0          # ... and so is one back after this long away
NEW_CAP = 1.0               # new-template lines fold once the backlog is this many target_lag_s
MAX_TRACKED_TEMPLATES = 20_000   # templates whose counts are kept (Drain's own bound, triage.MAX_CLUSTERS)
MAX_OPEN_FOLDS = 4096       # template folds open at once; past it the oldest closes early
MAX_HOSTS = 3               # hosts a summary names ("line3/plc|line3/oven"); more: "N hosts"
MAX_HOSTS_COUNTED = 64      # ... counted up to this ("64+ hosts")
SUMMARY_SHARE = 0.5         # of the budget, what the open folds' summaries may take when they close
BURST_S = 2.0               # credit saved up, in seconds of budget
FULL = 0.9                  # credit this near its cap lets a fold past window_s go before its window ends
RATE_REFRESH_S = 0.25       # the reading rate is asked at most this often
MAX_CONTEXT_CHARS = 240     # a summary line is clipped like a context line (the store keeps every line)
MAX_VALUES = 3              # distinct words of a parameter shown ("RUN|STOP"); more show as <*>
CLIP_MARK = "…"
TIERS = ("alerted", "new", "rare", "routine")
# The importance the KV cache's novelty policy is told for a line read verbatim (native/kv_cache.h):
# a new kind or an alerted line most; an alerted line whose template and host were read important
# within RARE_GAP_S (a repeat: the cache likely holds one already), and a rare line, half, so that
# over the share they give way first; routine lines and summaries nothing.
IMPORTANCE = {"alerted": 1.0, "new": 1.0, "repeat": 0.5, "rare": 0.5, "routine": 0.0}


def clock_text(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


class ParamRange:
    """The values one template parameter took over a fold: numbers' min/max (by the stored number,
    shown as the stored text) and up to MAX_VALUES distinct texts."""

    __slots__ = ("lo", "lo_text", "hi", "hi_text", "numeric", "texts")

    def __init__(self) -> None:
        self.lo = self.hi = 0.0
        self.lo_text = self.hi_text = ""
        self.numeric = None          # None: no value yet; True: every value a number
        self.texts: set[str] | None = set()   # None: more than MAX_VALUES

    def add(self, text: str, num: float | None) -> None:
        if num is None:
            self.numeric = False
        elif self.numeric is None or self.numeric:
            if self.numeric is None or num < self.lo:
                self.lo, self.lo_text = num, text
            if self.numeric is None or num > self.hi:
                self.hi, self.hi_text = num, text
            self.numeric = True
        if self.texts is not None:
            self.texts.add(text)
            if len(self.texts) > MAX_VALUES:
                self.texts = None

    def render(self) -> str:
        if self.texts is not None and len(self.texts) == 1:
            return next(iter(self.texts))
        if self.numeric:
            return f"{self.lo_text}{'..' if self.lo < 0 or self.hi < 0 else '-'}{self.hi_text}"
        if self.texts:
            return "|".join(sorted(self.texts))
        return "<*>"


class Rarity:
    """What is known of each template's lines: how many, and when last (a line is rare while its template
    has fewer than RARE_LINES, or is back after RARE_GAP_S away), and which template and host was last
    read important when; from these, a verbatim line's importance (IMPORTANCE). Bounded: the oldest
    templates are forgotten past MAX_TRACKED_TEMPLATES (they count as rare again)."""

    def __init__(self) -> None:
        self._seen: dict[int, list] = {}          # template_id -> [lines, last ts]
        self._kept: collections.OrderedDict[tuple, float] = collections.OrderedDict()  # (template, host) -> ts

    def way(self, template_id: int | None, ts: float) -> str:
        """"rare" or "routine" for a line neither alerted nor new; counts it."""
        if template_id is None:
            return "rare"
        s = self._seen.get(template_id)
        if s is None:
            if len(self._seen) >= MAX_TRACKED_TEMPLATES:
                self._seen.pop(next(iter(self._seen)))
            s = self._seen[template_id] = [0, ts]
        rare = s[0] < RARE_LINES or ts - s[1] > RARE_GAP_S
        s[0] += 1
        s[1] = max(s[1], ts)
        return "rare" if rare else "routine"

    def importance(self, way: str, template_id: int | None, host: str, ts: float) -> float:
        """The importance of a line read verbatim that took `way` (TIERS)."""
        if way not in ("alerted", "new") or template_id is None:
            return IMPORTANCE.get(way, 0.0)
        key = (template_id, host)
        last = self._kept.pop(key, None)
        self._kept[key] = ts
        if len(self._kept) > MAX_TRACKED_TEMPLATES:
            self._kept.popitem(last=False)
        return IMPORTANCE["repeat"] if last is not None and ts - last <= RARE_GAP_S else IMPORTANCE[way]


class Fold:
    """One template's summary being gathered. `opened` is on the feed's clock; first/last_ts
    are the lines' own times (the store's `ts`); first_id/last_id the store ids when given."""

    __slots__ = ("template", "opened", "late", "hosts", "count", "first_ts", "last_ts", "last_text", "params", "first_id", "last_id")

    def __init__(self, template: str | None, opened: float) -> None:
        self.template = template
        self.opened = opened
        self.late = False            # kept open past its window for lack of budget
        self.hosts: dict[str, None] = {}   # in order of arrival, up to MAX_HOSTS_COUNTED
        self.count = 0
        self.first_ts = self.last_ts = 0.0
        self.last_text = ""
        self.params: list[ParamRange] = []
        self.first_id: int | None = None
        self.last_id: int | None = None

    def add(self, ts: float, host: str, text: str, params: Sequence[tuple] | None, line_id: int | None) -> None:
        if len(self.hosts) < MAX_HOSTS_COUNTED:
            self.hosts[host] = None
        if not self.count:
            self.first_ts, self.first_id = ts, line_id
        self.count += 1
        self.first_ts, self.last_ts = min(self.first_ts, ts), max(self.last_ts, ts)
        self.last_text, self.last_id = text, line_id if line_id is not None else self.last_id
        for i, p in enumerate(params or ()):
            if i == len(self.params):
                self.params.append(ParamRange())
            self.params[i].add(p[0], p[1])

    def body(self) -> str:
        """The template with each parameter's range in its place; the last line's text (as the old
        "(xN)" line) when there is no template to write or its parameters do not align with it."""
        t = self.template
        slots = param_slots(t) if t and "<" in t else ()
        if not t or t.startswith("<overflow") or len(slots) != len(self.params):
            return " ".join(self.last_text.split())
        toks = t.split()
        by_tok: dict[int, list[str]] = collections.defaultdict(list)
        for (_, tok), r in zip(slots, self.params):
            by_tok[tok].append(r.render())
        out = []
        for i, tok in enumerate(toks):
            vals = by_tok.get(i)
            out.append(tok if vals is None else fill(tok, vals))
        return " ".join(out)

    def host_text(self) -> str:
        hosts = [h for h in self.hosts if h]
        if len(hosts) <= MAX_HOSTS:
            return "|".join(hosts)
        return f"{len(hosts)}{'+' if len(self.hosts) >= MAX_HOSTS_COUNTED else ''} hosts"

    def render(self) -> str:
        """`10:01:02-10:01:09 line3/filler heater zone 2 temperature 81.0-81.6 C (x312)`."""
        host = self.host_text()
        a, b = clock_text(self.first_ts), clock_text(self.last_ts)
        text = self.body()
        if len(text) > MAX_CONTEXT_CHARS:
            text = text[:MAX_CONTEXT_CHARS] + CLIP_MARK
        span = a if a == b else f"{a}-{b}"
        return f"{span} {host} {text} (x{self.count})" if host else f"{span} {text} (x{self.count})"

    def figures(self, template_id: int | None) -> dict:
        """What the summary says, as data (the soak and the tests hold it against the store)."""
        return {"template_id": template_id, "hosts": list(self.hosts), "count": self.count, "first_ts": self.first_ts,
                "last_ts": self.last_ts, "first_id": self.first_id, "last_id": self.last_id,
                "ranges": [(r.lo, r.hi) if r.numeric else None for r in self.params]}


class ReadingBudget:
    """The producer's decisions (see the module doc). add(...) per triaged line; tick(now) closes due
    folds when no line comes; stats(). `line(ts, host, text)` formats a verbatim line (the feed's
    context_line)."""

    def __init__(self, push: Callable[[str, float, float], int], backlog_tokens: Callable[[], int],
                 line: Callable[[float, str, str], str], window_s: float, *,
                 rate: Callable[[], float | None] | None = None, read_share: float = 0.0,
                 target_lag_s: float | None = None, max_window_s: float | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        # read_share 0: no budget (repeat folding over window_s only). A budget needs target_lag_s and
        # max_window_s: their defaults are the settings' ([token_queue]), declared there only.
        if read_share > 0 and (target_lag_s is None or max_window_s is None):
            raise ValueError("a reading budget needs target_lag_s and max_window_s")
        self._push, self._backlog, self._line = push, backlog_tokens, line
        self.window_s = window_s
        self.max_window_s = max(window_s, max_window_s if max_window_s is not None else window_s)
        self.rate, self.read_share, self.target_lag_s = rate, read_share, target_lag_s or 0.0
        self.clock = clock
        self._folds: collections.OrderedDict[int, Fold] = collections.OrderedDict()
        self.rarity = Rarity()
        self._rate: float | None = None           # tokens/s the engine reads (measured), cached
        self._rate_at = float("-inf")
        self._credit = 0.0                        # tokens the budget still allows now (negative: debt)
        self._credit_at: float | None = None
        self._tok_per_char = 0.3                  # learnt from what is pushed (an estimate before tokenizing)
        self._summary_tokens = 30.0               # EMA of a summary's tokens
        self.lines = 0
        self.verbatim = dict.fromkeys(TIERS, 0)
        self.summaries = 0
        self.summarised_lines = 0
        self.skipped_lines = 0
        self.folding_lines = 0
        self._filled = 0                          # open folds holding a line (what will cost a summary)
        self.late_summaries = 0                   # summaries kept open past their window for budget
        self.pushed_tokens = 0
        self.recent_summaries: collections.deque[dict] = collections.deque(maxlen=256)

    # --- the budget ----------------------------------------------------------------------------
    def set_rate(self, rate: Callable[[], float | None] | None) -> None:
        self.rate, self._rate_at = rate, float("-inf")

    def reading_tps(self, now: float) -> float | None:
        if now - self._rate_at >= RATE_REFRESH_S:
            r = self.rate() if self.rate is not None and self.read_share > 0 else None
            self._rate = r if r is not None and r > 0 and r == r else None
            self._rate_at = now
        return self._rate

    def budget_tps(self, now: float) -> float | None:
        r = self.reading_tps(now)
        return r * self.read_share if r is not None else None

    def _refill(self, now: float) -> None:
        b = self.budget_tps(now)
        if b is None:
            self._credit_at = None
            return
        if self._credit_at is None:
            self._credit, self._credit_at = b * BURST_S, now
        self._credit = min(b * BURST_S, self._credit + b * max(0.0, now - self._credit_at))
        self._credit_at = now

    def backlog_s(self, now: float) -> float:
        r = self.reading_tps(now)
        return self._backlog() / r if r else 0.0

    def _allows(self, way: str, est: float, now: float) -> bool:
        """May a line or summary of `est` tokens go now? way: rare | summary | overdue (a summary at
        max_window_s) | routine."""
        b = self.budget_tps(now)
        if b is None:
            return True
        lag = self.backlog_s(now)
        if way == "routine":
            return self._credit >= est and lag < self.target_lag_s / 2
        if way == "summary":
            return self._credit > 0 and lag < self.target_lag_s
        if way == "overdue":        # into debt, up to its floor, rather than skipped
            return self._credit - est > -b * self.target_lag_s and lag < self.target_lag_s
        return lag < self.target_lag_s     # rare: even in debt

    def _spend(self, n: int, now: float) -> None:
        b = self.budget_tps(now)
        if b is not None:
            self._credit = max(-b * self.target_lag_s, self._credit - n)

    def window(self, now: float) -> float:
        """How long a fold gathers: window_s, widened so that the open folds' summaries fit
        SUMMARY_SHARE of the budget."""
        b = self.budget_tps(now)
        if b is None or self.window_s <= 0:
            return self.window_s
        need = self._filled * self._summary_tokens / (b * SUMMARY_SHARE)
        return min(self.max_window_s, max(self.window_s, need))

    # --- lines -----------------------------------------------------------------------------------
    def add(self, ts: float, host: str, template_id: int | None, text: str, *, important: bool = False,
            new: bool = False, template: str | None = None, params: Sequence[tuple] | None = None,
            line_id: int | None = None) -> None:
        now = self.clock()
        self._refill(now)
        self.due(now)
        self.lines += 1
        way = "alerted" if important else "new" if new else self.rarity.way(template_id, ts)
        if way == "new" and self.budget_tps(now) is not None and self.backlog_s(now) >= NEW_CAP * self.target_lag_s:
            way = "rare"          # a flood of new templates: folded, not verbatim (see the module doc)
        if way in ("alerted", "new") or template_id is None:
            self._verbatim(way, ts, host, template_id, text, now)
            return
        key = template_id
        fold = self._folds.get(key)
        if fold is not None and fold.template != template:   # Drain widened the template: close the old
            self._close(key, now, force=True)
            fold = None
        if fold is None and self._allows(way, len(text) * self._tok_per_char, now):
            self._verbatim(way, ts, host, template_id, text, now)
            if self.window_s > 0:
                self._open(key, template, now)
            return
        if fold is None:
            fold = self._open(key, template, now)
        self._filled += fold.count == 0
        fold.add(ts, host, text, params, line_id)
        self.folding_lines += 1

    def _verbatim(self, way: str, ts: float, host: str, template_id: int | None, text: str, now: float) -> None:
        line = self._line(ts, host, text)
        n = self._push(line, ts, self.rarity.importance(way, template_id, host, ts))
        self._learn(len(line), n)
        self._spend(n, now)
        self.verbatim[way if way in self.verbatim else "routine"] += 1

    def _learn(self, chars: int, n: int) -> None:
        self.pushed_tokens += n
        if chars:
            self._tok_per_char += 0.05 * (n / chars - self._tok_per_char)

    def _open(self, key: int, template: str | None, now: float) -> Fold:
        fold = self._folds[key] = Fold(template, now)
        while len(self._folds) > MAX_OPEN_FOLDS:
            self._close(next(iter(self._folds)), now, force=True)
        return fold

    # --- folds -------------------------------------------------------------------------------------
    def due(self, now: float) -> None:
        """Closes the folds whose window ended (oldest first): each goes out if the budget allows, else
        waits (its window widening) until max_window_s. A fold past window_s also goes early while the
        budget's credit is full (credit unspent is reading lost; and folds opened together drift apart)."""
        w = self.window(now)
        b = self.budget_tps(now)
        while self._folds:
            key, fold = next(iter(self._folds.items()))
            age = now - fold.opened
            if age < self.window_s:
                break             # folds open in clock order: the rest are younger
            idle = b is not None and self._credit >= FULL * b * BURST_S
            if fold.count and age < w and not idle:
                break
            if not self._close(key, now):
                break             # no budget for the oldest: none for the younger either

    def _close(self, key: int, now: float, force: bool = False) -> bool:
        """Sends or skips the fold; False (and it stays open) when it may wait for budget."""
        fold = self._folds[key]
        if fold.count == 0:
            del self._folds[key]
            return True
        line = fold.render()
        overdue = force or now - fold.opened >= self.max_window_s
        if not self._allows("overdue" if overdue else "summary", len(line) * self._tok_per_char, now):
            if not overdue:
                self.late_summaries += not fold.late
                fold.late = True
                return False
            del self._folds[key]
            self._filled -= 1
            self.folding_lines -= fold.count
            self.skipped_lines += fold.count
            return True
        del self._folds[key]
        self._filled -= 1
        n = self._push(line, max(fold.last_ts, now), 0.0)   # readable from now (the lag counts from here)
        self._learn(len(line), n)
        self._spend(n, now)
        self._summary_tokens += 0.1 * (n - self._summary_tokens)
        self.folding_lines -= fold.count
        self.summarised_lines += fold.count
        self.summaries += 1
        self.recent_summaries.append(fold.figures(key) | {"text": line})
        return True

    def oldest_fold_ts(self) -> float | None:
        """The time of the oldest line held in an open fold (not yet in the queue)."""
        ts = [f.first_ts for f in self._folds.values() if f.count]
        return min(ts) if ts else None

    def stats(self) -> dict:
        now = self.clock()
        r, b = self.reading_tps(now), self.budget_tps(now)
        return {"lines": self.lines, "verbatim_lines": dict(self.verbatim), "summaries": self.summaries,
                "summarised_lines": self.summarised_lines, "skipped_lines": self.skipped_lines,
                "folding_lines": self.folding_lines, "open_folds": len(self._folds),
                "late_summaries": self.late_summaries,
                "reading_tokens_per_s": round(r, 2) if r is not None else None,
                "budget_tokens_per_s": round(b, 2) if b is not None else None,
                "window_s": round(self.window(now), 2), "credit_tokens": round(self._credit, 1)}
