"""The budgeted producer (issue 42, part 1): under a low reading rate what goes to the model stays within
the budget; alerted and new lines are never folded; a summary's count, span and ranges are those of the
lines it folded (and of the store's rows for them); nothing is dropped uncounted."""

from __future__ import annotations

import random
import time

import pytest

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import extract_params
from gateway.pipeline.reading_budget import BURST_S, RARE_GAP_S, Fold, ReadingBudget
from gateway.pipeline.store import Store
from gateway.pipeline.token_queue import ContextFeed, TokenQueue
from gateway.pipeline.triage import Triage

TEMPLATES = [f"{name} zone <NUM> temperature <NUM> C" for name in ("heater", "cooler", "dryer", "oven")] + [
    f"conveyor {k} speed <NUM> m/s state <*>" for k in ("A", "B", "C")]


def tokens(s: str) -> list[int]:
    return [7] * max(1, len(s) // 4)            # a fake tokenizer: one token per 4 characters


class Sim:
    """A fake clock and a consumer reading `rate` tokens/s from the queue (the engine, without a model)."""

    def __init__(self, rate: float | None, window_s: float = 5.0, **kw) -> None:
        self.now = 0.0
        self.rate = rate
        self.queue = TokenQueue(1 << 16, 1 << 14)
        for k, v in (("read_share", 0.8), ("target_lag_s", 5.0), ("max_window_s", 60.0)):
            kw.setdefault(k, v)              # the settings' defaults ([token_queue])
        self.sent: list[tuple[str, float, float]] = []   # (line, clock, importance)
        self.feed = ContextFeed(self.queue, self._tokenize, window_s, reading_rate=lambda: self.rate,
                                clock=lambda: self.now, **kw)
        self._carry = 0.0

    def _tokenize(self, s: str) -> list[int]:
        self.sent.append((s, self.now, 0.0))
        return tokens(s)

    def advance(self, dt: float) -> None:
        self.now += dt
        if self.rate:
            self._carry += self.rate * dt
            while self._carry >= 1:
                toks, n = self.queue.pop(int(self._carry))
                if not n:
                    self._carry = min(self._carry, self.rate)   # an idle reader saves nothing up
                    break
                self._carry -= toks.size
        self.feed.tick()


def line(rng: random.Random, k: int) -> tuple[int, str, str, list]:
    tid = k % len(TEMPLATES)
    t = TEMPLATES[tid]
    vals = [str(rng.randint(1, 4)), f"{rng.uniform(70, 90):.1f}"] if "zone" in t else [
        f"{rng.uniform(0.5, 2):.2f}", rng.choice(["RUN", "IDLE"])]
    text = t.replace("<NUM>", "{}", 2).replace("<*>", "{}").format(*vals)
    ps = extract_params(t, text)
    return tid, t, text, ps


def check_counts(b: ReadingBudget) -> None:
    assert b.lines == sum(b.verbatim.values()) + b.summarised_lines + b.skipped_lines + b.folding_lines


def test_summary_line_shape():
    f = Fold("heater zone <NUM> temperature <NUM> C", 0.0)
    t0 = time.mktime((2024, 1, 1, 10, 1, 2, 0, 0, -1))
    for i in range(312):
        v = f"{81.0 + (i % 7) / 10:.1f}"
        f.add(t0 + 7 * i / 311, "line3/filler", f"heater zone 2 temperature {v} C", [("2", 2.0), (v, float(v))], None)
    assert f.render() == "10:01:02-10:01:09 line3/filler heater zone 2 temperature 81.0-81.6 C (x312)"
    g = Fold("conveyor A speed <NUM> m/s state <*>", 0.0)
    for v, s in (("-1.5", "RUN"), ("2.25", "IDLE"), ("0.5", "RUN")):
        g.add(t0, f"line3/p{v}", "", [(v, float(v)), (s, None)], None)
    assert g.body() == "conveyor A speed -1.5..2.25 m/s state IDLE|RUN"
    assert g.host_text() == "line3/p-1.5|line3/p2.25|line3/p0.5"
    g.add(t0, "line3/x", "", [("1", 1.0), ("RUN", None)], None)
    assert g.host_text() == "4 hosts" and g.render().startswith(time.strftime("%H:%M:%S", time.localtime(t0)) + " 4 hosts")


def test_low_rate_keeps_output_within_budget_and_lag_bounded():
    rate, share = 60.0, 0.8                       # the box's modelled prefill, tokens/s
    sim = Sim(rate, read_share=share, target_lag_s=5.0, max_window_s=60.0)
    rng = random.Random(1)
    alerted_tokens = 0
    seconds, lines_per_s = 120, 200
    for k in range(seconds * lines_per_s):
        tid, t, text, ps = line(rng, k)
        important = k % 997 == 0
        n_before = len(sim.sent)
        sim.feed.add(sim.now, "line3/filler", tid, text, important, template=t, params=ps, line_id=k)
        if important:
            alerted_tokens += sum(len(tokens(s)) for s, _, _ in sim.sent[n_before:])
        sim.advance(1 / lines_per_s)
        check_counts(sim.feed.budget)
        assert sim.queue.backlog_tokens() / rate <= 5.0 + 1.0        # the lag stays near target_lag_s
    budget = sim.feed.budget
    out = budget.pushed_tokens - alerted_tokens
    assert out <= rate * share * (seconds + BURST_S) + 100            # within the budget (one summary's slack)
    assert budget.summarised_lines > 0.9 * budget.lines                # routine lines folded, not lost
    assert budget.window(sim.now) > sim.feed.budget.window_s or budget.summaries


def test_alerted_and_new_lines_are_never_folded_even_without_budget():
    sim = Sim(60.0, target_lag_s=2.0, max_window_s=10.0)   # 100 lines/s into 60 tokens/s
    rng = random.Random(2)
    must = []
    for k in range(3000):
        tid, t, text, ps = line(rng, k)
        flag = k % 100 == 0
        new = k % 100 == 50
        if flag or new:
            text = f"{text} #{k}"
            must.append((text, flag))
        sim.feed.add(sim.now, "h", tid, text, flag, new=new, template=t, params=ps)
        sim.advance(0.01)
    sent = {s.split(" ", 2)[2].rstrip("\n"): s for s, _, _ in sim.sent}
    assert all(text in sent for text, _ in must)
    b = sim.feed.budget
    assert b.verbatim["alerted"] == 30 and b.verbatim["new"] == 30
    assert b.summarised_lines > 0.9 * 3000       # the routine lines went as summaries
    check_counts(b)


def test_lines_read_verbatim_are_graded_for_the_kv_cache():
    """The KV policy novelty keeps important entries longer and, over its share, lets the least important
    go first: a new kind or an alerted line 1; an alerted line of a template and host read important within
    RARE_GAP_S (a repeat) 0.5, as a rare line (its template's first RARE_LINES lines); routine lines 0."""
    sim = Sim(None, window_s=0.0)                       # no budget: every line verbatim
    rng = random.Random(3)
    steps = [  # (host, template number, alerted, new, seconds later) -> the importance expected
        ("h", 0, False, False, 0, 0.5),      # the template's first line: rare
        ("h", 1, False, True, 0, 1.0),       # a new kind
        ("h", 0, True, False, 0, 1.0),       # alerted: the first of its template on this host
        ("h", 0, True, False, 1, 0.5),       # ... again a second later: a repeat
        ("g", 0, True, False, 0, 1.0),       # the same template from another host
        ("h", 0, False, False, 0, 0.5),      # the template's second and third lines seen as such: rare
        ("h", 0, False, False, 0, 0.5),
        ("h", 0, False, False, 0, 0.0),      # the fourth: routine
        ("h", 0, True, False, RARE_GAP_S + 1, 1.0),   # alerted again after RARE_GAP_S: no repeat
    ]
    for k, (host, tno, alerted, new, later, _) in enumerate(steps):
        sim.now += later
        tid, t, text, ps = line(rng, tno)
        sim.feed.add(sim.now, host, tid, f"{text} #{k}", alerted, new=new, template=t, params=ps)
    got = []
    while True:
        toks, n = sim.queue.pop(1)                     # one entry at a time
        if not n:
            break
        got.append(sim.queue.popped_importance)
    assert got == [want for *_, want in steps]


def test_a_flood_of_new_templates_folds_but_alerted_lines_still_go():
    """A source's first minutes: every line a new template. Past NEW_CAP x target_lag_s of backlog the new
    ones fold (else they would fill the queue and overwrite alerted lines); alerted ones never do."""
    sim = Sim(20.0, target_lag_s=1.0)
    for k in range(2000):
        alerted = k % 200 == 0
        text = f"kind{k} valve {k} opened #{k}"
        sim.feed.add(sim.now, "h", 1000 + k, text, alerted, new=True, template=f"kind{k} valve <NUM> opened <*>",
                     params=extract_params(f"kind{k} valve <NUM> opened <*>", text))
        sim.advance(0.01)
    b = sim.feed.budget
    sent = "".join(s for s, _, _ in sim.sent)
    assert all(f"#{k}\n" in sent for k in range(0, 2000, 200))
    assert b.verbatim["alerted"] == 10 and 0 < b.verbatim["new"] < 1990
    assert sim.queue.stats()["dropped_entries"] == 0
    check_counts(b)


def test_summaries_hold_the_folded_lines_figures():
    sim = Sim(40.0, window_s=2.0, max_window_s=600.0)
    rng = random.Random(3)
    truth: dict[int, tuple] = {}
    for k in range(6000):
        tid, t, text, ps = line(rng, k)
        ts = 1_700_000_000 + k * 0.01
        truth[k] = (tid, ts, ps)
        sim.feed.add(ts, "h", tid, text, template=t, params=ps, line_id=k)
        sim.advance(0.01)
    sums = list(sim.feed.budget.recent_summaries)
    assert len(sums) > 20
    for s in sums:
        folded = [v for k, v in truth.items() if s["first_id"] <= k <= s["last_id"] and v[0] == s["template_id"]]
        assert s["count"] == len(folded)
        assert (s["first_ts"], s["last_ts"]) == (min(v[1] for v in folded), max(v[1] for v in folded))
        for pos, rng_ in enumerate(s["ranges"]):
            nums = [v[2][pos][1] for v in folded]
            assert rng_ == ((min(nums), max(nums)) if None not in nums else None)
    check_counts(sim.feed.budget)


def test_counters_add_up_and_the_lag_counts_open_folds():
    sim = Sim(5.0, window_s=5.0, max_window_s=10.0)
    rng = random.Random(4)
    for k in range(2000):
        tid, t, text, ps = line(rng, k)
        sim.feed.add(1000.0 + k * 0.01, "h", tid, text, template=t, params=ps)
        sim.advance(0.01)
        check_counts(sim.feed.budget)
    st = sim.feed.stats()
    b = st["budget"]
    assert b["lines"] == 2000
    assert sum(b["verbatim_lines"].values()) + st["summarised_lines"] + st["skipped_lines"] + b["folding_lines"] == 2000
    assert st["skipped_lines"] > 0 and st["summarised_lines"] > 0
    assert sim.feed.oldest_unread_ts() is not None
    for _ in range(3000):                             # the stream stops: everything is read or counted
        sim.advance(0.01)
    b = sim.feed.stats()["budget"]
    assert b["folding_lines"] == 0 and sim.feed.oldest_unread_ts() is None


def test_no_rate_means_no_budget():
    sim = Sim(None, window_s=0.0)
    rng = random.Random(5)
    for k in range(500):
        tid, t, text, ps = line(rng, k)
        sim.feed.add(sim.now, "h", tid, text, template=t, params=ps)
        sim.advance(0.001)
    b = sim.feed.budget
    assert sum(b.verbatim.values()) == 500 and b.summarised_lines == b.skipped_lines == 0


def test_the_window_widens_with_the_load():
    def width(rate: float) -> float:
        sim = Sim(rate, window_s=5.0, max_window_s=120.0)
        rng = random.Random(6)
        for k in range(4000):
            _, t, text, ps = line(rng, k % 50)
            sim.feed.add(sim.now, f"host{k % 13}", k % 50, text, template=t, params=ps)   # 50 templates
            sim.advance(0.005)
        return sim.feed.budget.window(sim.now)
    assert width(2000.0) == 5.0
    assert width(60.0) > 20.0


@pytest.fixture
def stored(tmp_path):
    store = Store(tmp_path / "logs.db")
    triage = Triage(None, new_template_alerts=False)
    yield store, triage
    store.close()


def test_summary_figures_equal_the_stores(stored):
    """Lines through the real triage and store, then each summary's figures against SQL on its rows."""
    store, triage = stored
    sim = Sim(30.0, window_s=3.0, max_window_s=600.0)
    rng = random.Random(7)
    for batch in range(60):
        recs = []
        for k in range(50):
            _, _, text, _ = line(rng, batch * 50 + k)
            recs.append(LogRecord(ts=1_700_000_000 + batch + k / 50, source="t", host="line3/filler", severity=6,
                                  text=text))
        cls = triage.classify(recs)
        ids = store.append(recs, [c.template_id for c in cls], [c.fields for c in cls])
        for rec, c, i in zip(recs, cls, ids):
            sim.feed.add(rec.ts, rec.host, c.template_id, rec.text, new=c.is_new, template=c.template,
                         params=c.fields.params, line_id=i)
        sim.advance(1.0)
    sums = [s for s in sim.feed.budget.recent_summaries if s["count"] > 1]
    assert len(sums) >= 10
    db = store._connect(query_only=True)
    checked_ranges = 0
    try:
        for s in sums:
            assert s["hosts"] == ["line3/filler"]
            q = "FROM logs WHERE template_id=? AND id BETWEEN ? AND ?"
            args = (s["template_id"], s["first_id"], s["last_id"])
            n, lo_ts, hi_ts = db.execute(f"SELECT count(*), min(ts), max(ts) {q}", args).fetchone()
            assert (n, lo_ts, hi_ts) == (s["count"], s["first_ts"], s["last_ts"])
            rows = db.execute("SELECT pos, min(num), max(num), count(num) FROM params WHERE line_id IN "
                              f"(SELECT id {q}) GROUP BY pos ORDER BY pos", args).fetchall()
            want = [(lo, hi) if c == n else None for _, lo, hi, c in rows]
            assert s["ranges"] == want
            checked_ranges += any(r is not None for r in want)
        assert checked_ranges >= 10
    finally:
        db.close()
