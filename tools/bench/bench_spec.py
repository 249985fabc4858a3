"""Speculative decoding on log tasks: target-only vs each drafter (and llama.cpp target-only) in one run.

Three tasks from Loghub (summarize 40 lines; answer with a quoted line; explain an alert): the log
lines go into the stream (sink + ring) as the appliance does, the question is a job in scratch.
Greedy, N new tokens. Prints a table, a cost model's predictions, and as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from gateway.datasets import loghub_dir  # noqa: E402

from tools.bench.bench_engine import interleaved_medians  # noqa: E402
from tools.bench.harness import print_result  # noqa: E402

LOGHUB = loghub_dir()
N_LINES = 40
N_RING = 3072          # the 40 lines fit without eviction: llama.cpp sees the same flat context
N_SCRATCH = 640
VERIFY_T = (1, 2, 3, 5, 9, 13)   # forward sizes timed for the verify cost curve (1 + K drafts)
RK3588_CPU_SLOWDOWN = 3.0        # assumed: RK3588's A76 cores run the target ~3x slower than the host the bench runs on
RK3588_NPU_DRAFT_TOK_S = 42.0    # Rockchip's RKLLM figure for a 0.5B Qwen2 on the RK3588 NPU
GPU_VERIFY_COST = 1.0            # assumed: a GPU verifies up to 13 tokens in one weight pass (bandwidth bound)
# kind[@precision][+deferred]: @q8x2 runs the native draft at the target's activation precision instead
# of its default (gateway/llm/drafters/model.py DRAFT_ACT_PRECISION), to measure what that choice costs.
CONFIGS = ("ngram", "ngram+deferred", "model:native", "model:native+deferred", "model:native@q8x2+deferred",
           "model:onnx")
SYSTEM = "You are linegate, an assistant that reads factory-line logs and answers operators precisely."


def log_lines(system: str) -> list[str]:
    return (LOGHUB / system / f"{system}_2k.log").read_text(errors="replace").splitlines()


def build_tasks() -> list[dict]:
    hdfs = log_lines("HDFS")[:N_LINES]
    ssh = log_lines("OpenSSH")[100:100 + N_LINES]
    quoted = next(l for l in ssh if "Failed password" in l)
    user = re.search(r"Failed password for (invalid user )?(\S+)", quoted).group(2)
    zk_all = log_lines("Zookeeper")
    alert_i = next(i for i, l in enumerate(zk_all) if " ERROR " in l and i >= N_LINES)
    zk = zk_all[alert_i - N_LINES + 1:alert_i + 1]
    return [
        {"name": "summarize", "lines": hdfs,
         "question": f"Summarize the last {N_LINES} log lines: what happened, which blocks, hosts and "
                     "components are involved, and is anything abnormal?"},
        {"name": "quote", "lines": ssh,
         "question": f"Which log line reports a failed password for {user}? Quote the line exactly, "
                     "then say what it means."},
        {"name": "alert", "lines": zk,
         "question": f"ALERT raised on this line:\n{zk[-1]}\nExplain the alert: what it means, the likely "
                     "cause given the lines before it, and what the operator should check."},
    ]


VERIFY_ROUNDS = 7   # rounds over all sizes, interleaved: the host's drift moves every size alike


def verify_costs(engine, prompt: list[int]) -> dict[int, float]:
    """Median seconds of one target forward of T tokens after the prompt (as verification runs)."""
    engine.forward_scratch(prompt)
    base = engine.scratch_len

    def forward(t: int):
        def step():
            engine.forward_scratch(prompt[:t])
            engine.rollback(base)
        return step
    costs = interleaved_medians({t: forward(t) for t in VERIFY_T}, VERIFY_ROUNDS)
    engine.rollback(0)
    return costs


def interp_cost(costs: dict[int, float], t: float) -> float:
    xs = sorted(costs)
    return float(np.interp(t, xs, [costs[x] for x in xs]))


def run_llama_cpp(target_path: Path, threads: int, context: list[int], n_new: int) -> dict:
    try:
        from llama_cpp import Llama
    except ImportError:
        print("llama-cpp-python missing: installing (builds llama.cpp; minutes)", file=sys.stderr)
        import subprocess
        if subprocess.run([sys.executable, "-m", "pip", "install", "-q", "llama-cpp-python"]).returncode:
            return {"error": "llama-cpp-python could not be installed"}
        from llama_cpp import Llama
    llm = Llama(model_path=str(target_path), n_ctx=len(context) + n_new + 16, n_threads=threads,
                n_threads_batch=threads, n_batch=512, verbose=False)
    n_vocab = llm.n_vocab()

    def last_logits() -> np.ndarray:   # scores[] is only filled with logits_all; read the context's row
        return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,))
    llm.reset()
    llm.eval(context)
    toks = []
    t0 = time.perf_counter()
    for _ in range(n_new):
        toks.append(int(np.argmax(last_logits())))
        llm.eval([toks[-1]])
    dt = time.perf_counter() - t0
    return {"decode_tok_s": n_new / dt, "tokens": toks}   # tokens: llama.cpp's own greedy, for the record


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--draft", default="qwen2.5-coder-0.5b-instruct")
    ap.add_argument("--draft-onnx", default=None, help="exported draft graph (default: exported next to the draft GGUF)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--tasks", default="summarize,quote,alert")
    ap.add_argument("--no-llama-cpp", action="store_true")
    return ap.parse_args(argv)


def draft_graph(args: argparse.Namespace, configs: list[str], draft_path: Path) -> Path:
    """The exported draft graph the onnx configurations run, exported first where it is missing."""
    from gateway.llm.drafters.model import default_paths

    onnx_path = Path(args.draft_onnx) if args.draft_onnx else default_paths(str(draft_path))[1]
    if any("onnx" in c for c in configs) and not onnx_path.is_file():
        from tools.convert import export_draft_onnx
        print(f"exporting the draft graph to {onnx_path} ...", file=sys.stderr)
        export_draft_onnx.export(draft_path, onnx_path, chunk=8, n_cache=export_draft_onnx.DEFAULT_N_CACHE)
    return onnx_path


class Run:
    """One run's models, configurations and what it measured: totals per configuration (rows), a row per
    task (per_task), whether every drafter's greedy tokens matched target-only, the verify cost curve."""

    def __init__(self, args: argparse.Namespace) -> None:
        from gateway.llm.models import resolve_model
        from gateway.llm.tokenizer import Tokenizer

        self.args = args
        self.target_path, self.draft_path = resolve_model(args.target), resolve_model(args.draft)
        self.configs = [c for c in args.configs.split(",") if c]
        self.onnx_path = draft_graph(args, self.configs, self.draft_path)
        self.tok = Tokenizer.from_gguf(self.target_path)
        self.rows: dict[str, dict] = {}
        self.per_task: list[dict] = []
        self.identical = True
        self.costs: dict[int, float] | None = None

    def task(self, task: dict) -> None:
        """Target-only, then each drafter, then llama.cpp on one task; a fresh target stream."""
        from gateway.llm.engine import Engine
        from gateway.settings import BARE_ENGINE

        args, tok = self.args, self.tok
        stream = tok.encode("\n".join(task["lines"]) + "\n", parse_special=False)
        prompt = tok.encode_chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": task["question"]}])
        target = Engine(str(self.target_path), n_sink=4, n_ring=N_RING, n_scratch=N_SCRATCH, n_threads=args.threads,
                        tokenizer=tok, **BARE_ENGINE.model_dump())  # fresh stream
        target.prefill_stream(stream)
        if self.costs is None:
            self.costs = verify_costs(target, prompt)
        base = target.generate(prompt, args.max_new)
        t_row = {"task": task["name"], "stream_tokens": len(stream), "prompt_tokens": len(prompt),
                 "new_tokens": len(base.tokens), "target_only_tok_s": round(base.decode_tok_s, 3)}
        only = self.rows.setdefault("target_only", {"tokens": 0, "seconds": 0.0})
        only["tokens"] += len(base.tokens) - 1
        only["seconds"] += base.decode_ms / 1e3
        for cfg in self.configs:
            t_row[cfg] = self.drafted(task["name"], cfg, target, stream, prompt, base)
        if not args.no_llama_cpp:
            lc = run_llama_cpp(self.target_path, args.threads, stream + prompt, len(base.tokens))
            t_row["llama_cpp_tok_s"] = round(lc.get("decode_tok_s", 0.0), 3)
            self.rows.setdefault("llama_cpp", {"tokens": 0, "seconds": 0.0})
            if "decode_tok_s" in lc:
                self.rows["llama_cpp"]["tokens"] += len(base.tokens)
                self.rows["llama_cpp"]["seconds"] += len(base.tokens) / lc["decode_tok_s"]
        self.per_task.append(t_row)

    def drafted(self, name: str, cfg: str, target, stream: list[int], prompt: list[int], base) -> dict:
        """One configuration (kind[@precision][+deferred]) on the task: added to its totals; its task row."""
        from gateway.llm.drafters import make_drafter
        from gateway.llm.sampling import SamplingParams as Sampling
        from gateway.llm.speculative import K_MAX, speculative_generate

        args = self.args
        kind, _, deferred = cfg.partition("+")
        kind, _, precision = kind.partition("@")
        drafter = make_drafter(kind, target, draft_model=str(self.draft_path), draft_onnx=str(self.onnx_path),
                               deferred=bool(deferred), n_threads=args.threads,
                               n_scratch=len(prompt) + args.max_new + 2 * K_MAX,
                               draft_precision=precision or None)
        drafter.push_stream(stream)
        res = speculative_generate(target, drafter, prompt, args.max_new, Sampling(),
                                   stop_tokens=sorted(self.tok.stop_ids))
        hits = getattr(drafter, "hits", None)
        drafter.close()
        same = res.tokens == base.tokens
        self.identical &= same
        st = res.stats
        r = self.rows.setdefault(cfg, {"tokens": 0, "seconds": 0.0, "drafted": 0, "accepted": 0, "forwards": 0,
                                       "decoded": 0, "draft_s": 0.0, "verify_s": 0.0, "hits": 0})
        r["tokens"] += len(res.tokens)
        r["seconds"] += res.decode_ms / 1e3
        r["drafted"] += st.n_drafted
        r["accepted"] += st.n_accepted
        r["forwards"] += st.n_target_forwards
        r["decoded"] += st.n_decoded
        r["draft_s"] += st.draft_ms / 1e3
        r["verify_s"] += st.verify_ms / 1e3
        r["hits"] += hits or 0
        print(f"{name:10s} {cfg:22s} {res.decode_tok_s:7.2f} tok/s (target-only {base.decode_tok_s:.2f})"
              f"  acc {st.acceptance:.2f}  tok/fwd {st.tokens_per_target_forward:.2f}  identical {same}",
              file=sys.stderr, flush=True)
        return {"tok_s": round(res.decode_tok_s, 3), "acceptance": round(st.acceptance, 3),
                "tokens_per_target_forward": round(st.tokens_per_target_forward, 3), "identical": same}


