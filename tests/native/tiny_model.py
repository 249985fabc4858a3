"""A tiny random-weight GGUF (llama or qwen2) for engine tests that need shapes, not knowledge."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_LAYER, N_VOCAB, N_CTX = 256, 4, 2, 512, 2, 512, 512


def write_tiny_gguf(path: Path, arch: str = "llama", n_ctx: int = N_CTX, seed: int = 0,
                    n_layer: int = N_LAYER) -> Path:
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(n_layer)
    w.add_context_length(n_ctx)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_freq_base(10000.0 if arch == "llama" else 1e6)
    w.add_layer_norm_rms_eps(1e-6)
    kv = N_EMBD // N_HEAD * N_HEAD_KV

    def mat(name, rows, cols, qtype):
        x = (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, x)
        else:
            w.add_tensor(name, gguf.quants.quantize(x, qtype), raw_dtype=qtype)

    def vec(name, n, scale=1.0, offset=0.0):
        w.add_tensor(name, (offset + scale * rng.standard_normal(n)).astype(np.float32))

    Q8, Q5, Q41 = gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q5_0, gguf.GGMLQuantizationType.Q4_1
    mat("token_embd.weight", N_VOCAB, N_EMBD, Q8)
    vec("output_norm.weight", N_EMBD, 0.1, 1.0)
    if arch == "qwen2":
        mat("output.weight", N_VOCAB, N_EMBD, Q8)
    for l in range(n_layer):
        p = f"blk.{l}."
        vec(p + "attn_norm.weight", N_EMBD, 0.1, 1.0)
        vec(p + "ffn_norm.weight", N_EMBD, 0.1, 1.0)
        mat(p + "attn_q.weight", N_EMBD, N_EMBD, Q8)
        mat(p + "attn_k.weight", kv, N_EMBD, Q5)
        mat(p + "attn_v.weight", kv, N_EMBD, Q8)
        mat(p + "attn_output.weight", N_EMBD, N_EMBD, Q41)
        mat(p + "ffn_gate.weight", N_FF, N_EMBD, Q8)
        mat(p + "ffn_up.weight", N_FF, N_EMBD, Q5)
        mat(p + "ffn_down.weight", N_EMBD, N_FF, Q8)
        if arch == "qwen2":
            vec(p + "attn_q.bias", N_EMBD, 0.1)
            vec(p + "attn_k.bias", kv, 0.1)
            vec(p + "attn_v.bias", kv, 0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
