"""Benchmark of the native engine against llama.cpp (llama-cpp-python) on the same GGUF files and
thread count: decode, prefill, verify cost, roofline (read bandwidth / weight bytes read per token), peak RSS,
RSS drift over a long stream.

The roofline's bandwidth is measured between decode rounds, in the same process (gateway._native's
read_bandwidth_gbs: the engine's thread pool streaming a 512 MiB buffer), so that decode and the bandwidth
it is held to see the same host: a shared VM's memory speed swings by tens of percent from minute to minute.
The numpy figures (copy, OR-reduction read) are kept for comparison with earlier runs; the OR-reduction
reads more slowly than the native loop, so fractions against it came out higher.

Each engine runs in its own subprocess (so peak RSS is its own), both loaded at once; the orchestrator
alternates the timed requests (prefill, decode rounds) between them round by round, so that both engines
meet the host's drift alike. Timings are wall-clock: on a machine shared with other work they are noisy;
compare the ratios, which are measured in one run. Last line: one JSON object.

    .venv/bin/python tools/bench/bench_engine.py [--threads N] [--models 1.5b,0.5b] [--quick] [--isa avx2]
                                                 [--kernel-plan DIR] [--no-llama]

--kernel-plan DIR: ours runs the calibrated kernel plan in DIR (gateway/llm/kernel_plan.py; written by
`linegate doctor --calibrate` under <data_dir>/cache); the summary names the plan each model ran
(kernel_plan_<model>: "static" when none, or when the plan is for another CPU or build) and the CPU; a
second engine on the static plan runs in the same rounds (static_*, decode_calibrated_vs_static_<model>).

--isa avx2 (x86): both engines built for x86-64-v3 (AVX2, no AVX-512), as on a CPU without AVX-512:
ours by CMake into build/bench-avx2, llama-cpp-python with its AVX-512 options off into
build/bench-llama-avx2 (each built once, then reused).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # the tools package, run as a file
from gateway.datasets import loghub_dir  # noqa: E402
from tools.bench.engine_builds import ISA_DIRS, build_isa, ensure_llama_cpp, use_isa  # noqa: E402,F401
from tools.bench.harness import (CPU_FLAGS_OF_INTEREST, cpu_identity, cpu_ticks, peak_rss_mb,  # noqa: F401
                                 print_result, read_text, rss_mb, steal_pct)  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MODELS = {"1.5b": "qwen2.5-coder-1.5b-instruct", "0.5b": "qwen2.5-coder-0.5b-instruct"}
LOGHUB = loghub_dir()
CACHE_TOKENS = 4096          # the 1.5B's cache for the RSS figure: n_sink + n_ring + n_scratch
N_SINK, N_SCRATCH = 4, 512
PROMPT, DECODE, PREFILL = 32, 128, (512, 32)
DECODE_ROUNDS = 4            # decode runs in DECODE / DECODE_ROUNDS-token rounds, each followed by a
BW_MB, BW_REPS = 512, 3      # native read-bandwidth measurement (best of BW_REPS passes over BW_MB MiB)
BW_SETTLE_S = 0.1            # before it, idle time for the engine's threads to stop spinning (llama.cpp's
                             # OpenMP threads spin after each eval and would otherwise share the cores)
VERIFY_K = (4, 8)
VERIFY_REPS = 7  # interleaved rounds (see verify_costs)
STREAM_TOKENS, STREAM_RING = 20_000, 1024


def loghub_tokens(tokenizer, n: int) -> list[int]:
    """n token ids of Loghub lines (repeated if short). Computed by the orchestrator and passed to
    the workers in a file, so neither worker's RSS includes a Python tokenizer."""
    text = ""
    for system in ("HDFS", "Apache", "OpenSSH", "Linux", "Zookeeper", "Spark", "Hadoop", "BGL"):
        path = LOGHUB / system / f"{system}_2k.log"
        if path.exists():
            text += path.read_text(errors="replace")
    toks = tokenizer.encode(text)
    while len(toks) < n:
        toks = toks + toks
    return toks[:n]


