"""Token queue (SPSC, producer never blocks, drops counted) and its producer, the context feed (repeat folding;
the budget itself: tests/test_reading_budget.py)."""

from __future__ import annotations

import threading
import time

import numpy as np

from gateway.pipeline.token_queue import ContextFeed, TokenQueue, context_line


def test_fifo_and_whole_entries():
    r = TokenQueue(n_tokens=64, n_entries=8)
    r.push([1, 2, 3], 0)
    r.push([4, 5], 0)
    r.push([6, 7, 8, 9], 0)
    toks, n = r.pop(5)
    assert toks.tolist() == [1, 2, 3, 4, 5] and n == 2
    toks, n = r.pop(2)                       # an entry longer than max_tokens comes alone
    assert toks.tolist() == [6, 7, 8, 9] and n == 1
    toks, n = r.pop(10)
    assert n == 0 and toks.size == 0


def test_lagging_consumer_loses_oldest_and_counts():
    r = TokenQueue(n_tokens=64, n_entries=8)
    for i in range(20):
        r.push([i] * 5, i)
    toks, n = r.pop(1000)
    assert n == 8 and toks.tolist() == [v for i in range(12, 20) for v in [i] * 5]
    assert r.stats()["dropped_entries"] == 12
    # token-capacity overrun (entries fit, tokens do not)
    r = TokenQueue(n_tokens=32, n_entries=64)
    for i in range(10):
        r.push([i] * 4, i)                   # 40 tokens into 32
    toks, n = r.pop(1000)
    assert toks.tolist() == [v for i in range(2, 10) for v in [i] * 4]
    assert r.stats()["dropped_entries"] == 2


def test_wraparound_keeps_content():
    r = TokenQueue(n_tokens=25, n_entries=4)      # 25: wraps at a different place every lap
    out = []
    for i in range(50):
        r.push([i, i + 1000, i + 2000], i)
        toks, _ = r.pop(100)
        out.extend(toks.tolist())
    assert out == [v for i in range(50) for v in (i, i + 1000, i + 2000)]


def test_concurrent_producer_consumer_sees_only_whole_entries():
    r = TokenQueue(n_tokens=4096, n_entries=256)
    n_push = 20000
    seen = []
    done = threading.Event()

    def consume():
        while not done.is_set() or r.tail < r.head:
            toks, _ = r.pop(64)
            seen.append(toks.copy())

    c = threading.Thread(target=consume)
    c.start()
    for i in range(n_push):
        k = 1 + i % 7
        r.push(np.full(k, i, np.int32), 0)   # an entry is k copies of its number
    done.set()
    c.join()
    allt = np.concatenate(seen) if seen else np.zeros(0, np.int32)
    vals, counts = np.unique(allt, return_counts=True)
    assert all(c == 1 + v % 7 for v, c in zip(vals.tolist(), counts.tolist()))   # never a torn entry
    assert np.all(np.diff(vals) > 0)
    st = r.stats()
    assert st["consumed_entries"] + st["dropped_entries"] == n_push


def test_feed_folds_repeats_behind_the_first_line():
    r = TokenQueue(n_tokens=4096, n_entries=64)
    sent = []
    now = [0.0]
    feed = ContextFeed(r, lambda s: sent.append(s) or [1], window_s=5, clock=lambda: now[0])
    ts = time.mktime((2024, 1, 1, 12, 0, 0, 0, 0, -1))
    feed.add(ts, "line3/plc", 1, "E-STOP pressed", template="E-STOP pressed")
    assert sent == [context_line(ts, "line3/plc", "E-STOP pressed") + "\n"]
    for i in range(1, 13):
        now[0] = i * 0.1
        feed.add(ts + i * 0.1, "line3/plc", 1, "E-STOP pressed", template="E-STOP pressed")
    assert len(sent) == 1                                         # repeats are held in the fold
    now[0] = 1.5
    feed.add(ts + 1.5, "line3/filler", 2, "temp ok", template="temp ok")   # another template: at once
    assert sent[-1] == context_line(ts + 1.5, "line3/filler", "temp ok") + "\n"
    feed.tick(6)
    assert sent[-1] == "12:00:00-12:00:01 line3/plc E-STOP pressed (x12)\n"
    st = feed.stats()
    assert st["summarised_lines"] == st["collapsed_lines"] == 12 and st["skipped_lines"] == 0


def test_context_line_shape():
    ts = time.mktime((2024, 1, 1, 12, 0, 1, 0, 0, -1))
    assert context_line(ts, "line3/plc", "E-STOP  pressed\n", 12) == "12:00:01 line3/plc E-STOP pressed (x12)"
    assert context_line(ts, "h", "x" * 1000).endswith("…")


def test_feed_producer_never_blocks_on_a_stalled_consumer():
    r = TokenQueue(n_tokens=1024, n_entries=64)
    feed = ContextFeed(r, lambda s: [ord(ch) for ch in s], window_s=0)
    t0 = time.perf_counter()
    for i in range(5000):
        feed.add(float(i), "h", i, f"line {i}")            # nobody consumes
    assert time.perf_counter() - t0 < 10
    st = feed.stats()
    assert st["pushed_entries"] == 5000 and st["dropped_entries"] >= 5000 - 64


def test_pop_stops_where_the_importance_changes():
    r = TokenQueue(n_tokens=64, n_entries=8)
    r.push([1, 2], 0)
    r.push([3], 0, importance=1.0)
    r.push([4, 5], 0, importance=1.0)
    r.push([6], 0)
    assert r.pop(10)[0].tolist() == [1, 2] and r.popped_importance == 0.0
    assert r.pop(10)[0].tolist() == [3, 4, 5] and r.popped_importance == 1.0
    assert r.pop(10)[0].tolist() == [6] and r.popped_importance == 0.0


def test_feed_marks_the_alerted_line_and_never_folds_it():
    r = TokenQueue(n_tokens=256, n_entries=16)
    now = [0.0]
    feed = ContextFeed(r, lambda s: [len(s)], window_s=5, clock=lambda: now[0])
    for t, tid, text, imp in ((0, 1, "pump ok", False), (1, 1, "pump ok", False),
                              (2, 2, "ERROR pump stalled", True), (3, 2, "ERROR pump stalled", True),
                              (9, 3, "pump restarted", False)):
        now[0] = t                                       # at 9: the "pump ok" fold closes, then the line
        feed.add(t, "h", tid, text, important=imp, template=text)
    got = []
    while True:
        toks, n = r.pop(1)
        if not n:
            break
        got.append(r.popped_importance)
    # pump ok (its template's first line: rare), ERROR (alerted), ERROR (alerted, never folded: a repeat
    # of its template and host), the summary pump ok (x1), pump restarted (rare)
    assert got == [0.5, 1.0, 0.5, 0.0, 0.5]
