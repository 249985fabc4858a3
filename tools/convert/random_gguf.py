"""Random-weight GGUF files with the exact shapes and tensor types of the project's models.

The one random-GGUF writer of the project: the CUDA parity tests and tools/bench/bench_cuda.py
(the real files cannot travel to the GPU machine), the ONNX/RKNN export tests, and the native
engine tests' tiny models (write_tiny). Knows nothing about the engines. Q4_K/Q6_K blocks are built with numpy
(gguf.quants cannot quantize them); every type is random bytes with scales set so that
weights have a chosen standard deviation (measured with gguf's own dequantizer).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as Q


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    arch: str
    n_layer: int
    n_embd: int
    n_ff: int
    n_head: int
    n_head_kv: int
    n_vocab: int
    rope_theta: float
    rms_eps: float
    embd_type: Q
    output_type: Q | None          # None: tied embeddings
    base_type: Q                   # q, k, o, gate, up (and v/down outside "more bits" layers)
    v_more: Q                      # attn_v in the more-bits layers
    down_type: Q
    down_more: Q
    qkv_bias: bool
    n_ctx_train: int = 32768
    overrides: tuple[tuple[str, Q], ...] = ()   # (tensor role e.g. "attn_k", type): per-role types

    def type_of(self, role: str, default: Q) -> Q:
        return dict(self.overrides).get(role, default)


def more_bits(i: int, n: int) -> bool:
    """llama.cpp's Q4_K_M rule for which layers get the larger type (first/last eighth, every third)."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


# The tensor types below were read from the real files in ~/.cache/linegate/models.
QWEN15 = Spec("qwen2.5-coder-1.5b", "qwen2", 28, 1536, 8960, 12, 2, 151936, 1e6, 1e-6,
              Q.Q4_K, Q.Q6_K, Q.Q4_K, Q.Q6_K, Q.Q4_K, Q.Q6_K, True)
QWEN05 = Spec("qwen2.5-coder-0.5b", "qwen2", 24, 896, 4864, 14, 2, 151936, 1e6, 1e-6,
              Q.Q5_0, Q.Q8_0, Q.Q5_0, Q.Q8_0, Q.Q4_K, Q.Q6_K, True)
SMOLLM = Spec("smollm2-135m", "llama", 30, 576, 1536, 9, 3, 49152, 1e5, 1e-5,
              Q.Q8_0, None, Q.Q4_1, Q.Q4_1, Q.Q4_1, Q.Q4_1, False, n_ctx_train=8192)
SPECS = {s.name: s for s in (QWEN15, QWEN05, SMOLLM)}

# Tiny models for engine tests that need shapes, not knowledge: two layers, and several weight
# types in one model (Q8_0, Q5_0, Q4_1) so one forward runs several kernels.
TINY_VOCAB, TINY_CTX = 512, 512
TINY_TYPES = (("attn_q", Q.Q8_0), ("attn_k", Q.Q5_0), ("attn_v", Q.Q8_0), ("attn_output", Q.Q4_1),
              ("ffn_gate", Q.Q8_0), ("ffn_up", Q.Q5_0), ("ffn_down", Q.Q8_0))


def tiny_spec(arch: str = "llama", n_ctx: int = TINY_CTX, n_layer: int = 2) -> Spec:
    """A 256-wide model of `arch` ("llama": tied embeddings; "qwen2": output matrix, qkv bias)."""
    return Spec(f"tiny-{arch}", arch, n_layer, 256, 512, 4, 2, TINY_VOCAB,
                1e4 if arch == "llama" else 1e6, 1e-6, Q.Q8_0, Q.Q8_0 if arch == "qwen2" else None,
                Q.Q8_0, Q.Q8_0, Q.Q8_0, Q.Q8_0, arch == "qwen2", n_ctx_train=n_ctx, overrides=TINY_TYPES)


def write_tiny(path: str | Path, arch: str = "llama", n_ctx: int = TINY_CTX, seed: int = 0, n_layer: int = 2) -> Path:
    return write_model(tiny_spec(arch, n_ctx, n_layer), path, seed)


def _f16(a: np.ndarray) -> np.ndarray:
    return a.astype("<f2").view(np.uint8).reshape(*a.shape, 2)


