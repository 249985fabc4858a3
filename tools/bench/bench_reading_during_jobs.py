"""Reading lag while jobs run, with reading during jobs on and off (issue 42, part 3), on the real engine:
an EngineThread (the appliance's engine settings but the ones named here) reads a line stream of --rate
lines/s (about 43 tokens each, verbatim: no folding, no reading budget, so the engine reads all of it)
while a job arrives every --job-every s: an operator question (--job chat: no store query, answers end
where the model stops) or an alert explanation (--job explain: --max-tokens written in full). Both
modes run in the same process, one after the other, each --seconds long on a fresh EngineThread.

Sampled every 0.25 s: the reading lag (age of the oldest unread queue entry, what /api/stats
engine_thread.lag_s reports), split by whether a job was running. Per mode: lag p50/p95/max overall and
while jobs ran, the jobs' time to first token and total, and the stream chunks read during jobs. Ends
with one JSON line.

    .venv/bin/python tools/bench/bench_reading_during_jobs.py --seconds 120 --threads 2
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.pipeline.token_queue import ContextFeed, TokenQueue  # noqa: E402
from gateway.serve.engine_thread import EngineThread  # noqa: E402
from gateway.serve.jobs import Refused  # noqa: E402
from gateway.serve.prompts import Prompts  # noqa: E402
from gateway.settings import EngineSettings  # noqa: E402
from tools.bench.harness import cpu_here, print_result  # noqa: E402

HOSTS = ("line3/filler", "line3/press", "line3/oven", "line3/labeler")
QUESTIONS = ("What happened on the line in the last minute?", "Which machine reported the most warnings?",
             "Is the oven temperature stable?", "Summarise the filler's recent state.")
ALERT = {"severity": "error", "kind": "new_template", "host": "line3/oven",
         "template": "oven zone <NUM> heater fault code <NUM> temperature <NUM> C",
         "lines": ["oven zone 3 heater fault code 41 temperature 96.2 C",
                   "oven zone 3 heater fault code 41 temperature 97.0 C"]}
SAMPLE_S = 0.25


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))], 2)


def line(rng: random.Random, i: int) -> str:
    zone, temp, rpm = rng.randint(1, 6), rng.uniform(60, 90), rng.randint(800, 2400)
    return f"INFO cycle {i} zone {zone} temperature {temp:.1f} C spindle {rpm} rpm state RUN lot L24-{i % 97:02d}"


def run_mode(args, read: bool) -> dict:
    prompts = Prompts.for_model(args.model) if Path(args.model).exists() else None
    settings = EngineSettings(model=args.model, n_threads=args.threads, drafter="none", kernel_calibration="off",
                              read_during_jobs=read, prefill_chunk=args.chunk)
    if prompts is None:
        from gateway.llm.models import resolve_model
        prompts = Prompts.for_model(resolve_model(args.model))
    feed = ContextFeed(TokenQueue(65536, 8192), prompts.log_tokens, window_s=0.0)
    et = EngineThread(settings, feed, prompts=prompts)
    et.start()
    assert et.wait_ready(600)
    stop = threading.Event()
    rng = random.Random(7)

    def produce() -> None:
        i, t_next = 0, time.monotonic()
        while not stop.is_set():
            feed.add(time.time(), HOSTS[i % len(HOSTS)], i % 50, line(rng, i))
            et.notify()
            i += 1
            t_next += 1.0 / args.rate
            time.sleep(max(0.0, t_next - time.monotonic()))

    prod = threading.Thread(target=produce, daemon=True)
    prod.start()
    lag_all, lag_job, jobs, refused = [], [], [], 0
    t0 = time.monotonic()
    next_job = t0 + args.warmup
    handle = None
    while time.monotonic() - t0 < args.seconds:
        now = time.monotonic()
        if handle is None and now >= next_job:
            q = QUESTIONS[len(jobs) % len(QUESTIONS)]
            try:
                handle = (et.submit_chat([{"role": "user", "content": q}], max_tokens=args.max_tokens,
                                         ttft_budget_ms=args.budget_ms) if args.job == "chat"
                          else et.submit_explain(ALERT, max_tokens=args.max_tokens, budget_ms=args.budget_ms))
            except Refused:
                refused += 1
            next_job = now + args.job_every
        if handle is not None and handle._done.is_set():
            jobs.append(handle.result(1))
            handle = None
        st = et.stats()
        lag = st["lag_s"]
        if now - t0 >= args.warmup:
            lag_all.append(lag)
            if handle is not None:
                lag_job.append(lag)
        time.sleep(SAMPLE_S)
    if handle is not None:
        handle.cancel()
        handle.result(600)
    stop.set()
    prod.join()
    eng = et.stats()["engine"]
    adm = et.stats()["admission"]
    et.stop()
    done = [j for j in jobs if j.get("finish_reason") != "cancelled"]
    return {"read_during_jobs": read, "lag_p50_s": pct(lag_all, 0.5), "lag_p95_s": pct(lag_all, 0.95),
            "lag_max_s": pct(lag_all, 1.0), "lag_during_jobs_p50_s": pct(lag_job, 0.5),
            "lag_during_jobs_p95_s": pct(lag_job, 0.95), "lag_during_jobs_max_s": pct(lag_job, 1.0),
            "jobs": len(done), "refused": refused, "late": sum(bool(j["late"]) for j in done),
            "ttft_p50_s": pct([j["ttft_ms"] / 1000 for j in done if j["ttft_ms"]], 0.5),
            "total_p50_s": pct([j["total_ms"] / 1000 for j in done], 0.5),
            "total_max_s": pct([j["total_ms"] / 1000 for j in done], 1.0),
            "completion_tokens": sum(j["completion_tokens"] for j in done),
            "stream_chunks_during_jobs": eng.get("stream_chunks_during_jobs"),
            "stream_tokens_during_jobs": eng.get("stream_tokens_during_jobs"),
            "reads_skipped_deadline": eng.get("reads_skipped_deadline"),
            "reads_skipped_share": eng.get("reads_skipped_share"),
            "job_view_lost_tokens": eng.get("job_view_lost_tokens"),
            "stream_total": eng.get("stream_total"), "prefill_ms_per_tok": round(adm["prefill_ms_per_tok"], 2)
            if "prefill_ms_per_tok" in adm else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=120.0, help="per mode")
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=0.3, help="lines/s (about 43 tokens each)")
    ap.add_argument("--job", choices=("chat", "explain"), default="explain")
    ap.add_argument("--job-every", type=float, default=40.0)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--budget-ms", type=float, default=60_000.0)
    ap.add_argument("--chunk", type=int, default=32, help="engine.prefill_chunk")
    ap.add_argument("--modes", default="on,off")
    args = ap.parse_args()
    runs = [run_mode(args, m == "on") for m in args.modes.split(",")]
    for r in runs:
        print(r, file=sys.stderr)
    print_result({"bench": "reading_during_jobs", "cpu": cpu_here(), "model": args.model, "threads": args.threads,
                  "seconds": args.seconds, "rate": args.rate, "job": args.job, "job_every": args.job_every,
                  "max_tokens": args.max_tokens, "chunk": args.chunk, "runs": runs})


if __name__ == "__main__":
    main()
