"""The soak's figures for issue 42's acceptance (tools/bench/soak.py): the reading lag's percentiles and
its slope over the second half, the token queue's counters, the questions, the summaries' figures held
against the store's rows, and the `accept` block.

Summaries: /api/stats?summaries=N returns the figures of the last N summaries the feed sent the model
(gateway/pipeline/reading_budget.py Fold.figures). The soak keeps a uniform sample of the distinct ones
it saw over the run (SummarySample) and, once the server stopped, checks each against the store's SQLite
rows exactly as tests/test_reading_budget.py does: the lines of its template with ids first_id..last_id,
their count and time span, each parameter's numeric range, and (when the summary names them all) the hosts.
"""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path

from gateway.pipeline.reading_budget import MAX_HOSTS_COUNTED

# Issue 42's acceptance: lag p95 <= 15 s, "not growing" (the slope over the second half ~0: |slope| under
# this many seconds of lag per second of run), 0 lines lost, summaries' figures equal to the store's.
LIMITS = {"lag_p95_s": 15.0, "lag_slope_abs_s_per_s": 0.01, "lines_lost": 0, "summaries_mismatched": 0}
SUMMARY_SAMPLE = 200          # summaries checked against the store, at most
MISMATCH_EXAMPLES = 5


def pct(vals: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1); None for no values."""
    if not vals:
        return None
    s = sorted(vals)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over t; None under 3 points or no spread in t."""
    if len(points) < 3:
        return None
    n = len(points)
    tm = sum(t for t, _ in points) / n
    ym = sum(y for _, y in points) / n
    den = sum((t - tm) ** 2 for t, _ in points)
    return sum((t - tm) * (y - ym) for t, y in points) / den if den else None


def _r(x: float | None, nd: int = 2) -> float | None:
    return round(x, nd) if x is not None else None


def lag_figures(samples: list[dict], key: str, half_t: float) -> dict:
    """p50/p95/max of samples[key] over the run and over its second half (t_s >= half_t), and the slope
    (s per s) over the second half."""
    whole = [x[key] for x in samples if x.get(key) is not None]
    second = [(x["t_s"], x[key]) for x in samples if x["t_s"] >= half_t and x.get(key) is not None]
    ys = [y for _, y in second]
    return {"p50_s": _r(pct(whole, 0.5)), "p95_s": _r(pct(whole, 0.95)), "max_s": _r(max(whole, default=None)),
            "end_s": _r(whole[-1] if whole else None),
            "second_half": {"p50_s": _r(pct(ys, 0.5)), "p95_s": _r(pct(ys, 0.95)), "max_s": _r(max(ys, default=None)),
                            "slope_s_per_s": _r(slope(second), 5), "samples": len(second)}}


def queue_figures(tq: dict) -> dict:
    """The token queue at the end (/api/stats token_queue, gateway/pipeline/token_queue.py ContextFeed.stats and
    ReadingBudget.stats): lines in, what went verbatim (by tier), summarised, skipped, still folding, and the
    queue's own drops; `counted_all`: lines == verbatim + summarised + skipped + folding."""
    b = tq.get("budget") or {}
    verb = b.get("verbatim_lines") or {}
    lines = b.get("lines")
    parts = (sum(verb.values()), b.get("summarised_lines", 0), b.get("skipped_lines", 0), b.get("folding_lines", 0))
    return {"lines": lines, "verbatim_lines": sum(verb.values()), "verbatim_by_tier": verb,
            "summaries": b.get("summaries"), "summarised_lines": b.get("summarised_lines"),
            "skipped_lines": b.get("skipped_lines"), "folding_lines": b.get("folding_lines"),
            "late_summaries": b.get("late_summaries"), "dropped_entries": tq.get("dropped_entries"),
            "clipped_entries": tq.get("clipped_entries"), "pushed_entries": tq.get("pushed_entries"),
            "consumed_entries": tq.get("consumed_entries"), "window_s": b.get("window_s"),
            "reading_tokens_per_s": b.get("reading_tokens_per_s"), "budget_tokens_per_s": b.get("budget_tokens_per_s"),
            "counted_all": lines == sum(parts) if lines is not None else None}


