"""tools/bench/bench_engine.py: the verify-cost ratio, on fake steps with a fake clock (no timing here)."""

from __future__ import annotations


import pytest

from tools.bench import bench_engine


class FakeClock:
    """Passed to verify_costs (never patched into the time module, which other tests' threads share)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_verify_costs_interleave_the_sizes_and_take_medians():
    clock, calls = FakeClock(), []
    drift = iter([1.0] * 3 + [3.0] * 6 + [1.0] * 100)     # a slow stretch after the warm-up

    def step(k: int):
        def run():
            calls.append(k)
            clock.now += k * next(drift)
        return run

    out = bench_engine.verify_costs({1: step(1), 4: step(4), 8: step(8)}, reps=5, clock=clock)
    # One warm-up each, then rounds of 1, 4, 8: the slow stretch hits two whole rounds, all sizes alike.
    assert calls == [1, 4, 8] + [1, 4, 8] * 5
    assert out == {"verify_cost_k4": pytest.approx(4.0), "verify_cost_k8": pytest.approx(8.0),
                   "verify_ms_k1": pytest.approx(1e3), "verify_ms_k4": pytest.approx(4e3), "verify_ms_k8": pytest.approx(8e3)}


def test_verify_costs_need_the_one_token_step():
    with pytest.raises(ValueError, match="1-token step"):
        bench_engine.verify_costs({4: lambda: None}, reps=1)


def test_verify_costs_of_two_engines_share_the_rounds():
    clock, calls = FakeClock(), []

    def step(name: str, cost: float):
        def run():
            calls.append(name)
            clock.now += cost
        return run

    steps = {("", 1): step("a1", 2.0), ("", 8): step("a8", 6.0), ("_q8", 1): step("b1", 1.0), ("_q8", 8): step("b8", 1.5)}
    out = bench_engine.verify_costs(steps, reps=3, clock=clock)
    assert calls == ["a1", "a8", "b1", "b8"] * 4
    assert out == {"verify_cost_k8": pytest.approx(3.0), "verify_cost_k8_q8": pytest.approx(1.5),
                   "verify_ms_k1": pytest.approx(2e3), "verify_ms_k8": pytest.approx(6e3),
                   "verify_ms_k1_q8": pytest.approx(1e3), "verify_ms_k8_q8": pytest.approx(1.5e3)}
    with pytest.raises(ValueError, match="1-token step of _q8"):
        bench_engine.verify_costs({1: lambda: None, ("_q8", 4): lambda: None}, reps=1)


def test_decode_rounds_hold_each_round_to_its_own_bandwidth():
    clock, bws = FakeClock(), iter([50.0, 25.0, 50.0, 40.0])
    # Tokens of 1e9 bytes; the host halves its memory speed in round 2: decode and bandwidth alike.
    per_token = iter([0.04] * 32 + [0.08] * 32 + [0.04] * 32 + [0.05] * 32)

    def step():
        clock.now += next(per_token)

    rounds = [bench_engine.decode_round(step, 32, threads=2, clock=clock, bandwidth=lambda: next(bws))
              for _ in range(4)]
    assert [r[1] for r in rounds] == [32] * 4
    assert [r[0] for r in rounds] == pytest.approx([1.28, 2.56, 1.28, 1.6])
    out = bench_engine.roofline(rounds, bytes_per_token=10**9)
    assert out["decode_tok_s"] == pytest.approx(128 / 6.72)
    assert out["read_bandwidth_gbs"] == pytest.approx(45.0)
    # 25 tok/s of 1e9 B against 50 GB/s, 12.5 against 25, 20 against 40: 0.5 in every round.
    assert out["roofline_fraction"] == pytest.approx(0.5)


class FakeSession:
    """An engine session answering measure()'s requests from a shared log, with made-up timings."""

    def __init__(self, name: str, log: list, speed: float):
        self.name, self.log, self.speed = name, log, speed

    def call(self, cmd: str, **kw):
        self.log.append((self.name, cmd, kw.get("n")))
        if cmd == "prefill":
            return kw["n"] / (100.0 * self.speed)
        if cmd == "decode":
            return [kw["n"] / (40.0 * self.speed), kw["n"], 50.0]
        if cmd == "verify":
            return {"verify_cost_k4": 1.5}
        return {"peak_rss_mb": 1000.0 / self.speed}


