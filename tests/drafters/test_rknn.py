"""The NPU drafter in the appliance: `auto` names the NPU draft among its timed candidates only where it
can run, `model:rknn` resolves to what can run (and says why), falls back as configured, and the rknn
runtime path runs end to end against a fake RKNNLite of the rknn-toolkit-lite2 API (onnxruntime on the
same graph inside), whose proposals equal the onnx backend's."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

from gateway.llm.drafters import make_drafter, resolve_draft_spec
from gateway.llm.drafters import model as draft_model_mod
from gateway.llm.drafters.deferred import DeferredDrafter
from gateway.llm.drafters.model import ModelDrafter
from gateway.llm.sampling import SamplingParams as Sampling
from gateway.settings import Settings
from tools import TOOL_MODULES


class FakeRKNNLite:
    """rknnlite.api.RKNNLite as the box's rknn_runner calls it: load_rknn, init_runtime(core_mask), inference
    (inputs in the graph's order, data_format) -> a list of outputs. Computes with onnxruntime on the ONNX
    graph the .rknn file names (the converter's input), so its outputs are the graph's own."""
    NPU_CORE_AUTO = 0
    calls: list[str] = []

    def load_rknn(self, path: str) -> int:
        self.calls.append("load_rknn")
        self.onnx = Path(Path(path).read_text().strip())
        return 0 if self.onnx.is_file() else -1

    def init_runtime(self, core_mask: int = 0) -> int:
        import onnxruntime as ort
        assert core_mask == self.NPU_CORE_AUTO
        self.calls.append("init_runtime")
        self.sess = ort.InferenceSession(str(self.onnx), providers=["CPUExecutionProvider"])
        return 0

    def inference(self, inputs: list, data_format: str = "nhwc") -> list:
        from gateway.llm.drafters.onnx_engine import INPUT_ORDER
        assert data_format == "nchw" and len(inputs) == len(INPUT_ORDER)
        self.calls.append("inference")
        return self.sess.run(["logits", "k_new", "v_new"], dict(zip(INPUT_ORDER, inputs)))


@pytest.fixture
def no_npu(monkeypatch, tmp_path):
    monkeypatch.setattr(draft_model_mod, "RKNN_DEVICE_NODES", (str(tmp_path / "no-rknpu"),))


@pytest.fixture
def fake_npu(monkeypatch, tmp_path):
    """An NPU device node and rknnlite (the fake) present; returns the node."""
    node = tmp_path / "rknpu"
    node.touch()
    monkeypatch.setattr(draft_model_mod, "RKNN_DEVICE_NODES", (str(node),))
    api = types.ModuleType("rknnlite.api")
    api.RKNNLite = FakeRKNNLite
    pkg = types.ModuleType("rknnlite")
    pkg.api = api
    monkeypatch.setitem(sys.modules, "rknnlite", pkg)
    monkeypatch.setitem(sys.modules, "rknnlite.api", api)
    FakeRKNNLite.calls = []
    return node


def test_auto_without_an_npu_times_no_npu_draft_and_says_why(no_npu):
    spec, why = resolve_draft_spec("auto")   # make_drafter times the candidates (tests/drafters/test_choice.py)
    assert spec == "auto" and "model:rknn" not in why.partition(";")[0]
    assert "; no model:rknn (no NPU device node (" in why and "no-rknpu" in why


@pytest.mark.parametrize("fallback", ["ngram", "none"])
def test_rknn_without_an_npu_falls_back_as_configured(no_npu, fallback):
    spec, why = resolve_draft_spec("model:rknn", fallback)
    assert spec == fallback and why.startswith("model:rknn unavailable (no NPU device node") and why.endswith(fallback)


def test_rknn_without_the_runtime_is_a_clear_error(fake_npu, monkeypatch):
    monkeypatch.setitem(sys.modules, "rknnlite", None)   # import rknnlite.api -> ImportError
    monkeypatch.setitem(sys.modules, "rknnlite.api", None)
    with pytest.raises(ValueError, match=r"'model:rknn' cannot start: rknn-toolkit-lite2 \(rknnlite\) is not installed.*"
                                         r"engine.drafter_fallback"):
        resolve_draft_spec("model:rknn", "error")


def test_rknn_without_the_converted_graph_names_it(fake_npu, tmp_path):
    with pytest.raises(ValueError, match=r"no draft graph at .*x.draft.rknn \(tools/convert/convert_draft_rknn.py\)"):
        resolve_draft_spec("model:rknn", "error", draft_model=str(tmp_path / "x.gguf"))


def test_settings_take_the_npu_choices():
    s = Settings(engine={"drafter": "model:rknn", "drafter_fallback": "error"})
    assert (s.engine.drafter, s.engine.drafter_fallback) == ("model:rknn", "error")
    assert Settings(engine={"drafter": "auto"}).engine.drafter_fallback == "ngram"
    with pytest.raises(ValueError, match="drafter"):
        Settings(engine={"drafter": "rknn"})
    with pytest.raises(ValueError, match="drafter_fallback"):
        Settings(engine={"drafter": "auto", "drafter_fallback": "onnx"})


@pytest.fixture(scope="module")
def smol_graphs(smollm_path, tmp_path_factory) -> Path:
    """The draft's files as the box has them: GGUF, exported ONNX graph, converted .rknn side by side."""
    d = tmp_path_factory.mktemp("npu-draft")
    export = importlib.import_module(TOOL_MODULES["export_draft_onnx"])
    onnx = export.ensure_exported(smollm_path, d / "smol.draft.onnx", chunk=16, n_cache=1024)
    (d / "smol.gguf").symlink_to(smollm_path)
    (d / "smol.draft.rknn").write_text(str(onnx))   # the fake runtime's stand-in for a converted graph
    return d / "smol.gguf"


def test_auto_with_an_npu_drafts_through_rknnlite(fake_npu, smol_graphs):
    spec, why = resolve_draft_spec("auto", draft_model=str(smol_graphs))
    assert spec == "auto" and why.startswith("chosen by timing none, ngram, model:rknn at first start")
    npu = make_drafter("model:rknn", draft_model=str(smol_graphs), n_scratch=96)   # the NPU candidate
    assert isinstance(npu, DeferredDrafter)   # the NPU drafts while the CPU verifies
    cpu = ModelDrafter.create("onnx", draft_model=str(smol_graphs), n_scratch=96, n_threads=2)
    try:
        assert npu.inner.backend == "rknn"
        prompt = list(range(300, 340))
        for d in (npu, cpu):
            d.push_stream(list(range(100, 140)))
            d.begin_job(prompt, Sampling(), None)
        got, want = npu.propose(prompt, 4), cpu.propose(prompt, 4)
        assert got[0] == want[0] and len(got[0]) == 4
        assert FakeRKNNLite.calls[:2] == ["load_rknn", "init_runtime"] and "inference" in FakeRKNNLite.calls
    finally:
        npu.close()
        cpu.close()
