"""How much of the int8 draft graph's error comes from quantizing its inputs alone: onnxruntime (fp32) on the
feeds convert_draft_rknn.py captured, with chosen inputs rounded to per-tensor asymmetric int8 as a w8a8
.rknn takes them (the toolkit turns every float input into int8), against the unrounded run's logits.

    .venv/bin/python tools/probes/rknn_input_quant.py --onnx DRAFT.onnx --work WORK [--samples 3,8,14,15,16]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

INPUT_ORDER = ("tokens", "positions", "cache_positions", "mask", "k_cache", "v_cache")
VARIANTS = (("positions", "cache_positions"), ("mask",), ("k_cache", "v_cache"))


def int8_round_trip(x: np.ndarray) -> np.ndarray:
    """Per-tensor asymmetric int8 over the tensor's own range (zero exactly representable)."""
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (hi - lo) / 255 or 1.0
    zp = np.round(-lo / scale) - 128
    return ((np.clip(np.round(x / scale) + zp, -128, 127) - zp) * scale).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    import onnxruntime as ort
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--work", required=True, help="convert_draft_rknn.py's --work folder (samples.json)")
    ap.add_argument("--samples", default="3,8,14,15,16", help="indices of held-out samples")
    args = ap.parse_args(argv)
    held_out = json.loads((Path(args.work) / "samples.json").read_text())["eval"]
    picks = [held_out[int(i)] for i in args.samples.split(",")]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.log_severity_level = 2, 3
    sess = ort.InferenceSession(args.onnx, opts, providers=["CPUExecutionProvider"])
    result = {"samples": [f"{s['kind']}:{Path(s['dir']).name}" for s in picks], "variants": {}}
    for variant in VARIANTS:
        cos, top1 = [], []
        for s in picks:
            feeds = {n: np.load(Path(s["dir"]) / f"{n}.npy") for n in INPUT_ORDER}
            ref = np.load(Path(s["dir"]) / "ref.npy").astype(np.float64)
            for name in variant:
                feeds[name] = int8_round_trip(feeds[name])
            got = sess.run(["logits"], feeds)[0][:s["rows"]].astype(np.float64)
            cos += list((ref * got).sum(-1) / (np.linalg.norm(ref, axis=-1) * np.linalg.norm(got, axis=-1)))
            top1 += list(ref.argmax(-1) == got.argmax(-1))
        row = {"cosine_mean": round(float(np.mean(cos)), 4), "cosine_min": round(float(np.min(cos)), 4),
               "argmax_agree": round(float(np.mean(top1)), 3), "rows": len(cos)}
        result["variants"]["+".join(variant)] = row
        print(f"int8 {'+'.join(variant):26s} cosine mean {row['cosine_mean']:.4f} min {row['cosine_min']:.4f} "
              f"top-1 {row['argmax_agree']:.3f} ({row['rows']} rows)", file=sys.stderr, flush=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
