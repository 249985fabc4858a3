"""Convert the exported draft graph (tools/convert/export_draft_onnx.py) to .rknn for the RK3588 NPU, then run
the converted model in rknn-toolkit2's simulator and report its logits' cosine against onnxruntime.

rknn-toolkit2 (pinned RKNN_TOOLKIT_VERSION) pins old numpy/torch/onnx, so it lives in its own venv,
created here on first use; this script re-runs itself inside that venv (--inner) for the toolkit work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
RKNN_TOOLKIT_VERSION = "2.5.0"
DEFAULT_VENV = Path.home() / ".cache" / "linegate" / "rknn-venv"   # checked for the pinned version on use
TARGET_PLATFORM = "rk3588"
MIN_COSINE = 0.99      # the simulator computes in fp16, as the NPU does


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


def reference_feeds(onnx_path: Path, seed: int = 0) -> tuple[dict, np.ndarray]:
    """One chunk after a short stream, fed exactly as the drafter feeds it; onnxruntime's logits."""
    sys.path.insert(0, str(REPO))
    from gateway.llm.drafters.onnx_engine import OnnxDraftEngine, read_meta

    meta = read_meta(onnx_path)
    captured: dict = {}
    eng = OnnxDraftEngine(onnx_path, n_sink=4, n_ring=max(8, meta["n_cache"] // 2), n_scratch=meta["chunk"])
    real_run = eng.run

    def capture(feeds):
        captured.clear()
        captured.update({k: v.copy() for k, v in feeds.items()})
        return real_run(feeds)
    eng.run = capture
    rng = np.random.default_rng(seed)
    eng.prefill_stream(rng.integers(10, meta["n_vocab"], 3 * meta["chunk"] + 1).tolist())
    logits = eng.forward_scratch(rng.integers(10, meta["n_vocab"], meta["chunk"]).tolist(), all_logits=True)
    return captured, logits


def inner(onnx_path: Path, out_path: Path, feeds_path: Path, result_path: Path) -> int:
    """Runs inside the toolkit venv: convert, export, simulate."""
    from rknn.api import RKNN

    from onnx_io import INPUT_ORDER   # noqa: local copy of the input order (the venv lacks gateway's deps)
    rk = RKNN(verbose=False)
    rk.config(target_platform=TARGET_PLATFORM)
    steps = [("load_onnx", lambda: rk.load_onnx(model=str(onnx_path))),
             ("build", lambda: rk.build(do_quantization=False)),
             ("export_rknn", lambda: rk.export_rknn(str(out_path))),
             ("init_runtime", lambda: rk.init_runtime())]          # no target: the simulator
    for name, step in steps:
        if step() != 0:
            print(f"rknn-toolkit2 {name} failed for {onnx_path}", file=sys.stderr)
            return 1
    feeds = np.load(feeds_path)
    outs = rk.inference(inputs=[feeds[n] for n in INPUT_ORDER], data_format="nchw")   # 4-D caches are not images
    np.save(result_path, np.asarray(outs[0], np.float32))
    rk.release()
    return 0


def convert(onnx_path: Path, out_path: Path, venv_path: Path = DEFAULT_VENV) -> dict:
    onnx_path, out_path = Path(onnx_path), Path(out_path)
    if not onnx_path.is_file():
        raise FileNotFoundError(f"draft graph not found: {onnx_path} (tools/convert/export_draft_onnx.py writes it)")
    py = ensure_venv(venv_path)
    feeds, ref = reference_feeds(onnx_path)
    work = out_path.parent
    work.mkdir(parents=True, exist_ok=True)
    feeds_path, result_path = work / (out_path.stem + ".feeds.npz"), work / (out_path.stem + ".sim.npy")
    np.savez(feeds_path, **feeds)
    from gateway.llm.drafters.onnx_engine import INPUT_ORDER
    (work / "onnx_io.py").write_text(f"INPUT_ORDER = {INPUT_ORDER!r}\n")
    t0 = time.perf_counter()
    r = subprocess.run([str(py), __file__, "--inner", "--onnx", str(onnx_path), "--out", str(out_path),
                        "--feeds", str(feeds_path), "--result", str(result_path)],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(work)})
    if r.returncode:
        raise RuntimeError(f"rknn conversion failed:\n{(r.stdout + r.stderr)[-4000:]}")
    sim = np.load(result_path).reshape(ref.shape[0], -1)[:ref.shape[0], :ref.shape[1]]
    a, b = ref.astype(np.float64), sim.astype(np.float64)
    cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return {"rknn": str(out_path), "toolkit": RKNN_TOOLKIT_VERSION, "platform": TARGET_PLATFORM,
            "convert_s": round(time.perf_counter() - t0, 1), "cosine_min": float(cos.min()),
            "cosine_mean": float(cos.mean()), "argmax_agree": float(np.mean(a.argmax(-1) == b.argmax(-1)))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--out", required=True, help="output .rknn")
    ap.add_argument("--venv", default=str(DEFAULT_VENV))
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--feeds", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        return inner(Path(args.onnx), Path(args.out), Path(args.feeds), Path(args.result))
    report = convert(Path(args.onnx), Path(args.out), Path(args.venv))
    print(json.dumps(report))
    return 0 if report["cosine_min"] >= MIN_COSINE else 1


if __name__ == "__main__":
    sys.exit(main())
