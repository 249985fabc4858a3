"""tools/convert_draft_rknn.py: the static draft graph converts for rk3588 and the toolkit's simulator
agrees with onnxruntime. Needs rknn-toolkit2 in its own venv (the tool creates it): `rknn` marker."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def load_tool(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod   # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.rknn
def test_tiny_qwen2_graph_converts_and_simulates(tmp_path):
    rg, exporter, converter = load_tool("random_gguf"), load_tool("export_draft_onnx"), load_tool("convert_draft_rknn")
    Q = rg.Q
    spec = rg.Spec("tiny-qwen2", "qwen2", 2, 256, 512, 4, 2, 1000, 1e6, 1e-6,
                   Q.Q5_0, Q.Q8_0, Q.Q4_K, Q.Q6_K, Q.Q4_K, Q.Q6_K, True)
    gguf_path = rg.write_model(spec, tmp_path / "tiny-qwen2.gguf", seed=3)
    onnx_path = exporter.export(gguf_path, tmp_path / "tiny.onnx", chunk=4, n_cache=48)
    report = converter.convert(onnx_path, tmp_path / "tiny.rknn")
    assert (tmp_path / "tiny.rknn").stat().st_size > 0
    assert report["cosine_min"] >= converter.MIN_COSINE, report
    assert report["argmax_agree"] == 1.0, report
