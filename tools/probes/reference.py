"""The numerical reference: a GGUF model run in fp32 by Hugging Face transformers on torch CPU.

Owns loading (cached per file) and dumping hidden states and logits for given token ids; it knows nothing
about our engine, except the layout it returns, which is the engine's.

What the arrays mean (T tokens, L = n_layer):
    hidden[0]      token embeddings, the input of layer 0                           [T, n_embd]
    hidden[i]      residual stream after layer i-1 (i = 1..L), before the final norm [T, n_embd]
    final          final RMSNorm of hidden[L]                                        [T, n_embd]
    logits         lm_head(final) (output.weight, or token_embd.weight when tied)     [T, n_vocab]
transformers' own `output_hidden_states` has L+1 entries too, but applies the final norm to its last one;
here hidden[L] is taken from the last decoder layer's output by a hook, so every entry is pre-norm, and
`final` holds what transformers calls hidden_states[L].

Faithfulness (checked in tests/tools/test_reference.py): transformers dequantizes every tensor with the
`gguf` package's dequantizers to fp32, unchanged, except llama's attn_q/attn_k, whose rows llama.cpp's
converter permuted so that its interleaved ("NORM") RoPE could be used; transformers undoes that permutation
and uses rotate-half RoPE instead. The two are the same computation: the attention scores and outputs, and so
every hidden state here, equal those of llama.cpp's layout. qwen2 uses rotate-half ("NEOX") RoPE in both, and
no tensor is permuted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

MAX_TOKENS = 8192  # one forward's length; the models' trained context is larger, the reference's RAM is not


class ReferenceInputError(ValueError):
    """Bad input to the reference: missing file, empty or out-of-range token ids."""


@lru_cache(maxsize=2)
def load_reference(gguf_path: str):
    """(model, config) for a GGUF, fp32, eval mode. Cached: the 1.5B takes ~50 s to dequantize."""
    import torch
    from transformers import AutoModelForCausalLM

    path = Path(gguf_path).resolve()
    if not path.is_file():
        raise ReferenceInputError(f"{path}: no such GGUF file")
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    model.eval()
    return model, model.config


def reference_forward(gguf_path: str | Path, token_ids, *, threads: int | None = None) -> dict:
    """Runs `token_ids` (positions 0..T-1, one sequence, causal) through the model.

    Returns {"hidden": float32 [n_layer+1, T, n_embd], "final": float32 [T, n_embd],
    "logits": float32 [T, n_vocab], "token_ids": int64 [T]} (see the module docstring for the indices).
    `threads` sets torch's intra-op threads for this process (torch.set_num_threads); None leaves it.
    """
    import torch

    ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
    if ids.size == 0:
        raise ReferenceInputError("token_ids is empty")
    if ids.size > MAX_TOKENS:
        raise ReferenceInputError(f"{ids.size} tokens exceed MAX_TOKENS ({MAX_TOKENS})")
    model, config = load_reference(str(Path(gguf_path).resolve()))
    n_vocab = config.vocab_size
    bad = ids[(ids < 0) | (ids >= n_vocab)]
    if bad.size:
        raise ReferenceInputError(f"token id {int(bad[0])} outside [0, {n_vocab})")
    if threads is not None:
        torch.set_num_threads(threads)

    layers = model.model.layers
    captured = {}

    def keep_last(_module, _inputs, output):
        captured["last"] = output[0] if isinstance(output, tuple) else output

    hook = layers[-1].register_forward_hook(keep_last)
    try:
        with torch.inference_mode():
            out = model(torch.from_numpy(ids)[None, :], output_hidden_states=True, use_cache=False)
    finally:
        hook.remove()
    states = out.hidden_states  # L+1 entries; the last one is post-final-norm
    if len(states) != len(layers) + 1:
        raise RuntimeError(f"transformers returned {len(states)} hidden states for {len(layers)} layers")
    hidden = torch.stack([*states[:-1], captured["last"]])[:, 0]
    return {
        "hidden": hidden.float().numpy().copy(),
        "final": states[-1][0].float().numpy().copy(),
        "logits": out.logits[0].float().numpy().copy(),
        "token_ids": ids,
    }


def _parse_tokens(text: str) -> list[int]:
    try:
        return [int(t) for t in text.replace(",", " ").split()]
    except ValueError as exc:
        raise ReferenceInputError(f"--tokens must be integers separated by commas or spaces: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="GGUF file")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--tokens", help="token ids, e.g. '1,2,3'")
    source.add_argument("--text", help="text, tokenized by gateway.llm.tokenizer (no special tokens added)")
    parser.add_argument("--out", type=Path, help="write hidden, final, logits, token_ids to this .npz")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--top", type=int, default=5, help="print the top-k next tokens of the last position")
    args = parser.parse_args(argv)

    tokenizer = None
    try:
        if args.text is not None or args.top:
            sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
            from gateway.llm.tokenizer import Tokenizer

            tokenizer = Tokenizer.from_gguf(args.model)
        ids = tokenizer.encode(args.text) if args.text is not None else _parse_tokens(args.tokens)
        start = time.perf_counter()
        result = reference_forward(args.model, ids, threads=args.threads)
        seconds = time.perf_counter() - start
    except (ReferenceInputError, ValueError) as exc:
        print(f"reference: {exc}", file=sys.stderr)
        return 2
    if args.out:
        np.savez(args.out, **result)
    logits = result["logits"][-1]
    top = np.argsort(-logits)[: args.top].tolist()
    summary = {
        "model": str(args.model),
        "n_tokens": len(ids),
        "hidden_shape": list(result["hidden"].shape),
        "logits_shape": list(result["logits"].shape),
        "seconds_incl_load": round(seconds, 2),
        "top_next": [
            {"id": i, "logit": float(logits[i]), "text": tokenizer.decode([i]) if tokenizer else None} for i in top
        ],
        "out": str(args.out) if args.out else None,
    }
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
