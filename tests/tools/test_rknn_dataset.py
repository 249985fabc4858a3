"""tools/convert/convert_draft_rknn.py without the toolkit: the int8 calibration set is the drafter's own graph
runs over Loghub lines in the appliance's layout, written as the list rknn-toolkit2 reads; and the
comparison of simulator logits with onnxruntime's tells a match from a mismatch."""

from __future__ import annotations

import importlib
import re

import numpy as np
import onnx
import pytest

from tools import TOOL_MODULES

converter = importlib.import_module(TOOL_MODULES["convert_draft_rknn"])
exporter = importlib.import_module(TOOL_MODULES["export_draft_onnx"])
INPUTS = ("tokens", "positions", "cache_positions", "mask", "k_cache", "v_cache")


@pytest.fixture(scope="module")
def smollm_graph(smollm_path, artifacts_dir):
    # its own graph, with room for the appliance's sink in SmolLM2's tokens (1,023 with the stats call's
    # `want`; the 1,024 slots of test_export_onnx.py's graph hold no ring beside it); the appliance's
    # drafts export DEFAULT_N_CACHE (2,032) slots for a Qwen sink of 943
    return exporter.ensure_exported(smollm_path, artifacts_dir / "smollm2.draft.c1536.onnx", chunk=16, n_cache=1536)


@pytest.fixture(scope="module")
def plan(smollm_path, loghub_dir):
    return converter.loghub_plan(smollm_path, loghub_dir, ("HDFS", "OpenSSH"), 2)


def test_plan_lays_out_lines_as_the_appliance_streams_them(smollm_path, plan):
    from gateway.llm.tokenizer import Tokenizer
    from gateway.serve.prompts import Prompts
    from gateway.serve.answer.call import TOOL_HELP
    sink, systems = plan
    assert sink == Prompts.for_model(smollm_path, "en", TOOL_HELP).sink_tokens
    tok = Tokenizer.from_gguf(smollm_path)
    assert [s for s, _, _ in systems] == ["HDFS", "OpenSSH"]
    for system, lines, job in systems:
        assert len(lines) == 2 and job
        for toks in lines:
            text = tok.decode(toks)
            assert re.fullmatch(rf"\d\d:\d\d:\d\d {system.lower()} \S.*\n", text), text
    hdfs_first = tok.decode(systems[0][1][0])
    assert "081109 203615 148 INFO dfs.DataNode$PacketResponder" in hdfs_first   # HDFS_2k.log's first line


def test_calibration_set_is_the_drafters_graph_runs(smollm_graph, plan, tmp_path):
    sink, systems = plan
    samples = converter.capture_samples(smollm_graph, sink, systems, tmp_path / "calib", stream_stride=3)
    kinds = [s["kind"] for s in samples]
    assert kinds.count("job") == 2 and kinds.count("draft") == 4 and kinds.count("stream") >= 4
    dataset = converter.write_dataset(samples, tmp_path / "dataset.txt")
    rows = dataset.read_text().splitlines()
    assert len(rows) == len(samples)
    graph = onnx.load(str(smollm_graph), load_external_data=False)
    want = {v.name: ([d.dim_value for d in v.type.tensor_type.shape.dim], v.type.tensor_type.elem_type)
            for v in graph.graph.input}
    stream_tokens = [t for _, lines, _ in systems for toks in lines for t in toks]
    for row, s in zip(rows, samples):
        paths = row.split(" ")
        assert [p.rsplit("/", 1)[1] for p in paths] == [f"{n}.npy" for n in INPUTS]   # the graph's input order
        arrays = {n: np.load(p) for n, p in zip(INPUTS, paths)}
        for name, arr in arrays.items():
            shape, elem = want[name]
            assert list(arr.shape) == shape, name
            assert arr.dtype == onnx.helper.tensor_dtype_to_np_dtype(elem), name
        ref = np.load(f"{s['dir']}/ref.npy")
        assert ref.shape == (s["rows"], 49152)
        valid = arrays["tokens"][:s["rows"]].tolist()
        if s["kind"] == "stream":           # real stream tokens, in order
            assert any(stream_tokens[i:i + len(valid)] == valid for i in range(len(stream_tokens)))
        if s["kind"] == "draft":
            assert s["rows"] == 1
        # the cache it sees is filled: the sink's K/V is not zeros
        assert np.abs(arrays["k_cache"][:, :, :len(sink)]).sum() > 0


def test_compare_tells_a_match_from_a_mismatch(tmp_path):
    rng = np.random.default_rng(0)
    samples = []
    for k, (kind, rows) in enumerate((("stream", 4), ("draft", 1))):
        d = tmp_path / f"{k:03d}"
        d.mkdir()
        np.save(d / "ref.npy", rng.normal(size=(rows, 50)).astype(np.float32))
        samples.append({"dir": str(d), "kind": kind, "rows": rows})
    refs = [np.load(f"{s['dir']}/ref.npy") for s in samples]
    padded = [np.concatenate([r, rng.normal(size=(4 - len(r), 50))]) for r in refs]   # padding rows are ignored
    same = converter.compare(samples, padded)
    assert same["rows"] == 5 and same["cosine_min"] == pytest.approx(1.0) and same["argmax_agree"] == 1.0
    assert same["by_kind"]["draft"]["rows"] == 1
    flipped = converter.compare(samples, [-p for p in padded])
    assert flipped["cosine_mean"] == pytest.approx(-1.0) and flipped["argmax_agree"] == 0.0


def test_gemm_only_config_keeps_the_weight_matmuls_int8():
    cfg = ("custom_quantize_layers: {}\nquantize_parameters:\n"
           "    k_cache:\n        dtype: float32\n"
           "    gemm_12:\n        dtype: int8\n"
           "    softmax_40:\n        dtype: int8\n"
           "    add_41:\n        dtype: int8\n"
           "    c_7:\n        dtype: int8\n"
           "    c_14_dup1:\n        dtype: int8\n"
           "    reciprocal_21#1_i0:\n        dtype: int8\n"
           "    token_embd.weight:\n        dtype: int8\n")
    out = converter.gemm_only_cfg(cfg, {"k_cache"})
    head = out.split("quantize_parameters:")[0]
    assert head == "custom_quantize_layers:\n    softmax_40: float16\n    add_41: float16\n"
    assert out.split("quantize_parameters:")[1] == cfg.split("quantize_parameters:")[1]
    assert "add_41" not in converter.gemm_only_cfg(cfg, {"k_cache", "add_41"}).split("quantize_parameters:")[0]