def random_blocks(rng: np.random.Generator, qtype: Q, rows: int, cols: int, std: float) -> np.ndarray:
    """[rows, row_bytes] uint8 of random `qtype` blocks whose dequantized values have ~std."""
    be, bb = gguf.GGML_QUANT_SIZES[qtype]
    assert cols % be == 0, (qtype.name, cols)
    nb = rows * cols // be
    blk = rng.integers(0, 256, size=(nb, bb), dtype=np.uint8)
    u = rng.uniform(0.5, 1.5, size=nb).astype(np.float32)

    def set_scales(f: float) -> None:
        if qtype == Q.Q4_K:        # d, dmin: dmin = 7.5 d centres d*sc*q - dmin*m
            blk[:, 0:2] = _f16(u * f)
            blk[:, 2:4] = _f16(u * f * 7.5)
        elif qtype == Q.Q6_K:      # d at the end; int8 scales and q - 32 are centred already
            blk[:, 208:210] = _f16(u * f)
        elif qtype in (Q.Q5_0, Q.Q8_0):
            blk[:, 0:2] = _f16(u * f)
        elif qtype == Q.Q4_1:      # d, m = -7.5 d centres d*q + m
            blk[:, 0:2] = _f16(u * f)
            blk[:, 2:4] = _f16(-7.5 * u * f)
        else:
            raise ValueError(f"random_blocks: {qtype.name} not supported")

    set_scales(1.0)
    sample = gguf.quants.dequantize(blk[: min(nb, 256)].reshape(-1), qtype)
    set_scales(std / float(np.std(sample)))
    return blk.reshape(rows, cols // be * bb)


def write_model(spec: Spec, path: str | Path, seed: int = 0) -> Path:
    """Write a random model of `spec`'s shapes and types to `path` (overwritten)."""
    path = Path(path)
    rng = np.random.default_rng(seed)
    E, F, V, hd = spec.n_embd, spec.n_ff, spec.n_vocab, spec.n_embd // spec.n_head
    kv = spec.n_head_kv * hd
    w = gguf.GGUFWriter(str(path), spec.arch)
    w.add_block_count(spec.n_layer)
    w.add_context_length(spec.n_ctx_train)
    w.add_embedding_length(E)
    w.add_feed_forward_length(F)
    w.add_head_count(spec.n_head)
    w.add_head_count_kv(spec.n_head_kv)
    w.add_rope_freq_base(spec.rope_theta)
    w.add_layer_norm_rms_eps(spec.rms_eps)
    if spec.arch == "llama":
        w.add_vocab_size(V)
        w.add_rope_dimension_count(hd)

    def mat(name: str, qtype: Q, rows: int, cols: int, std: float) -> None:
        w.add_tensor(name, random_blocks(rng, qtype, rows, cols, std), raw_dtype=qtype)

    def vec(name: str, n: int, mean: float, std: float) -> None:
        w.add_tensor(name, (mean + std * rng.standard_normal(n)).astype(np.float32))

    mat("token_embd.weight", spec.embd_type, V, E, 1.0)
    for i in range(spec.n_layer):
        p, big = f"blk.{i}.", more_bits(i, spec.n_layer)
        vec(p + "attn_norm.weight", E, 1.0, 0.1)
        vec(p + "ffn_norm.weight", E, 1.0, 0.1)
        t = spec.type_of
        mat(p + "attn_q.weight", t("attn_q", spec.base_type), E, E, 1.0 / np.sqrt(E))
        mat(p + "attn_k.weight", t("attn_k", spec.base_type), kv, E, 1.0 / np.sqrt(E))
        mat(p + "attn_v.weight", t("attn_v", spec.v_more if big else spec.base_type), kv, E, 1.0 / np.sqrt(E))
        mat(p + "attn_output.weight", t("attn_output", spec.base_type), E, E, 0.5 / np.sqrt(E))
        mat(p + "ffn_gate.weight", t("ffn_gate", spec.base_type), F, E, 1.0 / np.sqrt(E))
        mat(p + "ffn_up.weight", t("ffn_up", spec.base_type), F, E, 1.0 / np.sqrt(E))
        mat(p + "ffn_down.weight", t("ffn_down", spec.down_more if big else spec.down_type), E, F, 0.5 / np.sqrt(F))
        if spec.qkv_bias:
            vec(p + "attn_q.bias", E, 0.0, 0.1)
            vec(p + "attn_k.bias", kv, 0.0, 0.1)
            vec(p + "attn_v.bias", kv, 0.0, 0.1)
    vec("output_norm.weight", E, 1.0, 0.1)
    if spec.output_type is not None:
        mat("output.weight", spec.output_type, V, E, 4.0 / np.sqrt(E))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
