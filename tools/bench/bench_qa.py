"""The QA benchmark (issue 23): operator questions through the OpenAI-compatible API of a fresh
appliance per system, judged against answers computed from the data (tools/bench/qa_questions.py).

For each system: `linegate keys create` + `linegate serve` on a free port with a temporary data dir
and a config with the demo line off; wait for /health; POST the system's 2k raw lines to /api/ingest;
wait until the engine has read them (/api/stats: no backlog, no queued job); ask each question
(non-streamed, temperature 0); judge; stop the appliance. Prints one line per question and ends with
one JSON line: accuracy, by_kind, by_lang, loop_rate, p50_s, p95_s, n, model, cpu, commit.

    python tools/bench/bench_qa.py [--linegate .venv/bin/linegate] [--systems BGL,demo] [--limit N]
                                   [--questions FILE] [--out FILE]

A question file of tools/bench/qa_factory.py has systems "synth/<shape>": those ingest synth_logs'
generated lines (qa_questions.system_lines), the ones its answers were computed from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.bench import qa_questions as qq  # noqa: E402
from tools.bench.harness import Served, cpu_model, print_result  # noqa: E402

SHOW_CHARS = 160
DEMO_OFF = "[ingest.demo]\nenabled = false\n"   # only the lines the bench sends


def git_commit(path: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def percentile(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


@contextlib.contextmanager
def serve(linegate: str, extra_config: str = ""):
    """One `linegate serve` (tools/bench/harness.py's Served: a free port, its own temporary data dir, one
    key) with the demo line off and `extra_config`, ready once /health answers; stopped and removed after."""
    with tempfile.TemporaryDirectory(prefix="bench_qa_") as tmp, \
            Served(Path(tmp), DEMO_OFF + extra_config, linegate=os.path.abspath(linegate), key_name="bench_qa") as app:
        yield app


def ingest(app: Served, http, lines: list[dict], batch: int = 250) -> int:
    headers = {"Authorization": f"Bearer {app.key}", "Content-Type": "application/x-ndjson"}
    accepted = 0
    for i in range(0, len(lines), batch):
        body = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines[i:i + batch]).encode() + b"\n"
        r = http.post(app.url + "/api/ingest", content=body, headers=headers, timeout=120)
        r.raise_for_status()
        accepted += r.json()["accepted"]
    return accepted


def stats(app: Served, http) -> dict:
    r = http.get(app.url + "/api/stats", headers={"Authorization": f"Bearer {app.key}"}, timeout=30)
    r.raise_for_status()
    return r.json()


def settled(s: dict) -> bool:
    """The engine has read the lines and has no job waiting (alert explanations included). Without a
    token_queue section (no engine, or an appliance from before issue 44 that named it ring) every
    appliance would look settled at once: refused."""
    if "token_queue" not in s:
        raise RuntimeError("/api/stats has no token_queue section: no engine, or an appliance older than "
                           "its names (ring, worker); bench_qa needs an engine that reports token_queue")
    queue, thread = s["token_queue"], s.get("engine_thread") or {}
    lag = queue.get("lag_tokens", queue.get("backlog_entries", 0)) or 0
    return lag == 0 and (thread.get("queue_depth") or 0) == 0


def wait_settled(app: Served, http, timeout_s: float) -> tuple[float, dict]:
    t0 = time.monotonic()
    s: dict = {}
    calm = 0
    while time.monotonic() - t0 < timeout_s:
        s = stats(app, http)
        calm = calm + 1 if settled(s) else 0
        if calm >= 2:
            break
        time.sleep(2.0)
    return time.monotonic() - t0, s


def ask(client, q: dict, max_tokens: int, retries: int = 6) -> dict:
    """One question; a 429/503 (queue full, admission refused) is retried after its Retry-After."""
    import openai

    refused = 0
    for _ in range(retries):
        t0 = time.monotonic()
        try:
            r = client.chat.completions.create(model="linegate", temperature=0, max_tokens=max_tokens,
                                               messages=[{"role": "user", "content": q["question"]}])
        except (openai.RateLimitError, openai.InternalServerError, openai.APIStatusError) as exc:
            status = getattr(exc, "status_code", None)
            if status not in (429, 503):
                return {"answer": "", "error": f"{status}: {exc}", "seconds": time.monotonic() - t0,
                        "refused": refused, "finish_reason": None}
            refused += 1
            ra = exc.response.headers.get("retry-after") if getattr(exc, "response", None) is not None else None
            time.sleep(min(30.0, float(ra)) if ra and ra.replace(".", "", 1).isdigit() else 5.0)
            continue
        except Exception as exc:     # timeout, connection: judged as a failed answer
            return {"answer": "", "error": f"{type(exc).__name__}: {exc}", "seconds": time.monotonic() - t0,
                    "refused": refused, "finish_reason": None}
        c = r.choices[0]
        query = [s for s in (r.model_extra or {}).get("sources") or [] if isinstance(s, dict) and "call" in s]
        return {"answer": c.message.content or "", "error": None, "seconds": time.monotonic() - t0,
                "refused": refused, "finish_reason": c.finish_reason,
                "completion_tokens": getattr(r.usage, "completion_tokens", None) if r.usage else None,
                "query": query[0] if query else None}
    return {"answer": "", "error": f"refused {refused} times", "seconds": 0.0, "refused": refused,
            "finish_reason": None}


def run_system(system: str, qs: list[dict], a: argparse.Namespace, log, recs: list[dict]) -> list[dict]:
    """Asks `qs` on a fresh appliance; appends a record per question to `recs` as it goes."""
    import httpx
    import openai

    extra = f"[token_queue]\nn_tokens = {a.token_queue_tokens}\n" if a.token_queue_tokens else ""
    engine = [f'{k} = "{v}"' for k, v in (("kv_policy", a.kv_policy), ("act_precision", a.act_precision)) if v]
    extra += "[engine]\n" + "".join(e + "\n" for e in engine) if engine else ""
    extra += "" if a.explain else "[alerts]\nexplain = []\n"
    if a.ttft_budget_ms:
        extra += f"[alerts]\nttft_budget_ms = {a.ttft_budget_ms}\n" if a.explain else \
            f"ttft_budget_ms = {a.ttft_budget_ms}\n"
    with serve(a.linegate, extra) as app, httpx.Client() as http:
        load_s = app.ready_s
        lines = qq.system_lines(system, a.data)
        n = ingest(app, http, lines)
        settle_s, s = wait_settled(app, http, a.settle_timeout)
        model = (s.get("engine") or {}).get("model") or (s.get("engine_thread") or {}).get("model")
        log(f"## {system}: ready in {load_s:.0f} s, {n}/{len(lines)} lines accepted, engine settled in "
            f"{settle_s:.0f} s{'' if settled(s) else ' (TIMED OUT, asking anyway)'}; model {model}")
        client = openai.OpenAI(base_url=app.url + "/v1", api_key=app.key, timeout=a.timeout, max_retries=0)
        for q in qs:
            r = ask(client, q, a.max_tokens)
            ok = r["error"] is None and qq.judge(r["answer"], q["check"])
            loop = qq.looped(r["answer"], r["finish_reason"])
            # Whether the store query's result held the answer: tells a wrong call from a wrong reading.
            found = r.get("query") is not None and qq.judge(json.dumps(r["query"].get("result"), ensure_ascii=False),
                                                              q["check"])
            rec = {**q, **r, "pass": ok, "loop": loop, "model": model, "result_has_answer": found}
            recs.append(rec)
            shown = " ".join(r["answer"].split())[:SHOW_CHARS] if not r["error"] else f"ERROR {r['error']}"
            call = json.dumps((r.get("query") or {}).get("call"), ensure_ascii=False)
            log(f"{'PASS' if ok else 'FAIL'}{' LOOP' if loop else ''} {q['id']} [{q['lang']}] {r['seconds']:.1f}s "
                f"| {q['question'][:100]} | want {json.dumps(q['check'], ensure_ascii=False)} | {shown} "
                f"| call {call}{' (result has it)' if found else ''}")
        if any(r["error"] for r in recs[-len(qs):]):
            server_errors(app, log)
    return recs


def server_errors(app: Served, log, lines: int = 60) -> None:
    """The appliance's log from its last traceback on, into the bench's log: the temporary data dir (and
    the log with it) is removed when the system is done, and an error answer says only its status."""
    try:
        text = Path(app.log_path).read_text(errors="replace").splitlines()
    except OSError as exc:
        log(f"(server log unreadable: {exc})")
        return
    at = max((i for i, x in enumerate(text) if x.startswith("Traceback")), default=None)
    log("\n".join(["## server log from its last traceback:", *text[at:at + lines]]) if at is not None
        else "## server log: no traceback")


def summary(recs: list[dict], a: argparse.Namespace) -> dict:
    def acc(rs: list[dict]) -> float | None:
        return round(sum(r["pass"] for r in rs) / len(rs), 4) if rs else None

    def by(field: str) -> dict:
        keys = sorted({r[field] for r in recs})
        return {k: {"accuracy": acc([r for r in recs if r[field] == k]), "n": sum(r[field] == k for r in recs)}
                for k in keys}

    times = [r["seconds"] for r in recs if r["error"] is None]
    models = sorted({str(r.get("model")) for r in recs if r.get("model")})
    lg = Path(a.linegate).resolve()
    repo = lg.parent.parent.parent if lg.parent.name == "bin" else lg.parent
    return {"accuracy": acc(recs), "result_has_answer": round(sum(bool(r.get("result_has_answer")) for r in recs)
                                                            / len(recs), 4) if recs else None,
            "by_kind": by("kind"), "by_lang": by("lang"), "by_system": by("system"),
            "loop_rate": round(sum(r["loop"] for r in recs) / len(recs), 4) if recs else None,
            "p50_s": round(percentile(times, 0.5), 2) if times else None,
            "p95_s": round(percentile(times, 0.95), 2) if times else None,
            "n": len(recs), "errors": sum(r["error"] is not None for r in recs),
            "refused": sum(r.get("refused", 0) for r in recs),
            "model": ",".join(models) or None, "cpu": cpu_model(), "commit": git_commit(repo),
            "bench_commit": git_commit(Path(__file__).resolve().parent), "max_tokens": a.max_tokens,
            "kv_policy": a.kv_policy or "appliance default", "token_queue_tokens": a.token_queue_tokens,
            "act_precision": a.act_precision or "appliance default"}


def _terminate(signum, frame) -> None:
    raise SystemExit(f"bench_qa: signal {signum}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--linegate", default=".venv/bin/linegate", help="the linegate executable to benchmark")
    ap.add_argument("--systems", help="comma-separated systems (default: all in the question set)")
    ap.add_argument("--limit", type=int, help="at most N questions per system")
    ap.add_argument("--questions", type=Path, help="question set JSON (default: generated now)")
    ap.add_argument("--data", type=Path, default=qq.DEFAULT_DATA, help="Loghub folder")
    ap.add_argument("--out", type=Path, help="write the per-question records here (JSON)")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per question")
    ap.add_argument("--settle-timeout", type=float, default=900.0,
                    help="seconds to wait for the engine to read the ingested lines")
    # --ring-tokens: its name before "ring" meant only the KV ring (one release, with a warning)
    ap.add_argument("--token-queue-tokens", "--ring-tokens", type=int, default=2048,
                    help="[token_queue] n_tokens of the appliance: the stream backlog it keeps for the engine. The "
                         "engine's window is n_ring = 2048 tokens, so 2048 leaves its final context unchanged while "
                         "the engine reads 2k tokens, not all ~40-60k of a 2k-line burst (many minutes on 2 cores). "
                         "0: the appliance's default")
    ap.add_argument("--kv-policy", choices=("novelty", "sink_ring", "semantic"),
                    help="[engine] kv_policy of the appliance (default: its own)")
    ap.add_argument("--act-precision", choices=("auto", "q8x2", "q8"),
                    help="[engine] act_precision of the appliance (default: its own)")
    ap.add_argument("--explain", action="store_true",
                    help="keep the appliance's alert explanations on: a 2k-line burst then queues explanation "
                         "jobs the bench must wait out (they run in scratch and leave the context as it was)")
    ap.add_argument("--ttft-budget-ms", type=float,
                    help="[alerts] ttft_budget_ms of the appliance (default: its own); on a loaded host the "
                         "admission controller may refuse every question (503) against the default")
    ap.add_argument("--summarize", type=Path, help="print the summary JSON line of a records file (--out) and exit")
    a = ap.parse_args(argv)
    if any(arg.split("=")[0] == "--ring-tokens" for arg in (sys.argv[1:] if argv is None else argv)):
        print("bench_qa: --ring-tokens is deprecated: use --token-queue-tokens", file=sys.stderr)
    if a.summarize:
        print_result(summary(json.loads(a.summarize.read_text(encoding="utf-8")), a), ensure_ascii=False)
        return 0
    signal.signal(signal.SIGTERM, _terminate)       # a killed bench still stops its appliance
    qs = json.loads(a.questions.read_text(encoding="utf-8")) if a.questions else qq.build(a.data)
    systems = [s for s in (a.systems.split(",") if a.systems else dict.fromkeys(q["system"] for q in qs)) if s]
    if not Path(a.linegate).exists():
        raise SystemExit(f"bench_qa: no linegate at {a.linegate}")

    def log(msg: str) -> None:
        print(msg, flush=True)

    recs: list[dict] = []
    try:
        for system in systems:
            mine = [q for q in qs if q["system"] == system][: a.limit]
            if not mine:
                log(f"## {system}: no questions")
                continue
            try:
                run_system(system, mine, a, log, recs)
            except Exception as exc:          # a system that cannot run counts its questions as failed
                log(f"## {system}: FAILED: {type(exc).__name__}: {exc}")
                done = {r["id"] for r in recs}
                recs += [{**q, "answer": "", "error": f"{type(exc).__name__}: {exc}", "seconds": 0.0, "refused": 0,
                          "finish_reason": None, "pass": False, "loop": False, "model": None}
                         for q in mine if q["id"] not in done]
    finally:                                  # records so far, also when stopped early
        if a.out:
            a.out.write_text(json.dumps(recs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print_result(summary(recs, a), ensure_ascii=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
