"""Which activation precision can pass the correctness gate? A transformers experiment, no native code.

Runs the fp32 reference (tools/probes/reference.py's model) on the gate's 256-token Loghub excerpt twice: as is,
and with every nn.Linear input fake-quantized to a candidate integer scheme. Prints the worst-position
logits cosine and the top-1 agreement against the plain reference, per scheme:
  q8/256   int8, one scale per 256 values (llama.cpp's q8_K, used with K-quant weights)
  q8/32    int8, one scale per 32 (llama.cpp's q8_0)
  q8/16    int8, one scale per 16
  q8x2/256 two int8 terms (the residual of the first quantized again): the engine's default
The gate (tests/test_correctness_gate.py) needs logits cosine >= 0.999 and top-1 >= 99%.

    .venv/bin/python tools/probes/act_precision.py [MODEL ...]     (default: the three manifest models)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

SCHEMES = {"q8/256": (256, False), "q8/32": (32, False), "q8/16": (16, False), "q8x2/256": (256, True)}


def fake_quant(x, block: int, two_terms: bool):
    shape = x.shape
    v = x.reshape(-1, block)
    d = v.abs().amax(1, keepdim=True) / 127
    d[d == 0] = 1
    y = (v / d).round().clamp(-127, 127) * d
    if two_terms:
        r = v - y
        d2 = r.abs().amax(1, keepdim=True) / 127
        d2[d2 == 0] = 1
        y = y + (r / d2).round().clamp(-127, 127) * d2
    return y.reshape(shape)


def main(argv: list[str] | None = None) -> int:
    import torch
    from tools.probes.reference import load_reference
    from test_correctness_gate import N_TOKENS, loghub_excerpt

    from gateway.datasets import loghub_dir
    from gateway.llm.models import model_path
    from gateway.llm.tokenizer import Tokenizer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*",
                    default=["smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"])
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    for name in args.models:
        path = model_path(name)
        ids = np.asarray(Tokenizer.from_gguf(path).encode(loghub_excerpt(loghub_dir()))[:N_TOKENS])
        model, _ = load_reference(str(path.resolve()))
        with torch.inference_mode():
            ref = model(torch.from_numpy(ids)[None], use_cache=False).logits[0].float()
        for scheme, (block, two) in SCHEMES.items():
            hooks = [m.register_forward_pre_hook(lambda _m, a, b=block, t=two: (fake_quant(a[0], b, t),))
                     for m in model.modules() if isinstance(m, torch.nn.Linear)]
            try:
                with torch.inference_mode():
                    out = model(torch.from_numpy(ids)[None], use_cache=False).logits[0].float()
            finally:
                for h in hooks:
                    h.remove()
            cos = torch.nn.functional.cosine_similarity(out, ref, dim=-1).min().item()
            top1 = (out.argmax(-1) == ref.argmax(-1)).float().mean().item()
            print(f"{name:30s} {scheme:9s} min logits cos {cos:.6f}  top-1 {100 * top1:.1f}%", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