def median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def interleaved_medians(steps: dict, rounds: int, clock=time.perf_counter) -> dict:
    """Median seconds of each callable in `steps`, timed in `rounds` rounds that run every step once in
    turn, so that host drift (a shared VM's memory bandwidth and compute swing by tens of percent over
    minutes) falls on all of them alike."""
    times = {k: [] for k in steps}
    for _ in range(rounds):
        for k, step in steps.items():
            t = clock()
            step()
            times[k].append(clock() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def decode_round(step, n: int, threads: int, clock=time.perf_counter, bandwidth=None) -> list[float]:
    """n decode tokens by step() (one token each), then, after BW_SETTLE_S of idle, a read-bandwidth
    measurement: [seconds, n, GB/s]."""
    if bandwidth is None:
        from gateway import _native
        bandwidth = lambda: _native.read_bandwidth_gbs(BW_MB, threads, BW_REPS)   # noqa: E731
    t = clock()
    for _ in range(n):
        step()
    seconds = clock() - t
    time.sleep(BW_SETTLE_S)
    return [seconds, n, bandwidth()]


def roofline(rounds: list[list[float]], bytes_per_token: int) -> dict:
    """From decode_round's results: decode tok/s over all rounds; the median round bandwidth; the roofline fraction
    (weight bytes read per second / bandwidth) as the median over rounds, each against its own bandwidth."""
    seconds = sum(r[0] for r in rounds)
    tokens = sum(r[1] for r in rounds)
    fractions = [r[1] / r[0] * bytes_per_token / (r[2] * 1e9) for r in rounds]
    return {"decode_tok_s": tokens / seconds, "read_bandwidth_gbs": float(np.median([r[2] for r in rounds])),
            "roofline_fraction": float(np.median(fractions))}


def verify_costs(steps: dict, reps: int, clock=time.perf_counter) -> dict:
    """time(step K) / time(step 1) for each K in `steps` (K -> a callable that runs one forward of K
    tokens), after one warm-up run each, from interleaved rounds. Several engines can share the rounds:
    keys (suffix, K) give "verify_cost_k{K}{suffix}" against that suffix's own 1-token step. The medians
    themselves come as "verify_ms_k{K}{suffix}" (K = 1 too): the ratio moves with the 1-token step's
    time, which this host's memory speed swings, so the absolute times belong next to it."""
    keyed = {k if isinstance(k, tuple) else ("", k): step for k, step in steps.items()}
    for suffix in {sfx for sfx, _ in keyed}:
        if (suffix, 1) not in keyed:
            raise ValueError(f"verify_costs: the ratios need the 1-token step{' of ' + suffix if suffix else ''}; "
                             f"got sizes {sorted(k for sfx, k in keyed if sfx == suffix)}")
    for step in keyed.values():
        step()  # warm-up
    med = interleaved_medians(keyed, reps, clock)
    out = {f"verify_cost_k{k}{sfx}": med[sfx, k] / med[sfx, 1] for sfx, k in keyed if k != 1}
    out.update({f"verify_ms_k{k}{sfx}": med[sfx, k] * 1e3 for sfx, k in keyed})
    return out


# ---------------------------------------------------------------------------- workers
# Each engine runs in its own subprocess (its peak RSS is its own) and serves timing requests from the
# orchestrator (serve()), which alternates them between the engines, round by round: on this host the
# memory speed swings by tens of percent over minutes, and engines measured one after the other saw
# different machines (decode ratio 1.18 and 1.42 in two runs a quarter of an hour apart).

class OursSession:
    """The native engine in this process: setup, then prefill / decode / verify requests."""

    def __init__(self, model: str, threads: int, toks: list[int]):
        from gateway.llm.engine import Engine

        self.model, self.threads, self.toks = model, threads, toks
        self.eng = Engine(model, n_sink=N_SINK, n_ring=CACHE_TOKENS - N_SINK - N_SCRATCH, n_scratch=N_SCRATCH,
                          n_threads=threads, **BARE_ENGINE)
        e = self.e = self.eng.native
        self.out1 = np.empty(e.n_vocab, np.float32)
        self.one = np.zeros(1, np.int32)
        self.decoding = False
        e.forward_scratch(self.arr(toks[:64]), self.out1)          # page the weights in
        e.rollback(0)
        self.prefill(max(PREFILL))                                 # the largest chunk's buffers touched
        e.forward_scratch(self.arr(toks[:PROMPT]), self.out1)
        for step in self.verify_steps(e).values():                 # and verification's (all logits)
            step()
        e.rollback(0)
        # This engine's peak: before the second (q8) engine and the bandwidth measurements' buffer exist.
        self.peak_rss = peak_rss_mb()

    @staticmethod
    def arr(t) -> np.ndarray:
        return np.asarray(t, dtype=np.int32)

    def prefill(self, n: int) -> float:
        x = self.arr(self.toks[:n])
        t = time.perf_counter()
        self.e.forward_scratch(x, self.out1)
        seconds = time.perf_counter() - t
        self.e.rollback(0)
        return seconds

    def decode(self, n: int) -> list[float]:
        """The next n of the greedy tokens after the 32-token prompt (consecutive calls continue)."""
        if not self.decoding:
            self.e.rollback(0)
            self.e.forward_scratch(self.arr(self.toks[:PROMPT]), self.out1)
            self.decoding = True
        def step():
            self.one[0] = int(np.argmax(self.out1))
            self.e.forward_scratch(self.one, self.out1)
        return decode_round(step, n, self.threads)

    def verify_steps(self, eng, suffix: str = "") -> dict:
        """(suffix, K) -> one forward of K tokens after the prompt, all logits (as verification needs)."""
        def forward_step(k: int):
            x, out = self.arr(self.toks[PROMPT:PROMPT + k]), np.empty((k, eng.n_vocab), np.float32)
            def step():
                eng.forward_scratch(x, out, True)
                eng.rollback(PROMPT)
            return step
        return {(suffix, k): forward_step(k) for k in (1, *VERIFY_K)}

    def verify(self) -> dict:
        """time(T=K) / time(T=1) in scratch after the prompt; also for a second engine on the same mmap
        with one-term activations (act_precision "q8", the draft's; llama.cpp's scheme), in the same
        rounds: suffix "_q8"."""
        from gateway.llm.engine import Engine

        self.decoding = False
        e8 = Engine(self.model, n_sink=N_SINK, n_ring=64, n_scratch=64, n_threads=self.threads,
                    kv_policy=BARE_ENGINE["kv_policy"], act_precision="q8").native
        for eng in (self.e, e8):
            eng.rollback(0)
            eng.forward_scratch(self.arr(self.toks[:PROMPT]), self.out1)
        res = verify_costs({**self.verify_steps(self.e), **self.verify_steps(e8, "_q8")}, VERIFY_REPS)
        self.e.rollback(0)
        return res

    def info(self) -> dict:
        from gateway.llm import kernel_plan

        return {"peak_rss_mb": self.peak_rss, "bytes_per_token": self.e.bytes_per_token, "simd": self.e.simd,
                "kernel_plan": kernel_plan.active()["plan"]}


class LlamaSession:
    """llama.cpp (llama-cpp-python) on the same GGUF and threads, serving the same requests."""

    def __init__(self, model: str, threads: int, toks: list[int]):
        import llama_cpp

        from gateway.llm.models import resolve_model

        self.threads, self.toks = threads, toks
        self.llm = llama_cpp.Llama(model_path=str(resolve_model(model)), n_ctx=CACHE_TOKENS, n_threads=threads,
                                   n_threads_batch=threads, n_batch=512, n_ubatch=512, verbose=False)
        self.system_info = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
        self.n_vocab = self.llm.n_vocab()
        self.decoding = False
        self.llm.reset()
        self.llm.eval(toks[:64])                                   # page the weights in
        self.prefill(max(PREFILL))
        self.llm.reset()
        self.llm.eval(toks[:PROMPT])
        for step in self.verify_steps().values():
            step()
        self.peak_rss = peak_rss_mb()                              # before the bandwidth buffer exists

    def last_logits(self) -> np.ndarray:   # scores[] is only filled with logits_all; read the context's row
        return np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.n_vocab,))

    def prefill(self, n: int) -> float:
        self.decoding = False
        self.llm.reset()
        t = time.perf_counter()
        self.llm.eval(self.toks[:n])
        return time.perf_counter() - t

    def decode(self, n: int) -> list[float]:
        if not self.decoding:
            self.llm.reset()
            self.llm.eval(self.toks[:PROMPT])
            self.decoding = True
        return decode_round(lambda: self.llm.eval([int(np.argmax(self.last_logits()))]), n, self.threads)

    def verify_steps(self) -> dict:
        def eval_step(k: int):
            def step():
                self.llm.n_tokens = PROMPT                         # drop the last block, as verification does
                self.llm._ctx.kv_cache_seq_rm(-1, PROMPT, -1)
                self.llm.eval(self.toks[PROMPT:PROMPT + k])
            return step
        return {k: eval_step(k) for k in (1, *VERIFY_K)}

    def verify(self) -> dict:
        self.decoding = False
        self.llm.reset()
        self.llm.eval(self.toks[:PROMPT])
        return verify_costs(self.verify_steps(), VERIFY_REPS)

    def info(self) -> dict:
        return {"peak_rss_mb": self.peak_rss, "system_info": self.system_info}


