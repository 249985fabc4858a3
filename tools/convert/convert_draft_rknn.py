"""Convert the exported draft graph (tools/convert/export_draft_onnx.py) to .rknn for the RK3588 NPU, then run
the converted model in rknn-toolkit2's simulator and compare its logits with onnxruntime's on the same feeds.

int8 (the default: w8a8 weight matmuls, every other layer fp16; --hybrid none for w8a8 throughout) is calibrated
on Loghub lines laid out as the appliance feeds the drafter (its sink, context lines and chat prompts, run
through the drafter's own engine); fp16 (--dtype fp16) needs no data.
The check runs held-out systems' lines through the same path: logits cosine, top-1 and top-5 agreement.

rknn-toolkit2 (pinned RKNN_TOOLKIT_VERSION) pins old numpy/torch/onnx, so it lives in its own venv,
created here on first use; this script re-runs itself inside that venv (--inner) for the toolkit work.

    .venv/bin/python tools/convert/convert_draft_rknn.py --onnx DRAFT.onnx --gguf DRAFT.gguf --out DRAFT.rknn
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path
from typing import Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[2]
RKNN_TOOLKIT_VERSION = "2.5.0"
DEFAULT_VENV = Path.home() / ".cache" / "linegate" / "rknn-venv"   # checked for the pinned version on use
TARGET_PLATFORM = "rk3588"
MIN_COSINE = 0.99      # fp16: the simulator computes in fp16, as the NPU does
# int8: what a draft is for is proposing the float draft's next token; its acceptance scales with top-1
# agreement (docs/perf/2026-12-02-box-cost-model.md), so the bar is on that.
INT8_MIN_ARGMAX = 0.9
DTYPES = ("int8", "fp16")
ALGORITHMS = ("normal", "kl_divergence", "mmse")   # rknn-toolkit2's quantized_algorithm
# Loghub systems (../shared/data/loghub) for calibration, and others held out for the check.
CALIB_SYSTEMS = ("HDFS", "OpenSSH", "Zookeeper", "Linux", "Apache", "Hadoop")
EVAL_SYSTEMS = ("BGL", "Spark")
# The drafter's cache shape in the appliance: scratch as gateway/llm/drafters/model.DRAFT_N_SCRATCH, ring
# as engine.n_ring's default (gateway/settings.py), both trimmed to the graph (model._graph_engine).
# Literals: this file also runs in the toolkit's venv, which cannot import gateway.
DRAFT_N_SCRATCH, DRAFT_N_RING = 512, 2048


def ensure_venv(path: Path) -> Path:
    """-> the venv's python, with rknn-toolkit2 installed (its own pinned dependencies)."""
    py = path / "bin" / "python"
    probe = [str(py), "-c", "import importlib.metadata as m; print(m.version('rknn-toolkit2'))"]
    if py.exists() and subprocess.run(probe, capture_output=True, text=True).stdout.strip() == RKNN_TOOLKIT_VERSION:
        return py
    print(f"creating {path} with rknn-toolkit2=={RKNN_TOOLKIT_VERSION} (minutes)...", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    for cmd in ([str(py), "-m", "pip", "install", "-q", "-U", "pip"],
                [str(py), "-m", "pip", "install", "-q", f"rknn-toolkit2=={RKNN_TOOLKIT_VERSION}"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"`{' '.join(cmd)}` failed (python {sys.version_info.major}.{sys.version_info.minor}, "
                               f"{sys.platform}):\n{r.stderr[-2000:]}")
    return py


# --- feeds: the graph runs the drafter makes, captured from onnxruntime -------------------------

def loghub_plan(gguf_path: Path, loghub: Path, systems: Sequence[str], lines_per_system: int,
                first_line: int = 0) -> tuple[list[int], list[tuple[str, list[list[int]], list[int]]]]:
    """The appliance's own token layout (gateway/serve/prompts.py, gateway/pipeline/token_queue.py):
    -> (sink tokens, [(system, tokens of each stream line, tokens of a chat job about them)]).
    Each Loghub line goes in as `linegate replay --host <system>` sends it: the context line
    `HH:MM:SS host text` plus a newline, one line a second (no repeat collapsing: no template ids here)."""
    sys.path.insert(0, str(REPO))
    from gateway.ingest.replay import read_lines
    from gateway.pipeline.token_queue import context_line
    from gateway.serve.prompts import Prompts
    from gateway.serve.answer.call import TOOL_HELP

    prompts = Prompts.for_model(gguf_path, "en", TOOL_HELP)   # as the appliance with engine.query on
    plan, ts = [], 1_764_000_000.0
    for system in systems:
        raw = list(itertools.islice(read_lines(Path(loghub) / system / f"{system}_2k.log"),
                                    first_line, first_line + lines_per_system))
        if len(raw) < lines_per_system:
            raise ValueError(f"{loghub}/{system}: fewer than {first_line + lines_per_system} lines")
        lines = []
        for text in raw:
            ts += 1.0
            lines.append(prompts.log_tokens(context_line(ts, system.lower(), text) + "\n"))
        job = prompts.chat_tokens([{"role": "user", "content": f"What happened on {system.lower()} just now?"}])
        plan.append((system, lines, job))
    return prompts.sink_tokens, plan


def capture_samples(onnx_path: Path, sink: list[int], plan: Sequence[tuple[str, list[list[int]], list[int]]],
                    out_dir: Path, stream_stride: int = 8, draft_steps: int = 2,
                    n_scratch: int = DRAFT_N_SCRATCH, runner=None) -> list[dict]:
    """Runs the drafter's engine (gateway/llm/drafters/onnx_engine.py) over the sink, then per system its
    stream lines and a job (the prompt, then `draft_steps` greedy one-token draft steps, then rollback),
    sized as the appliance sizes it (model._graph_engine). Saves every `stream_stride`-th stream run and
    every job run to out_dir/NNN/{input}.npy with the onnxruntime logits of its valid rows (ref.npy).
    -> [{"dir", "kind", "system", "rows"}] in run order."""
    sys.path.insert(0, str(REPO))
    from gateway.llm.drafters.onnx_engine import INPUT_ORDER, OnnxDraftEngine, read_meta

    n_cache = read_meta(onnx_path)["n_cache"]
    n_sink = len(sink)
    n_scratch = min(n_scratch, (n_cache - n_sink) // 2)
    n_ring = min(DRAFT_N_RING, n_cache - n_sink - n_scratch)
    if n_scratch < 1 or n_ring < 1:
        raise ValueError(f"{onnx_path}: {n_cache} cache slots cannot hold a {n_sink}-token sink, a ring and a scratch")
    eng = OnnxDraftEngine(onnx_path, n_sink, n_ring, n_scratch, runner=runner)
    real_run = eng.run
    state = {"kind": "sink", "system": "", "calls": 0, "rows": 0, "want": lambda i: False}
    samples: list[dict] = []
    out_dir.mkdir(parents=True, exist_ok=True)

    def run(feeds):
        outs = real_run(feeds)
        i = state["calls"]
        state["calls"] += 1
        if state["want"](i):
            rows = state["rows"]
            d = out_dir / f"{len(samples):03d}"
            d.mkdir(exist_ok=True)
            for name in INPUT_ORDER:
                np.save(d / f"{name}.npy", np.ascontiguousarray(feeds[name]))
            np.save(d / "ref.npy", np.asarray(outs[0][:rows], np.float32))
            samples.append({"dir": str(d), "kind": state["kind"], "system": state["system"], "rows": rows})
        return outs
    eng.run = run
    real_chunk = eng._run_chunk

    def run_chunk(tokens, first_pos, slots):
        state["rows"] = len(tokens)         # the rest of the chunk is padding
        return real_chunk(tokens, first_pos, slots)
    eng._run_chunk = run_chunk

    eng.prefill_stream(sink)
    for system, lines, job in plan:
        first = state["calls"]
        state.update(system=system, kind="stream",
                     want=lambda i, first=first: (i - first) % stream_stride == stream_stride - 1)
        for toks in lines:                  # one push a line, as the token queue hands them over
            eng.prefill_stream(toks)
        last = state["calls"] + -(-len(job) // eng.chunk) - 1
        state.update(kind="job", want=lambda i, last=last: i == last)   # the prompt's last chunk: it drafts
        logits = eng.forward_scratch(job, all_logits=True)
        state["want"] = lambda i: True
        state["kind"] = "draft"
        for _ in range(draft_steps):
            logits = eng.forward_scratch([int(np.argmax(logits[-1]))], all_logits=True)
        eng.rollback(0)
    return samples


def write_dataset(samples: Sequence[dict], path: Path) -> Path:
    """rknn-toolkit2's calibration list: one line a sample, its inputs' .npy paths in the graph's order."""
    from gateway.llm.drafters.onnx_engine import INPUT_ORDER
    lines = [" ".join(str(Path(s["dir"]) / f"{name}.npy") for name in INPUT_ORDER) for s in samples]
    path.write_text("\n".join(lines) + "\n")
    return path


def compare(samples: Sequence[dict], sims: Sequence[np.ndarray]) -> dict:
    """Logits of the converted graph against onnxruntime's, over the valid rows of every sample."""
    cos, top1, top5 = [], [], []
    for s, sim in zip(samples, sims):
        ref = np.load(Path(s["dir"]) / "ref.npy").astype(np.float64)
        got = np.asarray(sim, np.float64).reshape(-1, ref.shape[1])[:ref.shape[0]]
        cos.extend((ref * got).sum(-1) / (np.linalg.norm(ref, axis=-1) * np.linalg.norm(got, axis=-1)))
        top1.extend(ref.argmax(-1) == got.argmax(-1))
        r5, g5 = np.argsort(-ref, -1)[:, :5], np.argsort(-got, -1)[:, :5]
        top5.extend(len(set(a) & set(b)) / 5 for a, b in zip(r5, g5))
    nan_rows = int(np.isnan(np.asarray(cos)).sum())    # a row with NaN logits counts as cosine -1
    cos, top1 = np.nan_to_num(np.asarray(cos), nan=-1.0), np.asarray(top1)
    kinds = np.asarray([s["kind"] for s in samples for _ in range(s["rows"])])
    by_kind = {kind: {"rows": int((kinds == kind).sum()), "cosine_mean": float(cos[kinds == kind].mean()),
                      "argmax_agree": float(top1[kinds == kind].mean())} for kind in sorted(set(kinds))}
    return {"rows": int(len(cos)), "nan_rows": nan_rows, "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
            "cosine_p10": float(np.percentile(cos, 10)), "argmax_agree": float(top1.mean()),
            "top5_overlap": float(np.mean(top5)), "by_kind": by_kind}


def io_bytes(onnx_path: Path) -> dict:
    """Bytes of each graph input and output per run, as fed (fp32/int64) and as the NPU holds them (fp16):
    what one draft step moves between the host and the NPU."""
    import onnx
    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    out = {}
    for v in list(graph.input) + list(graph.output):
        t = v.type.tensor_type
        n = int(np.prod([d.dim_value for d in t.shape.dim]))
        out[v.name] = {"shape": [d.dim_value for d in t.shape.dim], "host": n * onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).itemsize,
                       "fp16": n * 2}
    return out


def random_plan(n_vocab: int, seed: int = 0) -> tuple[list[int], list[tuple[str, list[list[int]], list[int]]]]:
    """Token plan for a model without a tokenizer (the random GGUFs of the tests)."""
    rng = np.random.default_rng(seed)
    toks = lambda n: rng.integers(10, n_vocab, n).tolist()   # noqa: E731
    return toks(5), [("random", [toks(7) for _ in range(3)], toks(6))]


# --- the toolkit side (runs in the toolkit's venv) ----------------------------------------------

def gemm_only_cfg(cfg_text: str, skip: set[str]) -> str:
    """The toolkit's hybrid quantization config with every layer but the weight matmuls (Gemm) set to fp16:
    the weights' bytes stay int8, the attention (RoPE, mask, softmax) and the norms keep fp16."""
    import re
    names = re.findall(r"^    ([^\s:][^:]*):$", cfg_text, flags=re.M)
    fp16 = [n for n in names if not n.startswith("gemm") and n not in skip and "#" not in n
            and ".weight" not in n and not re.fullmatch(r"c_\d+(_dup\d+)?", n)]
    return cfg_text.replace("custom_quantize_layers: {}\n",
                            "custom_quantize_layers:\n" + "".join(f"    {n}: float16\n" for n in fp16))


def _gemm_hybrid(onnx_path: Path, dataset: Path, result_dir: Path, input_order: Sequence[str]):
    """hybrid_quantization_step1 (calibrate, write model/data/cfg), the cfg edited by gemm_only_cfg, step2.
    Names the toolkit refuses in the cfg (it lists some tensors that are not layers) are dropped and retried."""
    import re
    from rknn.api import RKNN
    os.chdir(result_dir)                   # step1 writes <stem>.model / .data / .quantization.cfg here
    rk = RKNN(verbose=False)
    rk.config(target_platform=TARGET_PLATFORM, quantized_dtype="w8a8", quantized_method="channel")
    if rk.load_onnx(model=str(onnx_path)) != 0 or rk.hybrid_quantization_step1(dataset=str(dataset), proposal=False) != 0:
        return None
    rk.release()
    stem = onnx_path.stem
    cfg_path = result_dir / f"{stem}.quantization.cfg"
    original, skip = cfg_path.read_text(), set(input_order)
    for _ in range(200):
        cfg_path.write_text(gemm_only_cfg(original, skip))
        rk = RKNN(verbose=False)
        try:
            ok = rk.hybrid_quantization_step2(model_input=f"{stem}.model", data_input=f"{stem}.data",
                                              model_quantization_cfg=str(cfg_path)) == 0
        except ValueError as e:
            bad = re.search(r"Invalid operands name '([^']+)'", str(e))
            if not bad:
                raise
            skip.add(bad.group(1))
            rk.release()
            continue
        return rk if ok else None
    return None


def inner(onnx_path: Path, out_path: Path, dtype: str, dataset: Path | None, eval_list: Path,
          result_dir: Path, algorithm: str, auto_hybrid: bool = False, analyse: bool = False,
          hybrid: str = "none") -> int:
    """Runs inside the toolkit venv: convert, export, simulate every evaluation sample."""
    from rknn.api import RKNN

    from onnx_io import INPUT_ORDER   # noqa: local copy of the input order (the venv lacks gateway's deps)
    times = {}
    if hybrid == "gemm":
        t0 = time.perf_counter()
        rk = _gemm_hybrid(onnx_path, dataset, result_dir, INPUT_ORDER)
        if rk is None:
            print(f"rknn-toolkit2 hybrid quantization failed for {onnx_path}", file=sys.stderr)
            return 1
        times["hybrid_build"] = round(time.perf_counter() - t0, 1)
        steps = []
    else:
        rk = RKNN(verbose=False)
        cfg = {"target_platform": TARGET_PLATFORM}
        if dtype == "int8":
            cfg |= {"quantized_dtype": "w8a8", "quantized_algorithm": algorithm, "quantized_method": "channel"}
        rk.config(**cfg)
        steps = [("load_onnx", lambda: rk.load_onnx(model=str(onnx_path))),
                 ("build", lambda: rk.build(do_quantization=dtype == "int8", dataset=str(dataset) if dataset else None,
                                            auto_hybrid=auto_hybrid))]
    steps += [("export_rknn", lambda: rk.export_rknn(str(out_path))),
              ("init_runtime", lambda: rk.init_runtime())]          # no target: the simulator
    if analyse:   # per-layer float vs quantized simulation on the first held-out sample
        first = Path(eval_list.read_text().split()[0])
        steps.insert(len(steps) - 1, ("accuracy_analysis", lambda: rk.accuracy_analysis(
            inputs=[str(first / f"{n}.npy") for n in INPUT_ORDER], output_dir=str(result_dir / "analysis"))))
    for name, step in steps:
        t0 = time.perf_counter()
        if step() != 0:
            print(f"rknn-toolkit2 {name} failed for {onnx_path}", file=sys.stderr)
            return 1
        times[name] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    for k, d in enumerate(eval_list.read_text().split()):
        feeds = [np.load(Path(d) / f"{n}.npy") for n in INPUT_ORDER]
        outs = rk.inference(inputs=feeds, data_format="nchw")   # 4-D caches are not images
        np.save(result_dir / f"sim_{k:03d}.npy", np.asarray(outs[0], np.float32))
    times["inference"] = round(time.perf_counter() - t0, 1)
    (result_dir / "times.json").write_text(json.dumps(times))
    rk.release()
    return 0


def convert(onnx_path: Path, out_path: Path, venv_path: Path = DEFAULT_VENV, dtype: str = "int8",
            gguf_path: Path | None = None, loghub: Path | None = None, algorithm: str = "normal",
            lines_per_system: int = 6, stream_stride: int = 8, work: Path | None = None,
            auto_hybrid: bool = False, reuse_feeds: bool = False, analyse: bool = False,
            hybrid: str | None = None) -> dict:
    """Convert the draft graph to .rknn (int8 w8a8 calibrated on Loghub lines, or fp16), then compare the
    toolkit's simulator with onnxruntime on held-out feeds. Without gguf_path (a GGUF with no tokenizer,
    as in the tests) the feeds are random tokens."""
    onnx_path, out_path = Path(onnx_path), Path(out_path)
    if hybrid is None:   # int8: only the weight matmuls (plain w8a8 loses the draft: docs/perf/2026-12-02-rknn-draft.md)
        hybrid = "gemm" if dtype == "int8" and not auto_hybrid else "none"
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    if not onnx_path.is_file():
        raise FileNotFoundError(f"draft graph not found: {onnx_path} (tools/convert/export_draft_onnx.py writes it)")
    py = ensure_venv(venv_path)
    work = Path(work) if work else out_path.parent / (out_path.stem + ".work")
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(REPO))
    from gateway.llm.drafters.onnx_engine import INPUT_ORDER, read_meta
    t0 = time.perf_counter()
    if gguf_path is not None:
        from gateway.datasets import loghub_dir
        loghub = Path(loghub) if loghub else loghub_dir()
        sink, calib = loghub_plan(gguf_path, loghub, CALIB_SYSTEMS, lines_per_system)
        _, held_out = loghub_plan(gguf_path, loghub, EVAL_SYSTEMS, lines_per_system, first_line=100)
    else:
        sink, plan = random_plan(read_meta(onnx_path)["n_vocab"])
        calib = held_out = plan
        stream_stride = 1
    saved = work / "samples.json"
    if reuse_feeds and saved.is_file():       # the feeds of an earlier run with the same graph and plan
        kept = json.loads(saved.read_text())
        calib_samples, eval_samples = kept["calib"], kept["eval"]
    else:
        calib_samples = capture_samples(onnx_path, sink, calib, work / "calib", stream_stride)
        eval_samples = capture_samples(onnx_path, sink, held_out, work / "eval", stream_stride)
        saved.write_text(json.dumps({"calib": calib_samples, "eval": eval_samples}))
    if dtype != "int8":
        calib_samples = []
    feeds_s = time.perf_counter() - t0
    dataset = write_dataset(calib_samples, work / "dataset.txt") if dtype == "int8" else None
    eval_list = work / "eval.txt"
    eval_list.write_text("\n".join(s["dir"] for s in eval_samples) + "\n")
    (work / "onnx_io.py").write_text(f"INPUT_ORDER = {INPUT_ORDER!r}\n")
    result_dir = work / f"sim_{out_path.stem}"
    result_dir.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    cmd = [str(py), __file__, "--inner", "--onnx", str(onnx_path), "--out", str(out_path), "--dtype", dtype,
           "--eval-list", str(eval_list), "--result", str(result_dir), "--algorithm", algorithm]
    if dataset:
        cmd += ["--dataset", str(dataset)]
    if auto_hybrid:
        cmd += ["--auto-hybrid"]
    if analyse:
        cmd += ["--analyse"]
    if hybrid != "none":
        if dtype != "int8":
            raise ValueError("--hybrid needs --dtype int8")
        cmd += ["--hybrid", hybrid]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(work)})
    (result_dir / "toolkit.log").write_text(r.stdout + r.stderr)
    if r.returncode:
        raise RuntimeError(f"rknn conversion failed (log: {result_dir / 'toolkit.log'}):\n{(r.stdout + r.stderr)[-4000:]}")
    convert_s = time.perf_counter() - t0
    sims = [np.load(result_dir / f"sim_{k:03d}.npy") for k in range(len(eval_samples))]
    log = (result_dir / "toolkit.log").read_text()
    report = {"rknn": str(out_path), "toolkit": RKNN_TOOLKIT_VERSION, "platform": TARGET_PLATFORM, "dtype": dtype,
              "algorithm": algorithm if dtype == "int8" else None, "auto_hybrid": auto_hybrid, "hybrid": hybrid, "rknn_bytes": out_path.stat().st_size,
              "calibration_samples": len(calib_samples), "eval_samples": len(eval_samples),
              "calibration_systems": list(CALIB_SYSTEMS) if gguf_path else ["random"],
              "eval_systems": list(EVAL_SYSTEMS) if gguf_path else ["random"],
              "feeds_s": round(feeds_s, 1), "convert_s": round(convert_s, 1),
              "toolkit_s": json.loads((result_dir / "times.json").read_text()), "io_bytes": io_bytes(onnx_path),
              # the compiler's complaints: register fields overflowed (the graph may not run as simulated on
              # the NPU), and ops it moved to the CPU
              "regtask_errors": log.count("REGTASK: The bit width"), "cpu_fallbacks": log.count("fallback to cpu")}
    return report | compare(eval_samples, sims)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--out", required=True, help="output .rknn")
    ap.add_argument("--gguf", help="the draft GGUF the graph came from (its tokenizer lays out the Loghub feeds); "
                                   "without it the feeds are random tokens")
    ap.add_argument("--dtype", choices=DTYPES, default="int8", help="int8: w8a8 calibrated on Loghub lines; fp16")
    ap.add_argument("--algorithm", choices=ALGORITHMS, default="normal", help="int8 calibration algorithm")
    ap.add_argument("--auto-hybrid", action="store_true",
                    help="int8: let the toolkit keep in fp16 the layers whose simulated cosine falls below its threshold")
    ap.add_argument("--lines", type=int, default=6, help="Loghub lines per system (calibration and check)")
    ap.add_argument("--stride", type=int, default=8, help="keep every N-th stream run as a sample")
    ap.add_argument("--work", help="folder for the feeds, dataset and toolkit log (default: next to --out)")
    ap.add_argument("--hybrid", choices=("none", "gemm"), default=None,
                    help="int8: gemm (default) = only the weight matmuls int8, every other layer fp16 (the toolkit's "
                         "hybrid quantization); none = every layer w8a8")
    ap.add_argument("--analyse", action="store_true",
                    help="also run the toolkit's per-layer accuracy analysis on the first held-out sample")
    ap.add_argument("--reuse-feeds", action="store_true", help="reuse the feeds an earlier run left in --work")
    ap.add_argument("--loghub", help="Loghub folder (default: gateway.datasets.loghub_dir())")
    ap.add_argument("--venv", default=str(DEFAULT_VENV))
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dataset", help=argparse.SUPPRESS)
    ap.add_argument("--eval-list", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        return inner(Path(args.onnx), Path(args.out), args.dtype, Path(args.dataset) if args.dataset else None,
                     Path(args.eval_list), Path(args.result), args.algorithm, args.auto_hybrid, args.analyse,
                     args.hybrid)
    report = convert(Path(args.onnx), Path(args.out), Path(args.venv), args.dtype,
                     Path(args.gguf) if args.gguf else None, Path(args.loghub) if args.loghub else None,
                     args.algorithm, args.lines, args.stride, Path(args.work) if args.work else None,
                     args.auto_hybrid, args.reuse_feeds, args.analyse, args.hybrid)
    print(json.dumps(report))
    ok = report["cosine_min"] >= MIN_COSINE if args.dtype == "fp16" else report["argmax_agree"] >= INT8_MIN_ARGMAX
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
