"""tools/reference.py on SmolLM2-135M: index meaning, consistency, and faithfulness to the GGUF's own weights.

The weights are read back with the `gguf` package's reader and dequantizers, and layers are recomputed in
numpy with llama.cpp's conventions (interleaved RoPE on the stored, permuted attn_q/attn_k), independently
of transformers.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.models

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reference():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    torch.set_num_threads(2)
    spec = importlib.util.spec_from_file_location("linegate_tools_reference", REPO / "tools" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gguf_weights(smollm_path):
    """name -> fp32 array (numpy row-major: [rows, cols] = [n_out, n_in]), plus the metadata we need."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(smollm_path))
    wanted = {"token_embd.weight", "output_norm.weight", "output.weight"}
    last = reader.fields["llama.block_count"].contents() - 1
    wanted |= {t.name for t in reader.tensors if t.name.startswith(("blk.0.", f"blk.{last}."))}
    tensors = {t.name: dequantize(t.data, t.tensor_type).astype(np.float32) for t in reader.tensors if t.name in wanted}
    meta = {k: reader.fields[f"llama.{k}"].contents() for k in (
        "block_count", "embedding_length", "attention.head_count", "attention.head_count_kv", "rope.freq_base",
        "attention.layer_norm_rms_epsilon",
    )}
    return tensors, meta


@pytest.fixture(scope="module")
def loghub_ids(smollm_path, loghub_dir):
    from gateway.tokenizer import Tokenizer

    line = (loghub_dir / "HDFS" / "HDFS_2k.log").read_text(encoding="utf-8").splitlines()[0]
    tok = Tokenizer.from_gguf(smollm_path)
    once = tok.encode(line + "\n")
    return tok, once, once * 2  # the line twice: the second copy is predictable from the first


@pytest.fixture(scope="module")
def result(reference, smollm_path, loghub_ids):
    return reference.reference_forward(smollm_path, loghub_ids[2])


def _rmsnorm(x, weight, eps):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight


def _rope_interleaved(x, base):
    """llama.cpp's LLAMA_ROPE_TYPE_NORM: rotates pairs (2i, 2i+1) by pos * base^(-2i/head_dim). x: [T, n, hd]."""
    n_tokens, head_dim = x.shape[0], x.shape[-1]
    angle = np.arange(n_tokens)[:, None] * base ** (-np.arange(0, head_dim, 2) / head_dim)[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def _llama_cpp_layer(x, tensors, layer, meta):
    """One llama block on the GGUF tensors as stored, in float64. x: [T, n_embd] -> [T, n_embd]."""
    w = {k.split(".", 2)[2].removesuffix(".weight"): v.astype(np.float64) for k, v in tensors.items()
         if k.startswith(f"blk.{layer}.")}
    eps, base = meta["attention.layer_norm_rms_epsilon"], meta["rope.freq_base"]
    n_head, n_head_kv = meta["attention.head_count"], meta["attention.head_count_kv"]
    n_tokens, n_embd = x.shape
    head_dim = n_embd // n_head
    h = _rmsnorm(x, w["attn_norm"], eps)
    q = _rope_interleaved((h @ w["attn_q"].T).reshape(n_tokens, n_head, head_dim), base)
    k = _rope_interleaved((h @ w["attn_k"].T).reshape(n_tokens, n_head_kv, head_dim), base)
    v = (h @ w["attn_v"].T).reshape(n_tokens, n_head_kv, head_dim)
    causal = np.triu(np.full((n_tokens, n_tokens), -np.inf), 1)
    heads = []
    for head in range(n_head):
        kv = head // (n_head // n_head_kv)
        scores = q[:, head] @ k[:, kv].T / np.sqrt(head_dim) + causal
        p = np.exp(scores - scores.max(-1, keepdims=True))
        heads.append((p / p.sum(-1, keepdims=True)) @ v[:, kv])
    x = x + np.concatenate(heads, -1) @ w["attn_output"].T
    h = _rmsnorm(x, w["ffn_norm"], eps)
    gate, up = h @ w["ffn_gate"].T, h @ w["ffn_up"].T
    return x + ((gate / (1 + np.exp(-gate))) * up) @ w["ffn_down"].T


def test_shapes_and_embeddings(result, gguf_weights, loghub_ids):
    tensors, meta = gguf_weights
    ids = loghub_ids[2]
    n_layer, n_embd = meta["block_count"], meta["embedding_length"]
    assert result["hidden"].shape == (n_layer + 1, len(ids), n_embd)
    assert result["logits"].shape == (len(ids), 49152)
    assert result["hidden"].dtype == np.float32 and result["logits"].dtype == np.float32
    # hidden[0] is the embedding rows, bit for bit: dequantized by the same gguf code, no scaling.
    np.testing.assert_array_equal(result["hidden"][0], tensors["token_embd.weight"][ids])


def test_layers_match_llama_cpp_layout(result, gguf_weights):
    """hidden[i+1] = block i (hidden[i]) on the GGUF's stored tensors: first and last block."""
    tensors, meta = gguf_weights
    last = meta["block_count"] - 1
    for layer in (0, last):
        expected = _llama_cpp_layer(result["hidden"][layer], tensors, layer, meta)
        got = result["hidden"][layer + 1]
        scale = np.abs(expected).max()
        assert np.abs(got - expected).max() < 1e-4 * scale, f"block {layer}"


def test_final_norm_and_logits_consistent(result, gguf_weights):
    tensors, meta = gguf_weights
    eps = meta["attention.layer_norm_rms_epsilon"]
    final = _rmsnorm(result["hidden"][-1], tensors["output_norm.weight"], eps)
    np.testing.assert_allclose(result["final"], final, rtol=1e-4, atol=1e-4)
    # SmolLM2 ties the output matrix to the embedding (the file has no output.weight).
    assert "output.weight" not in tensors
    logits = result["final"].astype(np.float64) @ tensors["token_embd.weight"].T.astype(np.float64)
    assert np.abs(result["logits"] - logits).max() < 1e-3 * np.abs(logits).max()


def test_top1_continues_a_repeated_log_line(result, loghub_ids):
    tok, once, ids = loghub_ids
    predicted = result["logits"].argmax(-1)
    # Positions inside the second copy: the token that follows is known from the first copy.
    second = range(len(once), len(ids) - 1)
    hits = sum(int(predicted[i] == ids[i + 1]) for i in second)
    assert hits >= 0.8 * len(second), f"{hits}/{len(second)}: {tok.decode(predicted[len(once):].tolist())!r}"


def test_cli_writes_npz(reference, smollm_path, tmp_path, capsys):
    out = tmp_path / "ref.npz"
    assert reference.main([str(smollm_path), "--tokens", "1,2,3", "--out", str(out)]) == 0
    saved = np.load(out)
    again = reference.reference_forward(smollm_path, [1, 2, 3])
    np.testing.assert_array_equal(saved["hidden"], again["hidden"])
    np.testing.assert_array_equal(saved["logits"], again["logits"])
    assert '"hidden_shape": [31, 3, 576]' in capsys.readouterr().out


def test_bad_input(reference, smollm_path, tmp_path):
    with pytest.raises(reference.ReferenceInputError, match="outside"):
        reference.reference_forward(smollm_path, [1, 49152])
    with pytest.raises(reference.ReferenceInputError, match="empty"):
        reference.reference_forward(smollm_path, [])
    with pytest.raises(reference.ReferenceInputError, match="no such GGUF"):
        reference.reference_forward(tmp_path / "none.gguf", [1])
    assert reference.main([str(smollm_path), "--tokens", "1,x"]) == 2
