"""tools/bench/soak_judge.py: the soak's store check passes the feed's own summaries and flags altered
ones; the lag's percentiles and slope; the accept block (no model, no server)."""

from __future__ import annotations

import json
import random

from gateway.ingest.record import LogRecord
from gateway.pipeline.store import Store
from gateway.pipeline.token_queue import ContextFeed, TokenQueue
from gateway.pipeline.triage import Triage
from tools.bench.soak_judge import accept, check_summaries, lag_figures, pct, question_figures, slope, stage_figures


def _summaries_and_store(tmp_path) -> list[dict]:
    """Lines of two templates over three hosts through the real triage and store, folded by a feed
    without a budget; its summaries as /api/stats serves them (through JSON)."""
    store, triage = Store(tmp_path / "logs.db"), Triage(None, new_template_alerts=False)
    now = [1_700_000_000.0]
    feed = ContextFeed(TokenQueue(1 << 14, 1 << 10), lambda s: [7] * max(1, len(s) // 4), 2.0, clock=lambda: now[0])
    rng = random.Random(1)
    try:
        for batch in range(40):
            recs = [LogRecord(ts=now[0] + k / 20, source="t", host=f"line3/h{k % 3}", severity=6,
                              text=f"heater zone {rng.randint(1, 4)} temperature {rng.uniform(70, 90):.1f} C"
                              if k % 2 else f"conveyor speed {rng.uniform(0.5, 2):.2f} m/s")
                    for k in range(20)]
            cls = triage.classify(recs)
            ids = store.append(recs, [c.template_id for c in cls], [c.fields for c in cls])
            for rec, c, i in zip(recs, cls, ids):
                feed.add(rec.ts, rec.host, c.template_id, rec.text, new=c.is_new, template=c.template,
                         params=c.fields.params, line_id=i)
            now[0] += 1.0
            feed.tick()
    finally:
        store.close()
    return json.loads(json.dumps(feed.recent_summaries(1000)))


def test_the_feeds_summaries_equal_the_store_and_altered_ones_do_not(tmp_path):
    sums = [s for s in _summaries_and_store(tmp_path) if s["count"] > 1]
    assert len(sums) >= 10
    ok = check_summaries(tmp_path / "logs.db", sums, len(sums))
    assert (ok["checked"], ok["mismatched"]) == (len(sums), 0)
    bad = [dict(sums[0], count=sums[0]["count"] + 1), dict(sums[1], hosts=["line3/h9"]),
           dict(sums[2], ranges=[[0.0, 1.0]] * len(sums[2]["ranges"])), dict(sums[3], last_ts=sums[3]["last_ts"] + 1)]
    out = check_summaries(tmp_path / "logs.db", bad, len(bad))
    assert out["mismatched"] == 4 and [m["diff"][0].split()[0] for m in out["mismatches"]] == [
        "count", "hosts", "ranges", "span"]


def test_lag_figures_and_accept():
    samples = [{"t_s": t, "lag_s": 2.0 + (0.05 * t if t >= 60 else 0.0)} for t in range(0, 121, 5)]
    lag = lag_figures(samples, "lag_s", 60.0)
    assert lag["second_half"]["slope_s_per_s"] == 0.05 and lag["max_s"] == 8.0
    assert pct([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95) == 10 and pct([], 0.5) is None and slope([(0, 1), (1, 2)]) is None
    a = accept(lag, 0, {"checked": 5, "mismatched": 0}, True)
    assert (a["lag_p95"], a["lag_not_growing"], a["nothing_lost"], a["summaries_equal_store"], a["all"]) == (
        True, False, True, True, False)
    flat = lag_figures([{"t_s": t, "lag_s": 3.0} for t in range(0, 121, 5)], "lag_s", 60.0)
    assert accept(flat, 0, {"checked": 5, "mismatched": 0}, True)["all"]
    none = accept(flat, 1, {"checked": 0, "mismatched": 0}, False)
    assert none["lag_p95"] is None and none["summaries_equal_store"] is None and not none["all"]
    assert none["questions_within_budget"] is None


def test_questions_within_budget():
    """A question answered past its budget fails the acceptance; none asked: not judged."""
    flat = lag_figures([{"t_s": t, "lag_s": 3.0} for t in range(0, 121, 5)], "lag_s", 60.0)
    sm = {"checked": 5, "mismatched": 0}
    q = question_figures(3, [4.0, 11.9, 12.0], 1, 0, 12.0)
    assert (q["answered"], q["within_budget"], q["budget_s"]) == (3, 3, 12.0)
    assert accept(flat, 0, sm, True, q)["questions_within_budget"] is True and accept(flat, 0, sm, True, q)["all"]
    late = question_figures(3, [4.0, 12.5], 1, 0, 12.0)
    assert late["within_budget"] == 1
    assert accept(flat, 0, sm, True, late)["questions_within_budget"] is False and not accept(flat, 0, sm, True, late)["all"]
    assert accept(flat, 0, sm, True, question_figures(2, [], 2, 0, 12.0))["questions_within_budget"] is False
    assert accept(flat, 0, sm, True, question_figures(0, [], 0, 0, 12.0))["questions_within_budget"] is None


def test_stage_figures_sum_each_answers_queries_and_keep_the_wait_outside_them():
    # two answers: one of two asks (its stages summed), one of one; a third without timing is left out
    stages = [[{"call_ms": 500.0, "read_ms": 1000.0, "call_prompt_tokens": 30, "call": {"op": "count"}},
               {"call_ms": 700.0, "read_ms": 0.0, "call_prompt_tokens": 40}],
              [{"call_ms": 400.0, "read_ms": 3000.0, "call_prompt_tokens": 20}], []]
    f = stage_figures([4.0, 9.0, 2.0], stages)
    # nearest-rank median of two values is the lower one
    assert f["call_ms"] == 400.0 and f["read_ms"] == 1000.0 and f["call_prompt_tokens"] == 20
    # outside: 4000 - 2200 = 1800 and 9000 - 3400 = 5600 (the token count is no time)
    assert f["outside_ms"] == 1800.0
    assert stage_figures([], []) == {}
