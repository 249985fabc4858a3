"""tools/export_draft_onnx.py: the static graph rknn needs, with logits equal to the native engine's
(cosine >= 0.999), through the sink + ring + scratch bookkeeping of gateway/drafters/onnx_engine.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from gateway.drafters.onnx_engine import OnnxDraftEngine

TOOLS = Path(__file__).resolve().parents[2] / "tools"
MIN_COSINE = 0.999
CHUNK = 16


def load_tool(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod   # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


exporter = load_tool("export_draft_onnx")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def check_parity(gguf_path: Path, onnx_path: Path, n_sink: int, n_ring: int, n_scratch: int,
                 stream: list[int], job: list[int]) -> np.ndarray:
    """Same stream pushed into both, then the same job in scratch: per-token logits cosines."""
    from gateway.engine import Engine
    native = Engine(str(gguf_path), n_sink=n_sink, n_ring=n_ring, n_scratch=n_scratch, n_threads=2)
    graph = OnnxDraftEngine(onnx_path, n_sink, n_ring, n_scratch, n_threads=2)
    for eng in (native, graph):
        eng.prefill_stream(stream)
    ref = native.forward_scratch(job, all_logits=True)
    got = graph.forward_scratch(job, all_logits=True)
    assert got.shape == ref.shape
    assert np.mean(ref.argmax(-1) == got.argmax(-1)) >= 0.9
    return cosines(ref, got)


@pytest.fixture(scope="module")
def tiny_qwen2(tmp_path_factory) -> Path:
    """Random qwen2 (q/k/v bias, neox RoPE, K-quants) small enough for CI."""
    rg = load_tool("random_gguf")
    Q = rg.Q
    spec = rg.Spec("tiny-qwen2", "qwen2", 2, 256, 512, 4, 2, 1000, 1e6, 1e-6,
                   Q.Q5_0, Q.Q8_0, Q.Q4_K, Q.Q6_K, Q.Q4_K, Q.Q6_K, True)
    return rg.write_model(spec, tmp_path_factory.mktemp("tiny") / "tiny-qwen2.gguf", seed=3)


def test_graph_is_static_and_names_its_io(smollm_path, artifacts_dir):
    path = exporter.ensure_exported(smollm_path, artifacts_dir / "smollm2.draft.onnx", chunk=CHUNK, n_cache=640)
    model = onnx.load(str(path), load_external_data=False)
    ios = {v.name: [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
           for v in list(model.graph.input) + list(model.graph.output)}
    assert ios == {"tokens": [CHUNK], "positions": [CHUNK], "cache_positions": [640], "mask": [CHUNK, 640 + CHUNK],
                   "k_cache": [30, 3, 640, 64], "v_cache": [30, 3, 640, 64],
                   "logits": [CHUNK, 49152], "k_new": [30, 3, CHUNK, 64], "v_new": [30, 3, CHUNK, 64]}
    assert model.opset_import[0].version == exporter.OPSET


def test_smollm2_logits_match_native_engine(smollm_path, artifacts_dir):
    path = exporter.ensure_exported(smollm_path, artifacts_dir / "smollm2.draft.onnx", chunk=CHUNK, n_cache=640)
    rng = np.random.default_rng(0)
    # 60 stream tokens through a 32-slot ring: evictions, positions by age, then a 21-token job (3 chunks)
    cos = check_parity(smollm_path, path, 4, 32, 64, rng.integers(10, 40000, 60).tolist(),
                       rng.integers(10, 40000, 21).tolist())
    assert cos.min() >= MIN_COSINE, f"cosine {cos.min():.6f}"


def test_qwen2_arch_logits_match_native_engine(tiny_qwen2, tmp_path):
    path = exporter.export(tiny_qwen2, tmp_path / "tiny.onnx", chunk=4, n_cache=48)
    rng = np.random.default_rng(1)
    cos = check_parity(tiny_qwen2, path, 4, 16, 28, rng.integers(0, 1000, 30).tolist(), rng.integers(0, 1000, 11).tolist())
    assert cos.min() >= MIN_COSINE, f"cosine {cos.min():.6f}"


def test_bad_inputs_name_the_problem(tmp_path, smollm_path, artifacts_dir):
    with pytest.raises(FileNotFoundError, match="missing.gguf"):
        exporter.export(tmp_path / "missing.gguf", tmp_path / "x.onnx")
    with pytest.raises(ValueError, match="chunk"):
        exporter.export(smollm_path, tmp_path / "x.onnx", chunk=0)
    path = exporter.ensure_exported(smollm_path, artifacts_dir / "smollm2.draft.onnx", chunk=CHUNK, n_cache=640)
    with pytest.raises(ValueError, match="exceeds the graph's 640 cache slots"):
        OnnxDraftEngine(path, 4, 600, 100)


@pytest.mark.slow
def test_qwen05_draft_logits_match_native_engine(qwen05_path, artifacts_dir):
    path = exporter.ensure_exported(qwen05_path, artifacts_dir / "qwen05.draft.onnx", chunk=CHUNK, n_cache=640)
    rng = np.random.default_rng(2)
    cos = check_parity(qwen05_path, path, 4, 64, 64, rng.integers(10, 150000, 100).tolist(),
                       rng.integers(10, 150000, 24).tolist())
    assert cos.min() >= MIN_COSINE, f"cosine {cos.min():.6f}"
