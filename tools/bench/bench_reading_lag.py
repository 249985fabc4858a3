"""Reading lag with and without the reading budget (issue 42, part 1), simulated: a factory line's
stream at --rate lines/s through the token queue's producer (gateway/pipeline/token_queue.ContextFeed)
and a simulated engine that reads the queue at a given prefill rate (tokens/s, in 32-token chunks) and
stops reading while it serves a job (a question every --job-every s lasting --job-s). No model runs:
the figures are the producer's, the reading rate is the one given (the box's modelled 55-110 tokens/s,
a 2-core Zen 5's ~180).

The stream: --templates routine templates (Zipf-weighted, numeric parameters) over 8 hosts; every
--incident-every s an incident of 300 lines of 30 never-seen templates over 10 s (the first line of each
new and alerted); a warning every 20 s (alerted). --variety high: 5,000 templates drawn
uniformly (few repeats per template).

"without budget" is the producer as it was: every line verbatim, repeats of a (template, host) folded
over --window-s; "with budget" adds the budget (read_share 0.8, target_lag_s 5, max_window_s 60).

Per run, sampled every simulated second: the lag (age of the oldest entry in the queue, what
/api/stats token_queue.lag_s reports) and the oldest unread line's age (queued or held in an open fold);
p50/p95/max/end, p95/max and slope over the second half; tokens sent per s; lines verbatim/summarised/skipped and
queue drops; the read delay of alerted lines. Ends with one JSON line.

    .venv/bin/python tools/bench/bench_reading_lag.py --seconds 300 --rate 2000
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.pipeline.fields import extract_params  # noqa: E402
from gateway.pipeline.token_queue import ContextFeed, TokenQueue  # noqa: E402
from tools.bench.harness import cpu_here, print_result  # noqa: E402

HOSTS = [f"line3/{h}" for h in ("plc", "filler", "labeler", "capper", "conveyor", "oven", "press", "packer")]
WORDS = "heater cooler pump valve motor fan belt axis spindle nozzle sensor drive gate arm feeder".split()
CHUNK = 32                   # the engine thread's prefill_chunk
DT = 0.005                   # simulation step (s)
QUEUE_TOKENS, QUEUE_ENTRIES = 65536, 8192      # [token_queue] defaults


def make_template(rng: random.Random, k: int) -> str:
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    shapes = [f"{a} zone <NUM> temperature <NUM> C", f"{a} {b} speed <NUM> rpm load <NUM> %",
              f"{a} cycle <NUM> complete in <NUM> ms state <*>", f"{a} pressure <NUM> bar setpoint <NUM> bar",
              f"{b} {a} count <NUM> reject <NUM> lot <*>"]
    return f"t{k} " + shapes[k % len(shapes)]


def fill(rng: random.Random, template: str) -> str:
    out = []
    for tok in template.split():
        if tok == "<NUM>":
            out.append(f"{rng.uniform(0, 100):.1f}")
        elif tok == "<*>":
            out.append(rng.choice(["RUN", "IDLE", "HOLD", "L24-07", "L24-08"]))
        else:
            out.append(tok)
    return " ".join(out)


class Stream:
    """The line generator: (ts, host, template_id, template, text, params, important, new) per line."""

    def __init__(self, seed: int, n_templates: int, variety: str, incident_every: float) -> None:
        self.rng = random.Random(seed)
        n = 5000 if variety == "high" else n_templates
        self.templates = [make_template(self.rng, k) for k in range(n)]
        self.weights = [1.0 if variety == "high" else 1.0 / (k + 1) for k in range(n)]
        self.next_id = n
        self.seen: set[int] = set()
        self.incident_every = incident_every
        self.incident: list[int] = []
        self.cum: list[float] | None = None

    def line(self, t: float) -> tuple:
        rng = self.rng
        important = False
        if self.incident_every and t % self.incident_every < 10.0 and rng.random() < 300 / (10.0 * self.rate):
            if t % self.incident_every < 1.0 / self.rate or not self.incident:
                self.incident = list(range(self.next_id, self.next_id + 30))
                self.templates += [f"E{k} ERROR " + make_template(rng, k) for k in self.incident]
                self.weights += [0.0] * 30
                self.next_id += 30
            tid = rng.choice(self.incident)
            host = HOSTS[tid % len(HOSTS)]
            important = self.incident_hits.setdefault(tid, 0) < 1   # severity alerts: one per template a minute
            self.incident_hits[tid] += 1
        elif t % 20.0 < 1.0 / self.rate:
            tid, host, important = 0, HOSTS[0], True       # a warning on a routine template
        else:
            if self.cum is None or len(self.cum) != len(self.weights):
                self.cum = list(itertools.accumulate(self.weights))
            tid = rng.choices(range(len(self.weights)), cum_weights=self.cum)[0]
            host = HOSTS[rng.randrange(len(HOSTS))]
        new = tid not in self.seen
        self.seen.add(tid)
        template = self.templates[tid]
        text = fill(rng, template)
        return t, host, tid, template, text, extract_params(template, text), important, new

    def lines(self, rate: float, seconds: float):
        self.rate = rate
        self.incident_hits: dict[int, int] = {}
        for i in range(int(rate * seconds)):
            yield self.line(i / rate)


def simulate(args, read_tps: float, budget: bool, tokenize) -> dict:
    now = [0.0]
    queue = TokenQueue(QUEUE_TOKENS, QUEUE_ENTRIES)
    kw = dict(read_share=0.8, target_lag_s=args.target_lag_s, max_window_s=args.max_window_s) if budget else {
        "read_share": 0.0}
    feed = ContextFeed(queue, tokenize, args.window_s, reading_rate=lambda: read_tps, clock=lambda: now[0], **kw)
    stream = Stream(args.seed, args.templates, args.variety, args.incident_every)
    carry, next_sample, alert_delays = 0.0, 0.0, []
    lags, unread = [], []
    pending_alerts: list[tuple[int, float]] = []     # (queue entry number, line ts)

    def read_until(t: float) -> None:
        nonlocal carry, next_sample
        while now[0] < t:
            step = min(t, now[0] + DT) - now[0]
            now[0] += step
            in_job = args.job_every and (now[0] % args.job_every) < args.job_s
            if not in_job:
                carry += read_tps * step
                while carry >= CHUNK or (carry >= 1 and queue.backlog_tokens() <= carry):
                    toks, n = queue.pop(CHUNK)
                    if not n:
                        carry = min(carry, CHUNK)
                        break
                    carry -= toks.size
                while pending_alerts and queue.tail > pending_alerts[0][0]:
                    alert_delays.append(now[0] - pending_alerts.pop(0)[1])
            feed.tick()
            if now[0] >= next_sample:
                oldest = queue.oldest_pending_ts()
                lags.append(now[0] - oldest if oldest is not None else 0.0)
                o = feed.oldest_unread_ts()
                unread.append(now[0] - o if o is not None else 0.0)
                next_sample += 1.0

    for ts, host, tid, template, text, params, important, new in stream.lines(args.rate, args.seconds):
        read_until(ts)
        head = queue.head
        feed.add(ts, host, tid, text, important, new=new, template=template, params=params)
        if important and queue.head > head:
            pending_alerts.append((queue.head - 1, ts))
    read_until(args.seconds)
    st = feed.stats()
    b = st["budget"]
    return {"reading_tokens_per_s": read_tps, "budget": budget, "lag_s": figures(lags), "oldest_unread_s": figures(unread),
            "lag_series_s": [round(x, 1) for x in lags[:: max(1, len(lags) // 20)]],
            "sent_tokens_per_s": round(st["pushed_tokens"] / args.seconds, 1), "lines": b["lines"],
            "verbatim_lines": b["verbatim_lines"], "summaries": b["summaries"],
            "summarised_lines": b["summarised_lines"], "skipped_lines": b["skipped_lines"],
            "folding_lines_at_end": b["folding_lines"], "queue_dropped_entries": st["dropped_entries"],
            "alerted_read_delay_s": figures(alert_delays), "window_s_at_end": b["window_s"]}


def figures(xs: list[float]) -> dict:
    if not xs:
        return {}
    s = sorted(xs)
    half = xs[len(xs) // 2:]
    n = len(half)
    mx, my = (n - 1) / 2, sum(half) / n
    den = sum((i - mx) ** 2 for i in range(n)) or 1.0
    slope = sum((i - mx) * (y - my) for i, y in enumerate(half)) / den
    h = sorted(half)
    return {"p50": round(s[len(s) // 2], 2), "p95": round(s[int(0.95 * (len(s) - 1))], 2), "max": round(s[-1], 2),
            "end": round(xs[-1], 2), "p95_second_half": round(h[int(0.95 * (n - 1))], 2),
            "max_second_half": round(h[-1], 2), "slope_second_half": round(slope, 4)}


def tokenizer(name: str):
    """The target's tokenizer when its GGUF is here (how many tokens a line really is), else ~3.5
    characters a token."""
    if name == "qwen":
        try:
            from gateway.llm.models import resolve_model
            from gateway.serve.prompts import Prompts
            p = Prompts.for_model(resolve_model("qwen2.5-coder-1.5b-instruct"))
            return p.log_tokens, "qwen2.5-coder-1.5b"
        except Exception as exc:   # no model pulled: the estimate
            print(f"no qwen tokenizer ({exc}); 3.5 chars a token", file=sys.stderr)
    return (lambda s: [0] * max(1, round(len(s) / 3.5))), "3.5 chars/token"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=2000.0, help="lines/s")
    ap.add_argument("--seconds", type=float, default=300.0, help="simulated seconds")
    ap.add_argument("--read-rates", default="55,110,180", help="engine reading rates, tokens/s")
    ap.add_argument("--templates", type=int, default=40)
    ap.add_argument("--variety", choices=("normal", "high"), default="normal")
    ap.add_argument("--incident-every", type=float, default=60.0)
    ap.add_argument("--job-every", type=float, default=30.0)
    ap.add_argument("--job-s", type=float, default=6.0)
    ap.add_argument("--window-s", type=float, default=5.0)
    ap.add_argument("--target-lag-s", type=float, default=5.0)
    ap.add_argument("--max-window-s", type=float, default=60.0)
    ap.add_argument("--tokenizer", choices=("qwen", "chars"), default="qwen")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tokenize, tok_name = tokenizer(args.tokenizer)
    runs = []
    t0 = time.perf_counter()
    for r in (float(x) for x in args.read_rates.split(",")):
        for budget in (False, True):
            res = simulate(args, r, budget, tokenize)
            runs.append(res)
            lag, un = res["lag_s"], res["oldest_unread_s"]
            print(f"{r:6.0f} tok/s budget={'on ' if budget else 'off'} lag p50 {lag['p50']:7.1f} p95 {lag['p95']:7.1f} "
                  f"max {lag['max']:7.1f} end {lag['end']:7.1f} 2nd half p95 {lag['p95_second_half']:6.1f} slope {lag['slope_second_half']:+.3f} | unread p95 "
                  f"{un['p95']:6.1f} | sent {res['sent_tokens_per_s']:6.1f} tok/s, summarised {res['summarised_lines']}, "
                  f"skipped {res['skipped_lines']}, dropped entries {res['queue_dropped_entries']}", file=sys.stderr)
            print("   lag over time (s): " + " ".join(f"{x:g}" for x in res["lag_series_s"]), file=sys.stderr)
    print_result({"bench": "reading_lag", "line_rate": args.rate, "seconds": args.seconds, "variety": args.variety,
                  "templates": args.templates, "incident_every_s": args.incident_every, "job_every_s": args.job_every,
                  "job_s": args.job_s, "window_s": args.window_s, "target_lag_s": args.target_lag_s,
                  "max_window_s": args.max_window_s, "tokenizer": tok_name, "cpu": cpu_here(),
                  "wall_s": round(time.perf_counter() - t0, 1), "runs": runs})


if __name__ == "__main__":
    main()
