"""The draft-model drafter: keeps the job's K/V across blocks and rolls back exactly past what was
rejected (proposals equal a fresh drafter's); the rknn backend falls back with one log line."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
import pytest

from tools import TOOL_MODULES

from gateway.llm.drafters.model import ModelDrafter, rknn_available
from gateway.llm.sampling import SamplingParams as Sampling
from gateway.settings import BARE_ENGINE


def load_tool(name: str):
    """A tool module by its file name (tools/{bench,convert,probes}/NAME.py)."""
    return importlib.import_module(TOOL_MODULES[name])


@pytest.fixture(scope="module")
def smol_onnx(smollm_path, artifacts_dir) -> Path:
    return load_tool("export_draft_onnx").ensure_exported(smollm_path, artifacts_dir / "smollm2.draft.onnx",
                                                          chunk=16, n_cache=1024)


@pytest.mark.parametrize("backend", ["native", "onnx"])
def test_incremental_proposals_equal_fresh_ones(backend, smollm_path, smol_onnx):
    def fresh():
        return ModelDrafter.create(backend, draft_model=str(smollm_path), draft_onnx=str(smol_onnx),
                                   n_ring=64, n_threads=2, n_scratch=96)
    kept = fresh()
    prompt = list(range(300, 340))
    kept.begin_job(prompt, Sampling(), None)
    first, q = kept.propose(prompt, 4)
    assert len(first) == 4 and q is None
    # verification kept 2 drafts and emitted a different third token: the drafter must roll back
    ctx = prompt + first[:2] + [(first[2] + 1) % 1000 + 5]
    again, _ = kept.propose(ctx, 3)
    ref = fresh()
    ref.begin_job(prompt, Sampling(), None)
    assert again == ref.propose(ctx, 3)[0]
    # all accepted plus a bonus: continues from its cache
    ctx2 = ctx + again + [again[-1]]
    assert kept.propose(ctx2, 2)[0] == ref.propose(ctx2, 2)[0]
    kept.end_job()
    assert kept.engine.scratch_len == 0


def test_sampled_proposals_come_with_their_q(smollm_path, smol_onnx):
    d = ModelDrafter.create("native", draft_model=str(smollm_path), n_ring=64, n_threads=2, n_scratch=96)
    assert d.engine.act_precision == "q8"   # the native draft's one-term activations (DRAFT_ACT_PRECISION)
    d.begin_job([1, 2, 3], Sampling(temperature=0.8, top_k=5), seed=1)
    toks, q = d.propose([300, 301, 302], 3)
    assert q.shape == (3, d.engine.n_vocab)
    assert np.allclose(q.sum(-1), 1.0) and all(q[i, t] > 0 for i, t in enumerate(toks))
    assert all((row > 0).sum() <= 5 for row in q)


def test_deferred_only_where_draft_and_target_use_different_processors(smollm_path):
    from gateway.llm.drafters import deferred_default, make_drafter
    from gateway.llm.drafters.deferred import DeferredDrafter
    assert deferred_default("model", "rknn", "cpu") and deferred_default("model", "native", "cuda")
    assert not deferred_default("model", "native", "cpu") and not deferred_default("model", "onnx", "cpu")
    assert not deferred_default("ngram", None, "cuda")
    serial = make_drafter("model:native", draft_model=str(smollm_path), n_threads=1, n_scratch=32)
    assert not isinstance(serial, DeferredDrafter)
    forced = make_drafter("model:native", draft_model=str(smollm_path), deferred=True, n_threads=1, n_scratch=32)
    assert isinstance(forced, DeferredDrafter)
    forced.close()


def test_native_draft_precision_can_be_chosen(smollm_path):
    from gateway.llm.drafters import make_drafter
    d = make_drafter("model:native", draft_model=str(smollm_path), deferred=False, n_threads=1, n_scratch=32,
                     draft_precision="q8x2")
    assert d.engine.act_precision == "q8x2"
    with pytest.raises(ValueError, match="act_precision"):
        make_drafter("model:native", draft_model=str(smollm_path), deferred=False, n_threads=1, draft_precision="int4")


@pytest.mark.skipif(rknn_available()[0], reason="this machine has an NPU: nothing to fall back from")
def test_rknn_falls_back_with_one_log_line(smollm_path, smol_onnx, caplog):
    with caplog.at_level(logging.WARNING, logger="gateway.llm.drafters.model"):
        d = ModelDrafter.create("rknn", draft_model=str(smollm_path), draft_onnx=str(smol_onnx), n_ring=64, n_threads=2)
    assert d.backend == "onnx"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "rknn unavailable" in lines[0] and "falling back to onnx" in lines[0]


def test_missing_graph_is_named(smollm_path, tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.onnx"):
        ModelDrafter.create("onnx", draft_model=str(smollm_path), draft_onnx=str(tmp_path / "nothing.onnx"))


def test_draft_must_share_the_targets_tokenizer(smollm_path, qwen05_path):
    from gateway.llm.drafters import make_drafter
    from gateway.llm.engine import Engine
    target = Engine(str(smollm_path), n_sink=4, n_ring=32, n_scratch=32, n_threads=1, **BARE_ENGINE.model_dump())
    with pytest.raises(ValueError, match="do not share a tokenizer"):
        make_drafter("model:native", target, draft_model=str(qwen05_path), deferred=False)