def question_figures(asked: int, answered_s: list[float], refusals: int, failed: int, budget_s: float) -> dict:
    """Questions asked, answered (HTTP 200), refused (an HTTP error answer: admission, deadline), failed
    (no HTTP answer), the answers' latency, and how many came within the first-token budget (a reply
    that is not streamed gives its first token with its last)."""
    return {"asked": asked, "answered": len(answered_s), "refused": refusals, "failed": failed,
            "latency_p50_s": _r(pct(answered_s, 0.5)), "latency_p95_s": _r(pct(answered_s, 0.95)),
            "latency_max_s": _r(max(answered_s, default=None)), "budget_s": budget_s,
            "within_budget": sum(s <= budget_s for s in answered_s)}


def stage_figures(answered_s: list[float], stages: list[list[dict]]) -> dict:
    """The median of each stage of the answers' time (ms, summed over an answer's queries), and of what
    the stages leave out of the answer's latency ("outside": HTTP and the route; the wait for the engine is
    queue_ms, a stage since the engine reports it)."""
    per: dict[str, list[float]] = {}
    for total_s, timings in zip(answered_s, stages):
        summed: dict[str, float] = {}
        for t in timings:
            for k, v in t.items():
                if isinstance(v, (int, float)):          # not the call the stages ran
                    summed[k] = summed.get(k, 0.0) + v
        if not summed:
            continue
        spent = sum(v for k, v in summed.items() if k.endswith("_ms"))
        summed["outside_ms"] = max(0.0, total_s * 1000 - spent)
        for k, v in summed.items():
            per.setdefault(k, []).append(v)
    return {k: _r(pct(v, 0.5), 1) for k, v in per.items()}


class SummarySample:
    """A uniform sample (reservoir) of the distinct summaries seen in /api/stats over the run."""

    def __init__(self, size: int = SUMMARY_SAMPLE, seed: int = 42) -> None:
        self.size, self.rng = size, random.Random(seed)
        self.seen: set[tuple] = set()
        self.kept: list[dict] = []

    def add(self, items: list[dict]) -> None:
        for s in items:
            key = (s.get("template_id"), s.get("first_id"), s.get("last_id"), s.get("count"), s.get("first_ts"))
            if key in self.seen:
                continue
            self.seen.add(key)
            if len(self.kept) < self.size:
                self.kept.append(s)
            else:
                j = self.rng.randrange(len(self.seen))
                if j < self.size:
                    self.kept[j] = s


def check_summary(con: sqlite3.Connection, s: dict) -> list[str]:
    """What of summary `s` differs from the store's rows (empty: equal). As tests/test_reading_budget.py:
    the lines of its template with ids first_id..last_id."""
    q = "FROM logs WHERE template_id=? AND id BETWEEN ? AND ?"
    args = (s["template_id"], s["first_id"], s["last_id"])
    n, lo_ts, hi_ts = con.execute(f"SELECT count(*), min(ts), max(ts) {q}", args).fetchone()
    rows = con.execute("SELECT pos, min(num), max(num), count(num) FROM params WHERE line_id IN "
                       f"(SELECT id {q}) GROUP BY pos ORDER BY pos", args).fetchall()
    want = [[lo, hi] if c == n else None for _, lo, hi, c in rows]
    got = [list(r) if r is not None else None for r in s["ranges"]]
    diff = []
    if s["first_id"] > s["last_id"]:      # its first line came after its last in the store's order
        diff.append("ids out of order")
    if n != s["count"]:
        diff.append(f"count {s['count']} vs store {n}")
    if (lo_ts, hi_ts) != (s["first_ts"], s["last_ts"]):
        diff.append(f"span {s['first_ts']}..{s['last_ts']} vs store {lo_ts}..{hi_ts}")
    if got != want:
        diff.append(f"ranges {got} vs store {want}")
    if len(s["hosts"]) < MAX_HOSTS_COUNTED:      # the summary names every host it folded
        hosts = sorted(h for (h,) in con.execute(f"SELECT DISTINCT host {q}", args))
        if hosts != sorted(s["hosts"]):
            diff.append(f"hosts {sorted(s['hosts'])} vs store {hosts}")
    return diff


