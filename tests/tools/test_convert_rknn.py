"""tools/convert/convert_draft_rknn.py: the static draft graph converts for rk3588 (fp16, and int8 calibrated on
the drafter's own graph runs) and the toolkit's simulator agrees with onnxruntime on held-out runs.
Needs rknn-toolkit2 in its own venv (the tool creates it): `rknn` marker."""

from __future__ import annotations

import importlib

import pytest

from tools import TOOL_MODULES

# int8 (w8a8) on a random 2-layer model: a bar for the wiring, not for the quantization (a wrong input
# order or layout gives cosines near 0); the tiny model's own figure: docs/perf/2026-12-02-rknn-draft.md.
INT8_MIN_COSINE_MEAN = 0.95


def load_tool(name: str):
    """A tool module by its file name (tools/{bench,convert,probes}/NAME.py)."""
    return importlib.import_module(TOOL_MODULES[name])


@pytest.mark.rknn
@pytest.mark.parametrize("dtype,hybrid", [("fp16", "none"), ("int8", "none"), ("int8", "gemm")])
def test_tiny_qwen2_graph_converts_and_simulates(tmp_path, dtype, hybrid):
    rg, exporter, converter = load_tool("random_gguf"), load_tool("export_draft_onnx"), load_tool("convert_draft_rknn")
    Q = rg.Q
    spec = rg.Spec("tiny-qwen2", "qwen2", 2, 256, 512, 4, 2, 1000, 1e6, 1e-6,
                   Q.Q5_0, Q.Q8_0, Q.Q4_K, Q.Q6_K, Q.Q4_K, Q.Q6_K, True)
    gguf_path = rg.write_model(spec, tmp_path / "tiny-qwen2.gguf", seed=3)
    onnx_path = exporter.export(gguf_path, tmp_path / "tiny.onnx", chunk=4, n_cache=48)
    report = converter.convert(onnx_path, tmp_path / "tiny.rknn", dtype=dtype, hybrid=hybrid)
    assert (tmp_path / "tiny.rknn").stat().st_size > 0
    assert report["dtype"] == dtype and report["rows"] > 0
    if dtype == "fp16" or hybrid == "gemm":     # gemm: int8 weights, fp16 activations (measured min 0.9996)
        assert report["cosine_min"] >= converter.MIN_COSINE, report
        assert report["argmax_agree"] == 1.0, report
    else:
        assert report["calibration_samples"] > 0
        assert report["cosine_mean"] >= INT8_MIN_COSINE_MEAN, report


@pytest.mark.rknn
def test_default_cache_fits_the_compilers_registers(tmp_path):
    """Past 2048 attended positions (cache slots + chunk) the rk3588 compiler reports register fields that
    overflow (at head_dim 64; not at 32); the exporter's default stays within, and one chunk more does not."""
    rg, exporter, converter = load_tool("random_gguf"), load_tool("export_draft_onnx"), load_tool("convert_draft_rknn")
    Q = rg.Q
    spec = rg.Spec("tiny-qwen2", "qwen2", 2, 256, 512, 4, 2, 1000, 1e6, 1e-6,   # head_dim 64, as the 0.5B
                   Q.Q5_0, Q.Q8_0, Q.Q4_K, Q.Q6_K, Q.Q4_K, Q.Q6_K, True)
    gguf_path = rg.write_model(spec, tmp_path / "tiny.gguf", seed=3)
    errors = {}
    for n_cache in (exporter.DEFAULT_N_CACHE, exporter.DEFAULT_N_CACHE + exporter.DEFAULT_CHUNK):
        onnx_path = exporter.export(gguf_path, tmp_path / f"tiny{n_cache}.onnx", n_cache=n_cache)
        errors[n_cache] = converter.convert(onnx_path, tmp_path / f"tiny{n_cache}.rknn", dtype="fp16")["regtask_errors"]
    assert errors[exporter.DEFAULT_N_CACHE] == 0 and errors[exporter.DEFAULT_N_CACHE + exporter.DEFAULT_CHUNK] > 0, errors
