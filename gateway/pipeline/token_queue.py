"""Triaged lines -> context lines (verbatim, or folded into per-template summaries under the engine's
measured reading rate: reading_budget.py) -> tokens in a preallocated single-producer /
single-consumer queue (a circular buffer) that the engine thread drains. The producer never waits
for the consumer. (Not to be confused with the KV cache's ring, which the engine owns.)

Knows nothing about the model: it is handed a tokenize callable and stores int32 ids.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Sequence

import numpy as np

from gateway.pipeline.reading_budget import ReadingBudget

MAX_CONTEXT_CHARS = 200          # a context line is clipped: the store keeps the whole line
CLIP_MARK = "…"


def context_line(ts: float, host: str, text: str, count: int = 1) -> str:
    """`12:00:01 line3/plc E-STOP pressed (x12)`; local wall-clock time of the line."""
    text = " ".join(text.split())
    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + CLIP_MARK
    when = time.strftime("%H:%M:%S", time.localtime(ts))
    line = f"{when} {host} {text}" if host else f"{when} {text}"
    return line + (f" (x{count})" if count > 1 else "")


class TokenQueue:
    """Fixed-size SPSC queue of token entries (one entry = one context line), allocated once.

    Producer: push(tokens, ts) -> never blocks; it overwrites the oldest entries when the consumer
    lags. Consumer: pop(max_tokens) -> (int32 tokens, n_entries), skipping (and counting) entries
    that were overwritten before it read them. Correct for exactly one producer thread and one
    consumer thread: each counter is written by one side only; a slot's seq number is invalidated
    before and republished after its fields are written, and re-checked after the consumer's copy.
    """

    def __init__(self, n_tokens: int, n_entries: int) -> None:
        assert n_tokens > 0 and n_entries > 0
        self.n_tokens = n_tokens
        self.n_entries = n_entries
        self.max_entry_tokens = max(1, n_tokens // 8)   # one huge line cannot evict everything
        self._tok = np.zeros(n_tokens, np.int32)         # [n_tokens] token ids, circular
        self._seq = np.full(n_entries, -1, np.int64)      # [n_entries] entry number held by the slot
        self._start = np.zeros(n_entries, np.int64)       # [n_entries] absolute token offset
        self._len = np.zeros(n_entries, np.int32)         # [n_entries]
        self._ts = np.zeros(n_entries, np.float64)        # [n_entries] line time
        self._imp = np.zeros(n_entries, np.float32)       # [n_entries] importance (the triage alerted on it)
        self._out = np.zeros(n_tokens, np.int32)          # consumer's copy buffer
        # producer-owned
        self.head = 0            # entries pushed
        self.tok_head = 0        # tokens pushed
        self.pushed_tokens = 0
        self.clipped_entries = 0
        # consumer-owned
        self.tail = 0            # next entry to read
        self.dropped_entries = 0
        self.consumed_entries = 0
        self.consumed_tokens = 0
        self.popped_importance = 0.0   # of the entries the last pop returned (they share it)

    # --- producer --------------------------------------------------------------------------
    def push(self, tokens: Sequence[int] | np.ndarray, ts: float, importance: float = 0.0) -> None:
        toks = np.asarray(tokens, dtype=np.int32)
        if toks.size > self.max_entry_tokens:
            toks = toks[: self.max_entry_tokens]
            self.clipped_entries += 1
        n = int(toks.size)
        if n == 0:
            return
        e = self.head
        s = e % self.n_entries
        self._seq[s] = -1                      # invalid while being written
        start = self.tok_head
        i = start % self.n_tokens
        first = min(n, self.n_tokens - i)
        self._tok[i:i + first] = toks[:first]
        if first < n:
            self._tok[: n - first] = toks[first:]
        self._start[s] = start
        self._len[s] = n
        self._ts[s] = ts
        self._imp[s] = importance
        self.tok_head = start + n
        self._seq[s] = e
        self.head = e + 1
        self.pushed_tokens += n

    # --- consumer --------------------------------------------------------------------------
    def pop(self, max_tokens: int) -> tuple[np.ndarray, int]:
        """Up to `max_tokens` tokens of whole entries of one importance (an entry longer than max_tokens
        comes alone; their importance is left in popped_importance). Returns a view valid until the
        next pop, and the number of entries in it."""
        got, n_entries = 0, 0
        while self.tail < self.head:
            e = self.tail
            oldest_valid = max(self.head - self.n_entries, 0)
            if e < oldest_valid:
                self.dropped_entries += oldest_valid - e
                self.tail = oldest_valid
                continue
            s = e % self.n_entries
            if self._seq[s] != e:              # overwritten or being overwritten
                self.dropped_entries += 1
                self.tail = e + 1
                continue
            start, n, imp = int(self._start[s]), int(self._len[s]), float(self._imp[s])
            if got and (got + n > max_tokens or imp != self.popped_importance):
                break
            i = start % self.n_tokens
            first = min(n, self.n_tokens - i)
            self._out[got:got + first] = self._tok[i:i + first]
            if first < n:
                self._out[got + first:got + n] = self._tok[: n - first]
            if self._seq[s] != e or self.tok_head - start > self.n_tokens:   # overwritten during copy
                self.dropped_entries += 1
                self.tail = e + 1
                continue
            got += n
            n_entries += 1
            self.popped_importance = imp
            self.tail = e + 1
            if got >= max_tokens:
                break
        self.consumed_entries += n_entries
        self.consumed_tokens += got
        return self._out[:got], n_entries

    def oldest_pending_ts(self) -> float | None:
        e = max(self.tail, self.head - self.n_entries)
        if e >= self.head:
            return None
        return float(self._ts[e % self.n_entries])

    def backlog_tokens(self) -> int:
        """Tokens pushed and still readable but not yet consumed (what the engine lags by)."""
        e = max(self.tail, self.head - self.n_entries)
        if e >= self.head:
            return 0
        return min(self.n_tokens, max(0, self.tok_head - int(self._start[e % self.n_entries])))

    def stats(self) -> dict:
        head, tail = self.head, self.tail
        return {"n_tokens": self.n_tokens, "n_entries": self.n_entries, "pushed_entries": head,
                "pushed_tokens": self.pushed_tokens, "consumed_entries": self.consumed_entries,
                "consumed_tokens": self.consumed_tokens, "backlog_entries": min(max(0, head - tail), self.n_entries),
                "dropped_entries": self.dropped_entries + max(0, head - self.n_entries - tail),
                "clipped_entries": self.clipped_entries}


class ContextFeed:
    """The producer side: triaged records -> ReadingBudget (verbatim lines first, routine ones folded into
    per-template summaries, under the engine's measured reading rate: gateway/pipeline/reading_budget.py)
    -> tokenize -> TokenQueue.push. Callers from several threads are serialized by a lock (the queue has
    one producer).

    reading_rate: tokens/s the engine reads (None until measured: no budget, only repeat folding over
    window_s). read_share: the share of it the producer may send (None or 0: no budget). target_lag_s: the
    backlog, in seconds of reading, past which only alerted and new lines go verbatim. max_window_s: the
    widest a summary's window gets before a summary still without budget is skipped (counted). No
    defaults here: they are the settings' ([token_queue])."""

    def __init__(self, queue: TokenQueue, tokenize: Callable[[str], list[int]], window_s: float, *,
                 reading_rate: Callable[[], float | None] | None = None, read_share: float | None = None,
                 target_lag_s: float | None = None, max_window_s: float | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.queue = queue
        self.tokenize = tokenize
        self._lock = threading.Lock()
        self.lines = 0
        self.budget = ReadingBudget(self._push, queue.backlog_tokens, context_line, window_s, rate=reading_rate,
                                    read_share=read_share or 0.0, target_lag_s=target_lag_s, max_window_s=max_window_s,
                                    clock=clock)

    @property
    def reading_rate(self) -> Callable[[], float | None] | None:
        return self.budget.rate

    @reading_rate.setter
    def reading_rate(self, rate: Callable[[], float | None] | None) -> None:
        """Set once the engine exists (the appliance builds the feed first)."""
        with self._lock:
            self.budget.set_rate(rate)

    def add(self, ts: float, host: str, template_id: int | None, text: str, important: bool = False, *,
            new: bool = False, template: str | None = None, params: Sequence[tuple] | None = None,
            line_id: int | None = None) -> None:
        """important: the triage alerted on this line (verbatim; the KV policy `novelty` keeps it longer).
        new: the first line of its template, or a kind new against its source's baseline (verbatim unless
        in a flood of them; kept longer too when read verbatim). template, params: its Drain template and the
        parameters the store keeps for it (LineFields.template/.params): what a summary is written from.
        line_id: its store id (kept in the summaries' figures)."""
        with self._lock:
            self.budget.add(ts, host, template_id, text, important=important, new=new, template=template,
                            params=params, line_id=line_id)

    def tick(self, now: float | None = None) -> None:
        """Closes the folds whose window ended (the engine thread calls it when idle); `now` on the feed's
        clock (wall time by default)."""
        with self._lock:
            self.budget.due(self.budget.clock() if now is None else now)

    def _push(self, line: str, ts: float, importance: float) -> int:
        toks = self.tokenize(line + "\n")
        self.queue.push(toks, ts, importance)
        self.lines += 1
        return len(toks)

    def oldest_unread_ts(self) -> float | None:
        """The time of the oldest line the engine has not read: in the queue, or held in an open fold."""
        with self._lock:
            held = self.budget.oldest_fold_ts()
        queued = self.queue.oldest_pending_ts()
        return min((t for t in (held, queued) if t is not None), default=None)

    def recent_summaries(self, limit: int) -> list[dict]:
        """The figures of the last `limit` summaries sent to the model, oldest first (Fold.figures plus the
        text; the budget keeps a bounded number): what /api/stats?summaries=N shows and the soak checks
        against the store."""
        with self._lock:
            held = list(self.budget.recent_summaries)
        return held[max(0, len(held) - limit):] if limit > 0 else []

    def stats(self) -> dict:
        d = self.queue.stats()
        oldest = self.oldest_unread_ts()
        with self._lock:
            d["budget"] = self.budget.stats()
        b = d["budget"]
        d["context_lines"] = self.lines
        d["summarised_lines"] = b["summarised_lines"]
        d["skipped_lines"] = b["skipped_lines"]
        d["collapsed_lines"] = b["summarised_lines"]     # the older name (repeats folded)
        d["oldest_unread_s"] = max(0.0, time.time() - oldest) if oldest is not None else 0.0
        return d
