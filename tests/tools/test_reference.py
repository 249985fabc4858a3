"""tools/probes/reference.py on SmolLM2-135M: index meaning, consistency, and faithfulness to the GGUF's own weights.

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
    return importlib.import_module("tools.probes.reference")


@pytest.fixture(scope="module")
def smollm_reader(smollm_path):
    from gguf import GGUFReader

    return GGUFReader(str(smollm_path))


@pytest.fixture(scope="module")
def gguf_weights(smollm_reader):
    """name -> fp32 array (numpy row-major: [rows, cols] = [n_out, n_in]), plus the metadata we need."""
    from gguf.quants import dequantize

    reader = smollm_reader
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
    from gateway.llm.tokenizer import Tokenizer

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


def _rope_halves(x, base):
    """llama.cpp's LLAMA_ROPE_TYPE_NEOX (qwen2): rotates pairs (i, i + head_dim/2). x: [T, n, hd]."""
    n_tokens, head_dim = x.shape[0], x.shape[-1]
    angle = np.arange(n_tokens)[:, None] * base ** (-np.arange(0, head_dim, 2) / head_dim)[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    first, second = x[..., : head_dim // 2], x[..., head_dim // 2 :]
    return np.concatenate([first * cos - second * sin, first * sin + second * cos], -1)


def _llama_cpp_layer(x, tensors, layer, meta, rope=_rope_interleaved):
    """One llama/qwen2 block on the GGUF tensors as stored, in float64. x: [T, n_embd] -> [T, n_embd]."""
    w = {k.split(".", 2)[2].removesuffix(".weight"): v.astype(np.float64) for k, v in tensors.items()
         if k.startswith(f"blk.{layer}.")}
    eps, base = meta["attention.layer_norm_rms_epsilon"], meta["rope.freq_base"]
    n_head, n_head_kv = meta["attention.head_count"], meta["attention.head_count_kv"]
    n_tokens, n_embd = x.shape
    head_dim = n_embd // n_head
    h = _rmsnorm(x, w["attn_norm"], eps)
    q, k, v = (h @ w[f"attn_{n}"].T + w.get(f"attn_{n}.bias", 0.0) for n in "qkv")  # qwen2 has q/k/v biases
    q = rope(q.reshape(n_tokens, n_head, head_dim), base)
    k = rope(k.reshape(n_tokens, n_head_kv, head_dim), base)
    v = v.reshape(n_tokens, n_head_kv, head_dim)
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


# GGUF tensor name (after "blk.N.") -> transformers parameter name (after "model.layers.N.").
_LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_TOP_NAMES = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
              "output.weight": "lm_head.weight"}


def _interleaved_to_halves(rows, n_head):
    """Row order of a llama q/k matrix (or bias) from llama.cpp's interleaved-RoPE layout (pairs 2i, 2i+1) to
    rotate-half's (pairs i, i + head_dim/2), per head."""
    head_dim = rows.shape[0] // n_head
    split = rows.reshape(n_head, head_dim // 2, 2, *rows.shape[1:])
    return np.swapaxes(split, 1, 2).reshape(rows.shape)


def check_params_equal_gguf(model, reader, *, permuted_qk: bool):
    """Every transformers parameter is the gguf package's dequantization of its GGUF tensor, bit for bit
    (llama's q/k rows reordered as _interleaved_to_halves says). Returns how many tensors were compared."""
    from gguf.quants import dequantize

    arch = reader.fields["general.architecture"].contents()
    n_head = reader.fields[f"{arch}.attention.head_count"].contents()
    n_head_kv = reader.fields[f"{arch}.attention.head_count_kv"].contents()
    params = dict(model.named_parameters())
    compared = 0
    for tensor in reader.tensors:
        if tensor.name.startswith("blk."):
            _, layer, rest = tensor.name.split(".", 2)
            name = f"model.layers.{layer}.{_LAYER_NAMES[rest]}"
        else:
            name = _TOP_NAMES[tensor.name]
        expected = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        if permuted_qk and (".attn_q." in tensor.name or ".attn_k." in tensor.name):
            expected = _interleaved_to_halves(expected, n_head if ".attn_q." in tensor.name else n_head_kv)
        got = params[name].detach().numpy()
        assert got.shape == expected.shape and np.array_equal(got, expected), tensor.name
        compared += 1
    return compared


def test_weights_are_the_gguf_tensors(reference, smollm_path, smollm_reader):
    model, _ = reference.load_reference(str(smollm_path.resolve()))
    assert check_params_equal_gguf(model, smollm_reader, permuted_qk=True) == 272  # every tensor in the file


@pytest.mark.slow
def test_qwen2_weights_are_the_gguf_tensors_unpermuted(reference, qwen05_path):
    """qwen2: RoPE is rotate-half in llama.cpp too, so no tensor is reordered; the biases come through."""
    from gguf import GGUFReader

    from gguf.quants import dequantize

    reader = GGUFReader(str(qwen05_path))
    model, _ = reference.load_reference(str(qwen05_path.resolve()))
    assert check_params_equal_gguf(model, reader, permuted_qk=False) > 24 * 12
    # And block 0 recomputed with NEOX RoPE and the biases gives hidden[1].
    tensors = {t.name: dequantize(t.data, t.tensor_type) for t in reader.tensors if t.name.startswith("blk.0.")}
    meta = {k: reader.fields[f"qwen2.{k}"].contents() for k in (
        "attention.head_count", "attention.head_count_kv", "rope.freq_base", "attention.layer_norm_rms_epsilon",
    )}
    hidden = reference.reference_forward(qwen05_path, [151644, 872, 198, 14990, 1879, 13, 151645])["hidden"]
    expected = _llama_cpp_layer(hidden[0], tensors, 0, meta, rope=_rope_halves)
    assert np.abs(hidden[1] - expected).max() < 1e-4 * np.abs(expected).max()


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
