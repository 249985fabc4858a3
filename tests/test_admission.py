"""Admission control: EMA update, refusal up front with Retry-After, missed counted."""

from __future__ import annotations

import pytest

from gateway.serve.admission import BIAS_HALF_LIFE_S, EMA_ALPHA, KIND_PROBE_S, STALE_S, Admission


def test_ema_alpha_02():
    a = Admission(prefill_ms_per_tok=1.0, decode_ms_per_tok=10.0)
    a.observe_prefill(100, 300.0)             # 3 ms/token measured
    assert a.prefill_ms_per_tok == pytest.approx(1.0 + EMA_ALPHA * (3.0 - 1.0))
    a.observe_decode(10, 50.0)
    assert a.decode_ms_per_tok == pytest.approx(10.0 + 0.2 * (5.0 - 10.0))
    a.observe_decode(0, 50.0)                 # nothing measured: unchanged
    assert a.decode_ms_per_tok == pytest.approx(9.0)


def test_refuse_what_cannot_fit_and_count():
    a = Admission(prefill_ms_per_tok=2.0, decode_ms_per_tok=20.0)
    d = a.decide(prompt_tokens=100, decode_tokens=40, budget_ms=1500)     # 200 + 800 = 1000 ms
    assert d.admitted and d.estimate_ms == pytest.approx(1000)
    d = a.decide(prompt_tokens=100, decode_tokens=40, budget_ms=1500, queue_wait_ms=900)
    assert not d.admitted and d.estimate_ms == pytest.approx(1900) and d.retry_after_s >= 1
    a.finished(late=True)
    a.finished(late=False)
    st = a.stats()
    assert (st["admitted"], st["refused"], st["missed"], st["on_time"]) == (1, 1, 1, 1)


def test_seed_must_be_positive():
    with pytest.raises(ValueError):
        Admission(0, 1)


def test_stale_figures_on_an_idle_engine_admit_a_probe():
    """A burst of slowness must not refuse every later job: nothing would run to measure the recovery."""
    now = [0.0]
    a = Admission(prefill_ms_per_tok=2.0, decode_ms_per_tok=20.0, clock=lambda: now[0])
    a.observe_decode(10, 1000.0)                     # a slow moment: 100 ms/token measured
    ask = dict(prompt_tokens=100, decode_tokens=40, budget_ms=1500)
    assert not a.decide(**ask, idle=True).admitted   # fresh figures refuse
    now[0] += STALE_S
    assert not a.decide(**ask, idle=False).admitted  # stale, but the engine is busy: still refused
    d = a.decide(**ask, idle=True)
    assert d.admitted and d.estimate_ms > 1500 and a.stats()["probes"] == 1
    a.observe_decode(10, 200.0)                      # the probe's own timing replaces the stale figure
    assert a.decode_ms_per_tok == pytest.approx(20.0) and a.decide(**ask, idle=True).admitted
    a.observe_decode(10, 1000.0)                     # later timings are averaged again
    assert a.decode_ms_per_tok == pytest.approx(20.0 + EMA_ALPHA * (100.0 - 20.0))
    assert not a.decide(**ask, idle=True).admitted   # fresh figures refuse


