"""Which activation precision can pass the correctness gate? A transformers experiment, no native code.

Runs the fp32 reference (tools/probes/reference.py's model) on the gate's 256-token Loghub excerpt twice: as is,
and with every nn.Linear input fake-quantized to a candidate integer scheme. Prints the worst-position
logits cosine and the top-1 agreement against the plain reference, per scheme:
  q8/256   int8, one scale per 256 values (llama.cpp's q8_K, used with K-quant weights)
  q8/32    int8, one scale per 32 (llama.cpp's q8_0)
  q8/16    int8, one scale per 16
  q8x2/256 two int8 terms (the residual of the first quantized again): the engine's default
The gate (tests/test_correctness_gate.py) needs logits cosine >= 0.999 and top-1 >= 99%.

--engine runs the native engine itself at each of its precisions (q8x2, q8) instead of fake quantization:
the gate's figures for its batched forward, and greedy text: 32 tokens from each of 5 held-out prompts (8
Loghub lines of systems and positions the gate does not use), the engine's against the reference's
(transformers' greedy generate, fp32); a text counts as the same when every token is.

    .venv/bin/python tools/probes/act_precision.py [--engine] [MODEL ...]   (default: the three manifest models)
"""

from __future__ import annotations

import argparse
import sys
import time
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
    ap.add_argument("--engine", action="store_true", help="the native engine at q8x2 and q8, and greedy text")
    ap.add_argument("models", nargs="*",
                    default=["smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"])
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    for name in args.models:
        path = model_path(name)
        ids = np.asarray(Tokenizer.from_gguf(path).encode(loghub_excerpt(loghub_dir()))[:N_TOKENS])
        t0 = time.monotonic()
        model, _ = load_reference(str(path.resolve()))
        print(f"{name}: reference loaded in {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        with torch.inference_mode():
            ref = model(torch.from_numpy(ids)[None], use_cache=False).logits[0].float()
        if args.engine:
            engine_figures(name, path, model, ids, ref)
            continue
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


HELD_OUT = ("BGL", "Hadoop", "Spark", "Zookeeper", "HDFS")   # HDFS from line 1000: the gate reads its first lines
GREEDY_TOKENS = 32


def held_out_prompts() -> list[str]:
    from gateway.datasets import loghub_dir
    out = []
    for system in HELD_OUT:
        with open(loghub_dir() / system / f"{system}_2k.log", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()[1000:1008]
        out.append("\n".join(lines) + "\n")
    return out


def reference_greedy(model, prompt: list[int]) -> list[int]:
    """GREEDY_TOKENS argmax tokens from the reference with its KV cache; no stop token (as the engine's run)."""
    import torch
    out_ids: list[int] = []
    with torch.inference_mode():
        out = model(torch.tensor([prompt]), use_cache=True)
        for _ in range(GREEDY_TOKENS):
            out_ids.append(int(out.logits[0, -1].argmax()))
            out = model(torch.tensor([[out_ids[-1]]]), past_key_values=out.past_key_values, use_cache=True)
    return out_ids


def engine_figures(name: str, path, model, ids, ref) -> None:
    """The native engine at each precision against the fp32 reference: the batched forward's worst logits
    cosine and top-1 on the gate's tokens, and how many held-out greedy texts equal the reference's."""
    import json

    import torch

    from test_correctness_gate import N_TOKENS

    from gateway.llm.engine import ACT_PRECISIONS, Engine
    from gateway.settings import BARE_ENGINE
    from gateway.llm.tokenizer import Tokenizer

    tok = Tokenizer.from_gguf(path)
    prompts = [tok.encode(p) for p in held_out_prompts()]
    want = [reference_greedy(model, p) for p in prompts]
    refl = ref.numpy().astype(np.float64)
    for prec in ACT_PRECISIONS:
        eng = Engine(path, n_sink=4, n_ring=64, n_scratch=max(N_TOKENS, max(map(len, prompts)) + GREEDY_TOKENS),
                     max_chunk=N_TOKENS, kv_policy=BARE_ENGINE.kv_policy, act_precision=prec)
        _, logits = eng.forward_hidden(ids.astype(np.int32))
        lg = logits.astype(np.float64)
        cos = (lg * refl).sum(-1) / (np.linalg.norm(lg, axis=-1) * np.linalg.norm(refl, axis=-1))
        got = [eng.generate(p, GREEDY_TOKENS, stop_tokens=[]).tokens for p in prompts]
        same = sum(g == w for g, w in zip(got, want))
        first = [next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), GREEDY_TOKENS) for g, w in zip(got, want)]
        print(json.dumps({"model": name, "engine_precision": prec, "min_logits_cos": round(float(cos.min()), 6),
                          "top1": round(float((logits.argmax(-1) == refl.argmax(-1)).mean()), 4),
                          "greedy_same": f"{same}/{len(prompts)}", "first_diff_at": first}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