def check_summaries(db: Path, summaries: list[dict], seen: int) -> dict:
    """Each sampled summary against the store (read-only, after the server stopped). `pruned`: its lines
    were deleted by the store's retention (not checkable); `no_ids`: it carries no store ids."""
    out = {"seen": seen, "checked": 0, "mismatched": 0, "pruned": 0, "no_ids": 0, "mismatches": []}
    if not summaries:
        return out
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        oldest = con.execute("SELECT min(id) FROM logs").fetchone()[0] or 0
        for s in summaries:
            if None in (s.get("template_id"), s.get("first_id"), s.get("last_id")):
                out["no_ids"] += 1
                continue
            if min(s["first_id"], s["last_id"]) < oldest:
                out["pruned"] += 1
                continue
            diff = check_summary(con, s)
            out["checked"] += 1
            if diff:
                out["mismatched"] += 1
                if len(out["mismatches"]) < MISMATCH_EXAMPLES:
                    out["mismatches"].append({"text": s.get("text"), "template_id": s["template_id"],
                                              "ids": [s["first_id"], s["last_id"]], "diff": diff})
    finally:
        con.close()
    return out


def accept(lag: dict, lines_lost: int, summaries: dict, model_on: bool, questions: dict | None = None) -> dict:
    """Issue 42's acceptance, each true/false, with the limits used. Without a model (--model none) the lag
    and summary checks are None: nothing reads and the feed folds nothing. summaries_equal_store is false
    when no summary could be checked; questions_within_budget (None without questions): every answer came
    within its budget."""
    sl = lag["second_half"]["slope_s_per_s"]
    a = {"limits": dict(LIMITS),
         "lag_p95": lag["p95_s"] is not None and lag["p95_s"] <= LIMITS["lag_p95_s"] if model_on else None,
         "lag_not_growing": sl is not None and abs(sl) <= LIMITS["lag_slope_abs_s_per_s"] if model_on else None,
         "nothing_lost": lines_lost <= LIMITS["lines_lost"],
         "summaries_equal_store": summaries["checked"] > 0
         and summaries["mismatched"] <= LIMITS["summaries_mismatched"] if model_on else None,
         "questions_within_budget": questions["within_budget"] == questions["answered"] > 0
         if model_on and questions and questions["asked"] else None}
    a["all"] = all(v for k, v in a.items() if k != "limits" and v is not None)
    return a


def summary_lines(r: dict) -> list[str]:
    """The human-readable summary printed before the JSON line."""
    lag, q, qs, sm, a = r["reading_lag"], r["token_queue"], r["questions"], r["summaries_check"], r["accept"]
    h = lag["second_half"]
    return [
        f"soak: {r['minutes']} min at {r['rate_lines_s']:.0f} lines/s, variety {r['variety']}, model {r['model']}, "
        f"engine cpus {r['engine_cpus'] or 'all'}, cpu {r['cpu']}",
        f"  reading lag: p50 {lag['p50_s']} s, p95 {lag['p95_s']} s, max {lag['max_s']} s; second half p50 "
        f"{h['p50_s']} s, p95 {h['p95_s']} s, max {h['max_s']} s, slope {h['slope_s_per_s']} s/s",
        f"  token queue: lines {q['lines']}, verbatim {q['verbatim_lines']}, summarised {q['summarised_lines']} "
        f"({q['summaries']} summaries), skipped {q['skipped_lines']}, folding {q['folding_lines']}, "
        f"queue drops {q['dropped_entries']}, counted all {q['counted_all']}",
        f"  questions: asked {qs['asked']}, answered {qs['answered']}, refused {qs['refused']}, failed {qs['failed']}, "
        f"latency p50 {qs['latency_p50_s']} s, p95 {qs['latency_p95_s']} s, within {qs['budget_s']} s: "
        f"{qs['within_budget']}; stage p50 ms {qs.get('stages_p50_ms')}",
        f"  lines: sent {r['lines_sent']}, stored {r['lines_stored']}, lost {r['lines_lost_total']}",
        f"  summaries vs store: checked {sm['checked']} of {sm['seen']} seen, mismatched {sm['mismatched']}, "
        f"pruned {sm['pruned']}",
        "  accept: " + ", ".join(f"{k}={v}" for k, v in a.items() if k != "limits"),
    ]
