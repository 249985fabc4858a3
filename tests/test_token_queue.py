"""Token queue (SPSC, producer never blocks, drops counted) and the repeat-collapsing compactor."""

from __future__ import annotations

import threading
import time

import numpy as np

from gateway.pipeline.token_queue import Compactor, ContextFeed, TokenQueue, context_line


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


def test_compactor_collapses_repeats():
    c = Compactor(window_s=5)
    out = c.add(0, "line3/plc", 1, "E-STOP pressed")
    assert out == [context_line(0, "line3/plc", "E-STOP pressed")]
    for i in range(1, 13):
        assert c.add(i * 0.1, "line3/plc", 1, "E-STOP pressed") == []
    other = c.add(1.5, "line3/filler", 2, "temp ok")      # other template: goes out at once
    assert other == [context_line(1.5, "line3/filler", "temp ok")]
    closed = c.due(6)
    assert closed == [context_line(1.2, "line3/plc", "E-STOP pressed", 12)]
    assert closed[0].endswith("line3/plc E-STOP pressed (x12)")
    assert c.collapsed == 12


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


def test_feed_marks_the_alerted_line_not_the_repeats_closed_with_it():
    r = TokenQueue(n_tokens=256, n_entries=16)
    feed = ContextFeed(r, lambda s: [len(s)], window_s=5)
    feed.add(0, "h", 1, "pump ok")
    feed.add(1, "h", 1, "pump ok")                       # collapsed into the window
    feed.add(2, "h", 2, "ERROR pump stalled", important=True)
    feed.add(3, "h", 2, "ERROR pump stalled", important=True)   # a repeat: joins the window, not pushed
    feed.add(9, "h", 3, "pump restarted")                # closes both windows, then goes out itself
    got = []
    while True:
        toks, n = r.pop(1)
        if not n:
            break
        got.append(r.popped_importance)
    # pump ok, ERROR (important), pump ok (x1), ERROR (x1), pump restarted
    assert got == [0.0, 1.0, 0.0, 0.0, 0.0]
