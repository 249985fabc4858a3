"""Triaged lines -> compact context lines -> tokens in a preallocated single-producer /
single-consumer queue (a circular buffer) that the engine thread drains. The producer never waits
for the consumer. (Not to be confused with the KV cache's ring, which the engine owns.)

Knows nothing about the model: it is handed a tokenize callable and stores int32 ids.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Callable, Sequence

import numpy as np

MAX_CONTEXT_CHARS = 200          # a context line is clipped: the store keeps the whole line
MAX_OPEN_WINDOWS = 4096          # (template, host) repeat windows tracked at once
CLIP_MARK = "…"


def context_line(ts: float, host: str, text: str, count: int = 1) -> str:
    """`12:00:01 line3/plc E-STOP pressed (x12)`; local wall-clock time of the line."""
    text = " ".join(text.split())
    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + CLIP_MARK
    when = time.strftime("%H:%M:%S", time.localtime(ts))
    line = f"{when} {host} {text}" if host else f"{when} {text}"
    return line + (f" (x{count})" if count > 1 else "")


class Compactor:
    """Collapses repeats of one template from one host within `window_s` seconds.

    The first occurrence goes out at once (the model sees news without delay); repeats inside the
    window are counted, and when the window closes one line "(xN)" stands for the N repeats.
    Not thread-safe: owned by the single producer."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        # (template_id, host) -> [first_ts, repeats, last_ts, last_text]
        self._open: collections.OrderedDict[tuple, list] = collections.OrderedDict()
        self.collapsed = 0     # lines that became part of an (xN) line

    def add(self, ts: float, host: str, template_id: int | None, text: str) -> list[str]:
        out = self.due(ts)
        key = (template_id, host)
        w = self._open.get(key) if template_id is not None else None
        if w is not None and ts - w[0] <= self.window_s:
            w[1] += 1
            w[2], w[3] = ts, text
            self.collapsed += 1
            return out
        if w is not None:
            out.extend(self._close(key))
        if template_id is not None and self.window_s > 0:
            self._open[key] = [ts, 0, ts, text]
            while len(self._open) > MAX_OPEN_WINDOWS:
                out.extend(self._close(next(iter(self._open))))
        out.append(context_line(ts, host, text))
        return out

    def _close(self, key: tuple) -> list[str]:
        first, repeats, last_ts, last_text = self._open.pop(key)
        return [context_line(last_ts, key[1], last_text, repeats)] if repeats else []

    def due(self, now: float) -> list[str]:
        """Lines of windows that closed by `now` (call periodically when input is idle)."""
        out: list[str] = []
        while self._open:
            key, w = next(iter(self._open.items()))
            if now - w[0] <= self.window_s:
                break   # windows open in time order, so the rest are younger
            out.extend(self._close(key))
        return out


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
    """The producer side: triaged records -> Compactor -> tokenize -> TokenQueue.push.
    Callers from several threads are serialized by a lock (the queue has one producer)."""

    def __init__(self, queue: TokenQueue, tokenize: Callable[[str], list[int]], window_s: float) -> None:
        self.queue = queue
        self.tokenize = tokenize
        self.compactor = Compactor(window_s)
        self._lock = threading.Lock()
        self.lines = 0

    def add(self, ts: float, host: str, template_id: int | None, text: str, important: bool = False) -> None:
        """important: the triage alerted on this line (the KV policy `novelty` keeps it longer); it
        marks the line itself, not the "(xN)" repeats closed on the way."""
        with self._lock:
            collapsed = self.compactor.collapsed
            lines = self.compactor.add(ts, host, template_id, text)
            went_out = self.compactor.collapsed == collapsed      # else it joined a repeat window
            for i, line in enumerate(lines):
                self._push(line, ts, important and went_out and i == len(lines) - 1)

    def tick(self, now: float | None = None) -> None:
        with self._lock:
            for line in self.compactor.due(time.time() if now is None else now):
                self._push(line, time.time())

    def _push(self, line: str, ts: float, important: bool = False) -> None:
        self.queue.push(self.tokenize(line + "\n"), ts, 1.0 if important else 0.0)
        self.lines += 1

    def stats(self) -> dict:
        d = self.queue.stats()
        d["context_lines"] = self.lines
        d["collapsed_lines"] = self.compactor.collapsed
        return d