def cost_model(run: Run) -> dict:
    """Per drafter configuration: the measured tokens and drafts per target forward, and the speedup they
    predict here, on the RK3588 (CPU verifies, NPU or CPU drafts) and on a GPU."""
    rows, costs = run.rows, run.costs
    t1 = rows["target_only"]["seconds"] / max(rows["target_only"]["tokens"], 1)   # s per target-only token
    draft_bytes, target_bytes = os.path.getsize(run.draft_path), os.path.getsize(run.target_path)
    model = {}
    for cfg in run.configs:
        r = rows[cfg]
        if not r["forwards"]:
            continue
        tau = r["decoded"] / r["forwards"]                 # tokens per target forward (measured)
        kbar = r["drafted"] / r["forwards"]                 # drafts verified per forward (measured)
        td = r["draft_s"] / r["drafted"] if r["drafted"] else 0.0   # s per drafted token here (wait time)
        tv = interp_cost(costs, kbar + 1)
        is_model = cfg.startswith("model")
        here = tau * t1 / (kbar * td + tv)
        td_rk = 1.0 / RK3588_NPU_DRAFT_TOK_S if is_model else td * RK3588_CPU_SLOWDOWN
        tv_rk, t1_rk = tv * RK3588_CPU_SLOWDOWN, t1 * RK3588_CPU_SLOWDOWN
        # the NPU drafts while the CPU verifies (deferred pipeline); n-gram runs on the CPU in series
        rk = tau * t1_rk / (max(kbar * td_rk, tv_rk) if is_model else kbar * td_rk + tv_rk)
        td_gpu = (draft_bytes / target_bytes) if is_model else 0.0      # in units of one target token
        gpu = tau / (kbar * td_gpu + GPU_VERIFY_COST)
        model[cfg] = {"tokens_per_forward": round(tau, 3), "drafts_per_forward": round(kbar, 3),
                      "draft_ms_per_token_here": round(td * 1e3, 3), "verify_cost": round(tv / costs[1], 3),
                      "predicted_speedup_here": round(here, 3), "predicted_speedup_rk3588": round(rk, 3),
                      "predicted_speedup_gpu": round(gpu, 3)}
    return model