def test_outcomes_correct_a_cost_model_that_overestimates():
    """Jobs that finish well inside what the model said make later estimates smaller, per kind of job;
    jobs slower than the model make them larger. The uncorrected figure is kept for the feedback."""
    now = [0.0]
    a = Admission(prefill_ms_per_tok=2.0, decode_ms_per_tok=20.0, clock=lambda: now[0])
    ask = dict(prompt_tokens=500, decode_tokens=30, budget_ms=1500)    # model: 1000 + 600 = 1600 ms
    d = a.decide(**ask, kind="chat")
    assert not d.admitted and d.model_ms == pytest.approx(1600) and d.estimate_ms == pytest.approx(1600)
    a.observe_outcome("chat", 1600, 800)          # one outcome moves the ratio from 1 by EMA_ALPHA only
    assert a.bias("chat") == pytest.approx(1.0 + EMA_ALPHA * (0.5 - 1.0))
    for _ in range(30):
        a.observe_outcome("chat", 1600, 800)      # each took half the modelled time
    assert a.bias("chat") == pytest.approx(0.5, abs=1e-3)
    d = a.decide(**ask, kind="chat")
    assert d.admitted and d.estimate_ms == pytest.approx(800, rel=1e-3) and d.model_ms == pytest.approx(1600)
    assert not a.decide(**ask, kind="explain").admitted     # another kind keeps its own record
    for _ in range(30):
        a.observe_outcome("chat", 1600, 3200)     # now twice as slow: refused again
    assert a.bias("chat") > 1.95 and not a.decide(**ask, kind="chat").admitted
    a.observe_outcome("chat", 0, 3200)             # nothing modelled: ignored
    for _ in range(60):
        a.observe_outcome("explain", 10, 1e9)      # a wild outcome is clamped
    assert a.bias("explain") == pytest.approx(4.0, abs=1e-3)
    assert a.stats()["bias"]["explain"] == pytest.approx(4.0, abs=1e-3)


def test_an_old_correction_fades_so_a_refused_kind_is_not_refused_for_good():
    """A refused kind gets no new outcomes: its correction fades back to 1 with its age."""
    now = [0.0]
    a = Admission(prefill_ms_per_tok=2.0, decode_ms_per_tok=20.0, clock=lambda: now[0])
    ask = dict(prompt_tokens=100, decode_tokens=40, budget_ms=1500, kind="explain")   # model: 1000 ms
    for _ in range(40):
        a.observe_outcome("explain", 1000, 3000)
    assert a.bias("explain") == pytest.approx(3.0, abs=1e-3) and not a.decide(**ask).admitted
    now[0] += BIAS_HALF_LIFE_S
    assert a.bias("explain") == pytest.approx(2.0, abs=1e-3)
    now[0] += 3 * BIAS_HALF_LIFE_S
    assert a.bias("explain") == pytest.approx(1.125, abs=1e-3) and a.decide(**ask).admitted
    a.observe_outcome("explain", 1000, 1000)       # a new outcome starts from what was left
    assert a.bias("explain") == pytest.approx(1.125 + EMA_ALPHA * (1.0 - 1.125), abs=1e-3)


def test_a_kind_refused_for_long_gets_a_probe_that_corrects_its_estimate():
    """A kind refused on fresh figures (a stream read without pause keeps them fresh) gets no outcome to
    correct its estimate: after KIND_PROBE_S with none admitted, one is admitted on an idle queue, and its
    outcome lets the kind's later jobs in. Other kinds and busy queues are not probed."""
    now = [0.0]
    a = Admission(prefill_ms_per_tok=2.0, decode_ms_per_tok=20.0, clock=lambda: now[0])
    ask = dict(prompt_tokens=500, decode_tokens=30, budget_ms=1500, kind="chat")    # model: 1600 ms
    assert a.decide(prompt_tokens=10, decode_tokens=1, budget_ms=1500, kind="explain").admitted
    while now[0] < KIND_PROBE_S - 1:
        now[0] += 1.0
        a.observe_prefill(32, 64.0)                  # the stream's reading: the figures stay fresh
        assert not a.decide(**ask, idle=True).admitted
    now[0] = KIND_PROBE_S
    a.observe_prefill(32, 64.0)
    assert not a.decide(**ask, idle=False).admitted   # a busy queue: no probe
    d = a.decide(**ask, idle=True)
    assert d.admitted and d.estimate_ms == pytest.approx(1600) and a.stats()["probes"] == 1
    assert a.prefill_ms_per_tok == pytest.approx(2.0)  # fresh figures are kept (no reseed)
    assert not a.decide(**ask, idle=True).admitted     # one probe, not a door left open
    a.observe_outcome("chat", d.model_ms, 1000.0)      # the model overestimated this kind
    assert a.decide(**ask, idle=True).admitted and a.stats()["probes"] == 1
    now[0] += KIND_PROBE_S
    assert not a.decide(prompt_tokens=500, decode_tokens=30, budget_ms=100, kind="explain", idle=False).admitted
