"""tools/bench_engine.py: the verify-cost ratio, on fake steps with a fake clock (no timing here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import bench_engine  # noqa: E402


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_verify_costs_interleave_the_sizes_and_take_medians(monkeypatch):
    clock, calls = FakeClock(), []
    monkeypatch.setattr(bench_engine.time, "perf_counter", clock.perf_counter)
    drift = iter([1.0] * 3 + [3.0] * 6 + [1.0] * 100)     # a slow stretch after the warm-up

    def step(k: int):
        def run():
            calls.append(k)
            clock.now += k * next(drift)
        return run

    out = bench_engine.verify_costs({1: step(1), 4: step(4), 8: step(8)}, reps=5)
    # One warm-up each, then rounds of 1, 4, 8: the slow stretch hits two whole rounds, all sizes alike.
    assert calls == [1, 4, 8] + [1, 4, 8] * 5
    assert out == {"verify_cost_k4": pytest.approx(4.0), "verify_cost_k8": pytest.approx(8.0)}


def test_verify_costs_need_the_one_token_step():
    with pytest.raises(ValueError, match="1-token step"):
        bench_engine.verify_costs({4: lambda: None}, reps=1)