def test_measure_alternates_the_engines_round_by_round():
    log: list = []
    res = bench_engine.measure({"ours": FakeSession("ours", log, 2.0), "llama": FakeSession("llama", log, 1.0)},
                               quick=False)
    timed = [entry for entry in log if entry[1] in ("prefill", "decode")]
    # every timed request goes to both engines in turn, never twice in a row to one engine
    assert [e[0] for e in timed] == ["ours", "llama"] * (len(timed) // 2)
    assert [e for e in timed if e[0] == "ours"] == (
        [("ours", "prefill", n) for n in bench_engine.PREFILL for _ in range(3)]
        + [("ours", "decode", bench_engine.DECODE // bench_engine.DECODE_ROUNDS)] * bench_engine.DECODE_ROUNDS)
    assert res["ours"]["prefill512_tok_s"] == pytest.approx(200.0)
    assert res["llama"]["prefill32_tok_s"] == pytest.approx(100.0)
    assert len(res["llama"]["decode_rounds"]) == bench_engine.DECODE_ROUNDS
    assert res["ours"]["verify_cost_k4"] == 1.5 and res["llama"]["peak_rss_mb"] == 1000.0


def test_serve_answers_until_quit():
    class Session:
        def prefill(self, n):
            return n * 0.5

    out: list = []
    bench_engine.serve(Session(), iter(['{"cmd": "prefill", "n": 4}\n', '{"cmd": "quit"}\n',
                                        '{"cmd": "prefill", "n": 9}\n']), out.append)
    assert out == [{"ready": True}, {"result": 2.0}]


CPUINFO_ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx avx2 fma bmi2

processor\t: 1
model name\t: something else
flags\t\t: avx512f
"""


def test_cpu_identity_reads_the_first_processor():
    assert bench_engine.cpu_identity(CPUINFO_ZEN3) == {
        "model_name": "AMD EPYC", "family": "25", "model": "1", "simd_flags": ["avx2"]}
    zen5 = CPUINFO_ZEN3.replace("avx2 fma", "avx2 avx512f avx512_vnni avx_vnni fma")
    assert bench_engine.cpu_identity(zen5)["simd_flags"] == ["avx2", "avx512f", "avx512_vnni", "avx_vnni"]


def test_steal_share_comes_from_the_cpu_line():
    before = bench_engine.cpu_ticks("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    after = bench_engine.cpu_ticks("cpu  200 0 100 900 10 0 0 140 0 0\n")
    assert before == (1000, 40) and after == (1350, 140)
    assert bench_engine.steal_pct(before, after) == pytest.approx(100 * 100 / 350)
    assert bench_engine.steal_pct(after, after) == 0.0
    with pytest.raises(ValueError, match="no 'cpu' line"):
        bench_engine.cpu_ticks("intr 1 2 3\n")


def test_worker_cmd_carries_the_precision_asked(monkeypatch, tmp_path):
    """--act-precision reaches ours' workers; without it they run BARE_ENGINE's (the gate's) precision."""
    import json

    from gateway.settings import BARE_ENGINE

    def engine_of(cmd: list[str]) -> dict:
        return json.loads(cmd[cmd.index("--bare-engine") + 1])

    assert engine_of(bench_engine.worker_cmd("ours", "m", 2, tmp_path / "t.json", None)) == BARE_ENGINE.model_dump()
    monkeypatch.setattr(bench_engine, "ACT_PRECISION", "q8")
    got = engine_of(bench_engine.worker_cmd("ours", "m", 2, tmp_path / "t.json", None))
    assert got == {**BARE_ENGINE.model_dump(), "act_precision": "q8"} and BARE_ENGINE.act_precision == "q8x2"
