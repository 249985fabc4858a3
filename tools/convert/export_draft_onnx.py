"""Export the draft model (GGUF, qwen2 or llama) to a static-shape ONNX graph for onnxruntime / rknn.

Owns the graph layout; the host-side cache bookkeeping lives in gateway/llm/drafters/onnx_engine.py.
Weights are dequantized with the `gguf` package's own dequantizers and stored fp32 in one external file.

Graph (all shapes static; C = chunk tokens, S = cache slots, L = n_layer, Hkv = n_head_kv, D = head dim):
  inputs   tokens          int64   [C]            padded with 0 where the mask says so
           positions       float32 [C]            RoPE position of each chunk token
           cache_positions float32 [S]            RoPE position of each cache slot
           mask            float32 [C, S + C]     additive: 0 = may attend, MASK_NEG = may not
           k_cache         float32 [L, Hkv, S, D] un-rotated keys (RoPE is applied in the graph,
           v_cache         float32 [L, Hkv, S, D]   by position, as the native engine does)
  outputs  logits          float32 [C, V]
           k_new           float32 [L, Hkv, C, D] the chunk's un-rotated keys/values: the host
           v_new           float32 [L, Hkv, C, D]   writes them into its ring slots
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from gguf import GGUFReader
from gguf.quants import dequantize
from onnx import TensorProto, helper

OPSET = 17               # rknn-toolkit2 2.5 accepts opset <= 19
MASK_NEG = -30000.0      # "may not attend": finite and representable in fp16 (the NPU computes in fp16)
DEFAULT_CHUNK = 8
# draft sink + ring + scratch slots: room for a 40-line stream. Slots + chunk <= 2048: past that the rknn
# compiler's register fields overflow for rk3588 (docs/perf/2026-12-02-rknn-draft.md).
DEFAULT_N_CACHE = 2048 - DEFAULT_CHUNK
ALIGN = 64               # byte alignment of each weight in the external file (mmap friendly)
ARCHS = ("qwen2", "llama")


# --- GGUF -> hyper-parameters and fp32 weights -----------------------------------------------

def read_hparams(reader: GGUFReader) -> dict:
    def field(key, default=None):
        f = reader.fields.get(key)
        if f is None:
            if default is None:
                raise ValueError(f"{key} missing from the GGUF metadata")
            return default
        return f.contents()
    arch = field("general.architecture")
    if arch not in ARCHS:
        raise ValueError(f"general.architecture = {arch!r}: the exporter handles {', '.join(ARCHS)}")
    n_embd = int(field(f"{arch}.embedding_length"))
    n_head = int(field(f"{arch}.attention.head_count"))
    return {
        "arch": arch,
        "n_layer": int(field(f"{arch}.block_count")),
        "n_embd": n_embd,
        "n_ff": int(field(f"{arch}.feed_forward_length")),
        "n_head": n_head,
        "n_head_kv": int(field(f"{arch}.attention.head_count_kv", n_head)),
        "head_dim": n_embd // n_head,
        "rope_theta": float(field(f"{arch}.rope.freq_base", 10000.0)),
        "rms_eps": float(field(f"{arch}.attention.layer_norm_rms_epsilon")),
    }


def load_weights(gguf_path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """-> (hparams, {gguf tensor name: float32 array in GGUF row-major [n_out, n_in] layout})."""
    reader = GGUFReader(str(gguf_path))
    hp = read_hparams(reader)
    weights = {}
    for t in reader.tensors:
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        shape = [int(d) for d in reversed(t.shape)]        # GGUF lists ne innermost first
        if w.size != int(np.prod(shape)):
            raise ValueError(f"{gguf_path}: tensor {t.name} dequantized to {w.size} values, shape says {shape}")
        weights[t.name] = w.reshape(shape)
    if hp["arch"] == "llama":
        # llama GGUFs store Q/K rows permuted for interleaved RoPE; undo it so one (neox) RoPE serves both
        for i in range(hp["n_layer"]):
            for name, heads in ((f"blk.{i}.attn_q.weight", hp["n_head"]), (f"blk.{i}.attn_k.weight", hp["n_head_kv"])):
                w = weights[name]
                weights[name] = w.reshape(heads, hp["head_dim"] // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)
    hp["n_vocab"] = int(weights["token_embd.weight"].shape[0])
    return hp, weights


# --- graph -----------------------------------------------------------------------------------

class GraphBuilder:
    """Collects nodes; weights go to one external file written as they are added."""

    def __init__(self, data_path: Path):
        self.nodes, self.inits = [], []
        self.data_path = data_path
        self._data = open(data_path, "wb")
        self._n = 0

    def close(self):
        self._data.close()

    def name(self, stem: str) -> str:
        self._n += 1
        return f"{stem}_{self._n}"

    def op(self, op_type: str, inputs: list[str], stem: str | None = None, **attrs) -> str:
        out = self.name(stem or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def const(self, value, stem: str = "c") -> str:
        arr = np.asarray(value)
        name = self.name(stem)
        self.inits.append(onnx.numpy_helper.from_array(arr, name))
        return name

    def weight(self, arr: np.ndarray, name: str) -> str:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        pad = (-self._data.tell()) % ALIGN
        self._data.write(b"\0" * pad)
        offset = self._data.tell()
        self._data.write(arr.tobytes())
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(arr.shape),
                        data_location=TensorProto.EXTERNAL)
        for key, val in (("location", self.data_path.name), ("offset", str(offset)), ("length", str(arr.nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, val
        self.inits.append(t)
        return name


def build_model(hp: dict, weights: dict[str, np.ndarray], chunk: int, n_cache: int, data_path: Path) -> onnx.ModelProto:
    C, S = chunk, n_cache
    L, H, Hkv, D, E = hp["n_layer"], hp["n_head"], hp["n_head_kv"], hp["head_dim"], hp["n_embd"]
    G = H // Hkv
    g = GraphBuilder(data_path)

    def rmsnorm(x: str, w_name: str) -> str:
        ms = g.op("ReduceMean", [g.op("Mul", [x, x])], axes=[-1], keepdims=1)
        inv = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [ms, g.const(np.float32(hp["rms_eps"]))])])])
        return g.op("Mul", [g.op("Mul", [x, inv]), g.weight(weights[w_name], w_name)])

    def linear(x: str, w_name: str, b_name: str | None = None) -> str:
        ins = [x, g.weight(weights[w_name], w_name)]
        if b_name and b_name in weights:
            ins.append(g.weight(weights[b_name], b_name))
        return g.op("Gemm", ins, transB=1)   # x [C, n_in] @ W[n_out, n_in]^T

    def rope(x: str, cos: str, sin: str) -> str:
        """neox RoPE on x [heads, T, D] with cos/sin [T, D]: x*cos + rotate_half(x)*sin."""
        x1 = g.op("Slice", [x, g.const(np.array([0], np.int64)), g.const(np.array([D // 2], np.int64)), g.const(np.array([2], np.int64))])
        x2 = g.op("Slice", [x, g.const(np.array([D // 2], np.int64)), g.const(np.array([D], np.int64)), g.const(np.array([2], np.int64))])
        rot = g.op("Concat", [g.op("Neg", [x2]), x1], axis=2)
        return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rot, sin])])

    # RoPE tables for cache slots then chunk tokens: [S + C, D]
    inv_freq = (1.0 / hp["rope_theta"] ** (np.arange(0, D, 2, dtype=np.float64) / D)).astype(np.float32)
    pos_all = g.op("Concat", ["cache_positions", "positions"], axis=0)
    ang = g.op("Mul", [g.op("Unsqueeze", [pos_all, g.const(np.array([1], np.int64))]), g.const(inv_freq[None, :])])
    ang = g.op("Concat", [ang, ang], axis=1)
    cos_all, sin_all = g.op("Cos", [ang]), g.op("Sin", [ang])
    q_rows = [g.const(np.array([S], np.int64)), g.const(np.array([S + C], np.int64)), g.const(np.array([0], np.int64))]
    cos_q, sin_q = g.op("Slice", [cos_all] + q_rows), g.op("Slice", [sin_all] + q_rows)
    scale = g.const(np.float32(1.0 / np.sqrt(D)))

    x = g.op("Gather", [g.weight(weights["token_embd.weight"], "token_embd.weight"), "tokens"], axis=0)   # [C, E]
    k_news, v_news = [], []
    for i in range(L):
        b = f"blk.{i}."
        h = rmsnorm(x, b + "attn_norm.weight")
        q = g.op("Transpose", [g.op("Reshape", [linear(h, b + "attn_q.weight", b + "attn_q.bias"), g.const(np.array([C, H, D], np.int64))])], perm=[1, 0, 2])
        k = g.op("Transpose", [g.op("Reshape", [linear(h, b + "attn_k.weight", b + "attn_k.bias"), g.const(np.array([C, Hkv, D], np.int64))])], perm=[1, 0, 2])
        v = g.op("Transpose", [g.op("Reshape", [linear(h, b + "attn_v.weight", b + "attn_v.bias"), g.const(np.array([C, Hkv, D], np.int64))])], perm=[1, 0, 2])
        k_news.append(g.op("Unsqueeze", [k, g.const(np.array([0], np.int64))]))   # [1, Hkv, C, D]
        v_news.append(g.op("Unsqueeze", [v, g.const(np.array([0], np.int64))]))
        layer = g.const(np.array(i, np.int64))
        k_all = g.op("Concat", [g.op("Gather", ["k_cache", layer], axis=0), k], axis=1)   # [Hkv, S+C, D]
        v_all = g.op("Concat", [g.op("Gather", ["v_cache", layer], axis=0), v], axis=1)
        q = rope(q, cos_q, sin_q)                                                       # [H, C, D]
        k_all = rope(k_all, cos_all, sin_all)
        qg = g.op("Reshape", [q, g.const(np.array([Hkv, G * C, D], np.int64))])        # head h uses kv head h // G
        scores = g.op("Mul", [g.op("MatMul", [qg, g.op("Transpose", [k_all], perm=[0, 2, 1])]), scale])
        scores = g.op("Add", [g.op("Reshape", [scores, g.const(np.array([Hkv, G, C, S + C], np.int64))]), "mask"])
        probs = g.op("Reshape", [g.op("Softmax", [scores], axis=-1), g.const(np.array([Hkv, G * C, S + C], np.int64))])
        att = g.op("Reshape", [g.op("MatMul", [probs, v_all]), g.const(np.array([H, C, D], np.int64))])
        att = g.op("Reshape", [g.op("Transpose", [att], perm=[1, 0, 2]), g.const(np.array([C, E], np.int64))])
        x = g.op("Add", [x, linear(att, b + "attn_output.weight")])
        h = rmsnorm(x, b + "ffn_norm.weight")
        gate = linear(h, b + "ffn_gate.weight")
        act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), linear(h, b + "ffn_up.weight")])
        x = g.op("Add", [x, linear(act, b + "ffn_down.weight")])
    x = rmsnorm(x, "output_norm.weight")
    out_w = "output.weight" if "output.weight" in weights else "token_embd.weight"   # tied embeddings
    logits = g.op("Gemm", [x, out_w if out_w == "token_embd.weight" else g.weight(weights[out_w], out_w)], transB=1)
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
    g.nodes.append(helper.make_node("Concat", k_news, ["k_new"], axis=0))
    g.nodes.append(helper.make_node("Concat", v_news, ["v_new"], axis=0))
    g.close()

    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    inputs = [helper.make_tensor_value_info("tokens", i64, [C]),
              helper.make_tensor_value_info("positions", f32, [C]),
              helper.make_tensor_value_info("cache_positions", f32, [S]),
              helper.make_tensor_value_info("mask", f32, [C, S + C]),
              helper.make_tensor_value_info("k_cache", f32, [L, Hkv, S, D]),
              helper.make_tensor_value_info("v_cache", f32, [L, Hkv, S, D])]
    outputs = [helper.make_tensor_value_info("logits", f32, [C, hp["n_vocab"]]),
               helper.make_tensor_value_info("k_new", f32, [L, Hkv, C, D]),
               helper.make_tensor_value_info("v_new", f32, [L, Hkv, C, D])]
    graph = helper.make_graph(g.nodes, "linegate_draft", inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="linegate")
    meta = {**hp, "chunk": C, "n_cache": S, "mask_neg": MASK_NEG}
    for key, val in meta.items():
        model.metadata_props.add(key=key, value=str(val))
    return model


def export(gguf_path: Path, out_path: Path, chunk: int = DEFAULT_CHUNK, n_cache: int = DEFAULT_N_CACHE) -> Path:
    """Write out_path (graph) and out_path + '.data' (weights). Returns out_path."""
    if chunk < 1 or n_cache < 1:
        raise ValueError(f"chunk and n_cache must be >= 1, got chunk={chunk} n_cache={n_cache}")
    if not Path(gguf_path).is_file():
        raise FileNotFoundError(f"draft GGUF not found: {gguf_path}")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    hp, weights = load_weights(Path(gguf_path))
    # Written under the final names in a private folder beside out_path, then renamed into place (weights
    # first): a reader (another process reusing the export) never opens a half-written file.
    with tempfile.TemporaryDirectory(dir=out_path.parent, prefix=f".{out_path.name}.") as tmp:
        part = Path(tmp) / out_path.name
        model = build_model(hp, weights, chunk, n_cache, part.with_name(part.name + ".data"))
        onnx.save_model(model, str(part))
        onnx.checker.check_model(str(part))
        os.replace(part.with_name(part.name + ".data"), out_path.with_name(out_path.name + ".data"))
        os.replace(part, out_path)
    return out_path


def ensure_exported(gguf_path: Path, out_path: Path, chunk: int = DEFAULT_CHUNK, n_cache: int = DEFAULT_N_CACHE) -> Path:
    """Export unless out_path is newer than both the GGUF and this exporter (and has the same shape)."""
    out_path = Path(out_path)
    data = out_path.with_name(out_path.name + ".data")
    newest_input = max(Path(gguf_path).stat().st_mtime, Path(__file__).stat().st_mtime)
    if out_path.is_file() and data.is_file() and out_path.stat().st_mtime > newest_input:
        meta = {p.key: p.value for p in onnx.load(str(out_path), load_external_data=False).metadata_props}
        if meta.get("chunk") == str(chunk) and meta.get("n_cache") == str(n_cache):
            return out_path
    return export(Path(gguf_path), out_path, chunk, n_cache)


def parity(gguf_path: Path, onnx_path: Path, tokens: list[int]) -> dict:
    """Cosine of the last position's logits: ONNX graph vs the native engine on the same GGUF."""
    from gateway.llm.drafters.onnx_engine import OnnxDraftEngine
    from gateway.llm.engine import Engine
    from gateway.settings import BARE_ENGINE

    native = Engine(str(gguf_path), n_sink=4, n_ring=256, n_scratch=len(tokens) + 8, **BARE_ENGINE.model_dump())
    ref = np.asarray(native.forward_scratch(tokens, all_logits=True), dtype=np.float64)
    native.rollback(0)
    onnx_engine = OnnxDraftEngine(onnx_path, n_sink=4, n_ring=256, n_scratch=len(tokens) + 8)
    got = np.asarray(onnx_engine.forward_scratch(tokens, all_logits=True), dtype=np.float64)
    cos = [float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(ref, got)]
    return {"cosine_min": min(cos), "cosine_mean": float(np.mean(cos)),
            "argmax_agree": float(np.mean(ref.argmax(-1) == got.argmax(-1)))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", required=True, help="draft model GGUF")
    ap.add_argument("--out", required=True, help="output .onnx (weights go to <out>.data)")
    ap.add_argument("--chunk", type=int, default=DEFAULT_CHUNK)
    ap.add_argument("--n-cache", type=int, default=DEFAULT_N_CACHE)
    ap.add_argument("--check", action="store_true", help="report logits cosine against the native engine")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    path = export(Path(args.gguf), Path(args.out), args.chunk, args.n_cache)
    report = {"onnx": str(path), "export_s": round(time.perf_counter() - t0, 1)}
    if args.check:
        report.update(parity(Path(args.gguf), path, list(range(100, 140))))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