def summarize(run: Run) -> dict:
    """The closing JSON object: tok/s and speedup per configuration, acceptance, the cost model."""
    args, rows, configs = run.args, run.rows, run.configs
    tok_s = {k: (v["tokens"] / v["seconds"] if v["seconds"] else 0.0) for k, v in rows.items()}
    verify_cost = {t: c / run.costs[1] for t, c in run.costs.items()}
    model = cost_model(run)
    speedups = {cfg: tok_s[cfg] / tok_s["target_only"] for cfg in configs if tok_s.get("target_only")}
    best = max(speedups, key=speedups.get)
    best_acc = rows[best]["accepted"] / rows[best]["drafted"] if rows[best]["drafted"] else 0.0
    deferred_pairs = {c: round(speedups[c] / speedups[c.split("+")[0]], 3)
                      for c in configs if c.endswith("+deferred") and c.split("+")[0] in speedups}
    return {
        "target": args.target, "draft": args.draft, "threads": args.threads, "max_new": args.max_new,
        "tok_s": {k: round(v, 3) for k, v in tok_s.items()},
        "speedup": {k: round(v, 3) for k, v in speedups.items()},
        "speedup_best": round(speedups[best], 3), "best_drafter": best, "acceptance_best": round(best_acc, 3),
        "acceptance": {c: round(rows[c]["accepted"] / rows[c]["drafted"], 3) if rows[c]["drafted"] else 0.0 for c in configs},
        "tokens_per_target_forward": {c: round(rows[c]["decoded"] / rows[c]["forwards"], 3) if rows[c]["forwards"] else 0.0 for c in configs},
        "greedy_identical": bool(run.identical),
        "llama_cpp_tok_s": round(tok_s.get("llama_cpp", 0.0), 3),
        "ours_vs_llama_cpp": round(tok_s["target_only"] / tok_s["llama_cpp"], 3) if tok_s.get("llama_cpp") else None,
        "deferred_vs_serial": deferred_pairs,
        "verify_cost": {str(t): round(c, 3) for t, c in verify_cost.items()},
        "cost_model": model,
        "assumptions": {"rk3588_cpu_slowdown": RK3588_CPU_SLOWDOWN, "rk3588_npu_draft_tok_s": RK3588_NPU_DRAFT_TOK_S,
                        "rk3588_verify_cost_curve": "the bench host's, scaled by the slowdown",
                        "gpu_verify_cost": GPU_VERIFY_COST, "gpu_draft_cost_per_token": "draft/target GGUF bytes",
                        "ngram_on_cpu_in_series": True},
        "tasks": run.per_task,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run(args)
    for task in [t for t in build_tasks() if t["name"] in args.tasks.split(",")]:
        run.task(task)
    print_result(summarize(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