SESSIONS = {"ours": OursSession, "llama": LlamaSession}


def serve(session, lines, write) -> None:
    """Answer JSON requests {"cmd": "prefill"|"decode"|"verify"|"info", ...} one per line, until "quit"."""
    write({"ready": True})
    for line in lines:
        req = json.loads(line)
        cmd = req.pop("cmd")
        if cmd == "quit":
            return
        write({"result": getattr(session, cmd)(**req)})


def measure(sessions: dict, quick: bool) -> dict:
    """Every figure of each engine in `sessions` (name -> object with call(cmd, **kw)), the timed ones
    alternating between the engines round by round. Returns name -> figures."""
    res = {name: {} for name in sessions}
    reps = 1 if quick else 3
    for n in PREFILL:
        times = {name: [] for name in sessions}
        for _ in range(reps):
            for name, s in sessions.items():
                times[name].append(s.call("prefill", n=n))
        for name in sessions:
            res[name][f"prefill{n}_tok_s"] = n / float(np.median(times[name]))
    for name in sessions:
        res[name]["decode_rounds"] = []
    for _ in range(DECODE_ROUNDS):
        for name, s in sessions.items():
            res[name]["decode_rounds"].append(s.call("decode", n=DECODE // DECODE_ROUNDS))
    for name, s in sessions.items():
        res[name].update(s.call("verify"))
        res[name].update(s.call("info"))
    return res


def worker_drift(model: str, threads: int, toks: list[int]) -> dict:
    from gateway.llm.engine import Engine

    n_tokens = len(toks)
    eng = Engine(model, n_sink=N_SINK, n_ring=STREAM_RING, n_scratch=64, n_threads=threads, **BARE_ENGINE)
    eng.prefill_stream(toks[:STREAM_RING])               # the ring is full from here on
    before = rss_mb()
    t = time.perf_counter()
    for i in range(STREAM_RING, n_tokens, 256):
        eng.prefill_stream(toks[i:i + 256])
    dt = time.perf_counter() - t
    after = rss_mb()
    return {"rss_before_mb": before, "rss_after_mb": after, "rss_drift_pct": 100.0 * (after - before) / before,
            "stream_tok_s": (n_tokens - STREAM_RING) / dt, "stream_total": eng.stream_total}


# ---------------------------------------------------------------------------- orchestration

def _parallel_best(fn, src: np.ndarray, threads: int, reps: int) -> float:
    """Best wall time of `threads` threads running fn(a, b) over their slices of src (numpy releases the GIL)."""
    parts = np.array_split(np.arange(src.size), threads)
    bounds = [(p[0], p[-1] + 1) for p in parts]
    def run():
        ts = [threading.Thread(target=fn, args=ab) for ab in bounds]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    run()
    return min(median_time(run, 1) for _ in range(reps))


def numpy_copy_bandwidth_gbs(threads: int, mb: int = 512, reps: int = 5) -> float:
    """Memory copy bandwidth (bytes read + written per second), `threads` numpy copies in parallel."""
    src = np.ones(mb * 2**20 // 8)
    dst = np.empty_like(src)
    return 2 * src.nbytes / _parallel_best(lambda a, b: np.copyto(dst[a:b], src[a:b]), src, threads, reps) / 1e9


def numpy_read_bandwidth_gbs(threads: int, mb: int = 512, reps: int = 5) -> float:
    """Memory read bandwidth (bytes read per second): `threads` numpy OR-reductions of a 512 MB array in
    parallel. Kept for comparison with earlier runs: it reads more slowly than the native loop that the
    roofline now uses (decode_rounds), so it flattered the roofline fraction."""
    src = np.ones(mb * 2**20 // 8, dtype=np.uint64)
    return src.nbytes / _parallel_best(lambda a, b: np.bitwise_or.reduce(src[a:b]), src, threads, reps) / 1e9


# The settings' BARE_ENGINE (kv_policy, act_precision), as the orchestrator passed it to this worker (--bare-engine):
# a worker does not import gateway.settings itself, whose imports (pydantic) would add ~14 MB to the peak RSS it reports.
BARE_ENGINE: dict = {}
ACT_PRECISION: str | None = None   # --act-precision: ours' activation precision instead of BARE_ENGINE's (q8x2)


def worker_cmd(kind: str, model: str, threads: int, tokens_file: Path, isa: str | None, plan: str | None = None) -> list[str]:
    from gateway.settings import BARE_ENGINE as bare

    engine = {**bare.model_dump(), **({"act_precision": ACT_PRECISION} if ACT_PRECISION else {})}
    return [sys.executable, __file__, "--worker", kind, "--model", model, "--threads", str(threads),
            "--tokens-file", str(tokens_file), "--bare-engine", json.dumps(engine)] + \
        (["--isa", isa] if isa else []) + (["--kernel-plan", plan] if plan else [])


def run_worker(kind: str, model: str, threads: int, tokens_file: Path, isa: str | None = None, plan: str | None = None) -> dict:
    """A one-shot worker (the RSS drift stream): its last stdout line, JSON."""
    out = subprocess.run(worker_cmd(kind, model, threads, tokens_file, isa, plan), capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} worker on {model} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class WorkerProc:
    """An engine session in a subprocess (serve() at the other end): call() sends one request, waits."""

    def __init__(self, kind: str, model: str, threads: int, tokens_file: Path, isa: str | None = None,
                 plan: str | None = None):
        self.name = f"{kind} worker on {model}"
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(worker_cmd(kind, model, threads, tokens_file, isa, plan), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, cwd=REPO)
        self.read()   # {"ready": true}: set up (loaded, paged in, warmed)

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.err.seek(0)
            raise RuntimeError(f"{self.name} failed (exit {self.proc.returncode}):\n{self.err.read()[-3000:]}")
        return json.loads(line)

    def call(self, cmd: str, **kw):
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
        self.proc.stdin.flush()
        return self.read()["result"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.err.close()


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--models", default="1.5b,0.5b")
    ap.add_argument("--stream-model", default="0.5b", help="model for the RSS drift stream")
    ap.add_argument("--stream-tokens", type=int, default=STREAM_TOKENS)
    ap.add_argument("--quick", action="store_true", help="single prefill repetitions (smoke run)")
    ap.add_argument("--worker", choices=("ours", "llama", "drift"), help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--tokens-file", help=argparse.SUPPRESS)
    ap.add_argument("--bare-engine", type=json.loads, default={}, help=argparse.SUPPRESS)
    ap.add_argument("--isa", choices=sorted(ISA_DIRS), help="both engines built for this instruction set")
    ap.add_argument("--kernel-plan", help="ours runs the calibrated kernel plan in this folder (default: static); "
                    "a second engine with the static plan runs alongside, its rounds alternating with the others")
    ap.add_argument("--no-llama", action="store_true", help="leave llama.cpp out (not installed, or crashing here)")
    ap.add_argument("--act-precision", choices=("q8x2", "q8"),
                    help="ours' activation precision (default: the correctness gate's, settings.BARE_ENGINE: q8x2; "
                         "the appliance's \"auto\" runs q8 on CPUs)")
    return ap.parse_args(argv)


def _run_worker(args: argparse.Namespace) -> int:
    """One engine in its own process (--worker): timed steps asked for on stdin, answered on stdout."""
    use_isa(args.worker, args.isa)
    BARE_ENGINE.update(args.bare_engine)
    if args.kernel_plan and args.worker != "llama":   # a plan for another build is ignored (one log line)
        from gateway.llm import kernel_plan
        kernel_plan.load(args.kernel_plan)
    toks = json.loads(Path(args.tokens_file).read_text())
    if args.worker == "drift":
        print(json.dumps(worker_drift(args.model, args.threads, toks)))
        return 0
    session = SESSIONS[args.worker](args.model, args.threads, toks)

    def write(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()
    serve(session, sys.stdin, write)
    return 0


def main(argv: list[str] | None = None) -> int:
    global ACT_PRECISION
    args = _args(argv)
    if args.worker:
        return _run_worker(args)
    ACT_PRECISION = args.act_precision
    from gateway.llm.models import resolve_model
    from gateway.llm.tokenizer import Tokenizer

    have_llama = not args.no_llama and ensure_llama_cpp()
    if args.isa:
        build_isa(args.isa)
    work = Path(tempfile.mkdtemp(prefix="bench_engine_"))
    bench_tokens, stream_tokens = work / "bench.json", work / "stream.json"
    tokenizer = Tokenizer.from_gguf(resolve_model(MODELS["1.5b"]))   # the 0.5B shares it
    bench_tokens.write_text(json.dumps(loghub_tokens(tokenizer, 1024)))
    stream_tokens.write_text(json.dumps(loghub_tokens(tokenizer, args.stream_tokens)))
    from gateway.settings import BARE_ENGINE as bare
    summary: dict = {"threads": args.threads, "llama_cpp_available": have_llama, "isa": args.isa or "native",
                     "act_precision": args.act_precision or bare.act_precision}
    cpuinfo, stat0 = read_text("/proc/cpuinfo"), read_text("/proc/stat")
    summary["cpu"] = cpu_identity(cpuinfo) if cpuinfo else None
    ticks0 = cpu_ticks(stat0) if stat0 else None
    summary["copy_bandwidth_numpy_gbs"] = numpy_copy_bandwidth_gbs(args.threads)
    summary["read_bandwidth_numpy_gbs"] = numpy_read_bandwidth_gbs(args.threads)
    for key in args.models.split(","):
        model = MODELS[key]
        tag = key.replace(".", "_")
        sessions = {"ours": WorkerProc("ours", model, args.threads, bench_tokens, args.isa, args.kernel_plan)}
        try:
            if args.kernel_plan:
                sessions["ours_static"] = WorkerProc("ours", model, args.threads, bench_tokens, args.isa)
            if have_llama:
                sessions["llama"] = WorkerProc("llama", model, args.threads, bench_tokens, args.isa)
            res = measure(sessions, args.quick)
        finally:
            for s in sessions.values():
                s.close()
        ours = res["ours"]
        ours.update(roofline(ours["decode_rounds"], ours["bytes_per_token"]))
        print(f"ours {model}: {json.dumps(ours)}", file=sys.stderr)
        for name in ("decode_tok_s", "prefill512_tok_s", "prefill32_tok_s", "peak_rss_mb"):
            summary[f"ours_{name}_{tag}"] = ours[name]
        summary[f"read_bandwidth_gbs_{tag}"] = ours["read_bandwidth_gbs"]
        summary[f"roofline_tok_s_{tag}"] = ours["read_bandwidth_gbs"] * 1e9 / ours["bytes_per_token"]
        summary[f"roofline_fraction_{tag}"] = ours["roofline_fraction"]
        if key == "1.5b":
            summary["peak_rss_mb_1_5b"] = ours["peak_rss_mb"]
            summary["verify_cost_k4"] = ours["verify_cost_k4"]
            summary["verify_cost_k8"] = ours["verify_cost_k8"]
        for k in VERIFY_K:
            summary[f"verify_cost_k{k}_{tag}"] = ours[f"verify_cost_k{k}"]
            summary[f"verify_cost_k{k}_q8_{tag}"] = ours[f"verify_cost_k{k}_q8"]
        for k in (1, *VERIFY_K):
            summary[f"verify_ms_k{k}_{tag}"] = ours[f"verify_ms_k{k}"]
        summary["simd"] = ours["simd"]
        summary[f"kernel_plan_{tag}"] = ours["kernel_plan"]   # what the worker ran: static or calibrated
        if "ours_static" in res:   # the same engine on the static plan, in the same rounds
            st = res["ours_static"]
            st.update(roofline(st["decode_rounds"], st["bytes_per_token"]))
            for name in ("decode_tok_s", "prefill512_tok_s", "prefill32_tok_s", *(f"verify_ms_k{k}" for k in (1, *VERIFY_K))):
                summary[f"static_{name}_{tag}"] = st[name]
            summary[f"decode_calibrated_vs_static_{tag}"] = ours["decode_tok_s"] / st["decode_tok_s"]
        if have_llama:
            ref = res["llama"]
            ref.update(roofline(ref["decode_rounds"], ours["bytes_per_token"]))   # the same GGUF's weights
            print(f"llama.cpp {model}: {json.dumps(ref)}", file=sys.stderr)
            summary[f"llama_roofline_fraction_{tag}"] = ref["roofline_fraction"]
            for name in ("decode_tok_s", "prefill512_tok_s", "prefill32_tok_s", "peak_rss_mb",
                         "verify_cost_k4", "verify_cost_k8", *(f"verify_ms_k{k}" for k in (1, *VERIFY_K))):
                summary[f"llama_{name}_{tag}"] = ref[name]
            summary[f"llama_system_info_{tag}"] = ref["system_info"]
            summary[f"decode_ratio_{tag}"] = ours["decode_tok_s"] / ref["decode_tok_s"]
            summary[f"prefill512_ratio_{tag}"] = ours["prefill512_tok_s"] / ref["prefill512_tok_s"]
            summary[f"prefill32_ratio_{tag}"] = ours["prefill32_tok_s"] / ref["prefill32_tok_s"]
    drift = run_worker("drift", MODELS[args.stream_model], args.threads, stream_tokens, args.isa, args.kernel_plan)
    summary.update({k: drift[k] for k in ("rss_before_mb", "rss_after_mb", "rss_drift_pct", "stream_tok_s")})
    summary["rss_drift_model"] = MODELS[args.stream_model]
    summary["load_avg_1m"] = os.getloadavg()[0]
    stat1 = read_text("/proc/stat")
    # Steal time over the whole run: on a VM whose host runs others, both engines lose it alike (their timed
    # steps alternate), but absolute figures shrink with it.
    summary["steal_pct"] = steal_pct(ticks0, cpu_ticks(stat1)) if ticks0 and stat1 else None
    print_result({k: (round(v, 4) if isinstance(v, float) else v) for k, v in summary.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
