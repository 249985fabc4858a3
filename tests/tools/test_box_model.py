"""tools/bench/box_model.py: its A76 roofline is bench_arm's (it reproduces the figures the arm-kernels doc
published), and the speculative arithmetic behaves at its limits."""

from __future__ import annotations

import importlib

import pytest

from tools import TOOL_MODULES

box = importlib.import_module(TOOL_MODULES["box_model"])


@pytest.fixture(scope="module")
def targets(qwen15_path):
    from tools.bench.bench_arm import MODELS, model_matrices
    mats = model_matrices(MODELS["1.5b"])
    hp = box.gguf_hparams(MODELS["1.5b"])
    return {p: box.Target(mats, hp, p, 22.0, context=0) for p in ("q8x2", "q8")}


def test_reproduces_the_arm_kernels_doc(targets):
    for prec, want in box.DOC_PREDICTIONS.items():
        tg = targets[prec]
        assert 1 / tg.seconds(1) == pytest.approx(want["decode_tok_s"], abs=0.05), prec
        for k in (4, 8):
            assert tg.seconds(k) / tg.seconds(1) == pytest.approx(want[f"verify_cost_k{k}"], abs=0.02), (prec, k)


def test_kernel_cost_routes_as_the_plan():
    assert box.kernel_cost("Q4_K", 1) == 46.03                        # row-lane, one record
    assert box.kernel_cost("Q4_K", 2) == pytest.approx(29.1 + 2 * 22.1)   # reducing, one decode
    assert box.kernel_cost("Q6_K", 9) == pytest.approx(2 * 50.6 + 9 * 26.6)   # two tiles of <= 8


def test_acceptance_round_trip():
    for alpha in (0.3, 0.6, 0.81, 0.95):
        for k in (1, 3, 7):
            assert box.alpha_from(box.expected_tokens(alpha, k), k) == pytest.approx(alpha, abs=1e-6)


def test_speculation_limits(targets):
    tg = targets["q8"]
    t1 = tg.seconds(1)
    # every draft accepted and free: k + 1 tokens per forward of k + 1
    free = box.best_k(tg, 0.999999, 0.0, "serial")
    assert free["speedup"] == pytest.approx(max((k + 1) * t1 / tg.seconds(k + 1) for k in range(box.K_MAX + 1)), rel=1e-4)
    # nothing accepted: drafting only costs, the best is not to draft
    assert box.best_k(tg, 0.0, 0.01, "deferred")["k"] == 0
    for k in (1, 4):
        serial = box.block_seconds(tg, k, 0.02, "serial", 0.8)
        deferred = box.block_seconds(tg, k, 0.02, "deferred", 0.8)
        shared = box.block_seconds(tg, k, 0.02, "shared", 0.8, draft_bytes=5e8)
        assert deferred < serial and shared >= deferred
