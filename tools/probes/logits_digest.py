"""Digests of the native engine's logits, to show a change is bit-identical: for each model and
activation precision, sha256 of the logits of scratch forwards of T = 1, 4, 16, 256 tokens after a
40-token stream (seeded token ids). Run before and after a change; the JSON must be equal.

    .venv/bin/python tools/probes/logits_digest.py [--models NAME ...] > digests.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from gateway import _native  # noqa: E402
from gateway.llm.models import resolve_model  # noqa: E402

MODELS = ("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct")
SIZES = (1, 4, 16, 256)


def digests(model: str, precision: str, rng: np.random.Generator) -> dict[str, str]:
    e = _native.Engine(str(resolve_model(model)), n_sink=4, n_ring=512, n_scratch=300, kv_policy="sink_ring",
                       n_threads=2, act_precision=precision)
    e.prefill_stream(rng.integers(100, 20000, size=40).astype(np.int32))
    out = {}
    for t in SIZES:
        logits = np.zeros((t, e.n_vocab), dtype=np.float32)
        e.forward_scratch(rng.integers(100, 20000, size=t).astype(np.int32), logits, all_logits=True)
        out[f"{model}/{precision}/T{t}"] = hashlib.sha256(logits.tobytes()).hexdigest()[:16]
        e.rollback(0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(7)
    out: dict[str, str] = {}
    for model in args.models:
        for precision in ("q8x2", "q8"):
            out.update(digests(model, precision, rng))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
