"""The calibrated kernel plan (gateway/llm/kernel_plan.py): a plan for this CPU and build is loaded and
runs; a corrupt or foreign one is ignored with exactly one log line; calibration writes a plan that
loads, and runs at start only when allowed; and the engine's logits are the same bits under any plan."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from gateway import _native
from gateway.llm import kernel_plan
from gateway.llm.engine import Engine
from gateway.settings import BARE_ENGINE

Q4_K, Q6_K = 12, 14


@pytest.fixture(autouse=True)
def static_plan():
    kernel_plan.reset()
    yield
    kernel_plan.reset()


def plan_doc(choices: list[dict], **over) -> dict:
    doc = {"format": kernel_plan.FORMAT, "cpu_model": kernel_plan.cpu_model(), "build_id": kernel_plan.build_id(),
           "precision": "q8x2",
           "choices": choices}
    doc.update(over)
    return doc


def a_choice(type_id: int = Q4_K, K: int = 4864, n_rec: int = 2) -> dict:
    """A shape's last variant: not "static" wherever the ISA has more than one."""
    return {"type_id": type_id, "K": K, "n_rec": n_rec, "variant": _native.kernel_variants(type_id, K, n_rec)[-1]}


def write(tmp_path, doc) -> None:
    (tmp_path / kernel_plan.PLAN_FILE).write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")


def test_this_machines_plan_is_loaded(tmp_path, caplog):
    choice = a_choice()
    write(tmp_path, plan_doc([choice]))
    with caplog.at_level(logging.WARNING, logger="gateway.llm.kernel_plan"):
        assert kernel_plan.load(tmp_path) == "calibrated"
    assert not caplog.records
    assert _native.kernel_variant_table() == [(Q4_K, 4864, 2, choice["variant"])]
    assert kernel_plan.active() == {"plan": "calibrated", "path": str(tmp_path / kernel_plan.PLAN_FILE)}


def test_a_plan_timed_at_the_engines_precision_is_loaded(tmp_path):
    write(tmp_path, plan_doc([a_choice(n_rec=1)], precision="q8"))
    assert kernel_plan.load(tmp_path, "q8") == "calibrated"


def test_no_plan_file_is_the_static_plan(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="gateway.llm.kernel_plan"):
        assert kernel_plan.load(tmp_path) == "static"
    assert not caplog.records and _native.kernel_variant_table() == []


@pytest.mark.parametrize("content,reason", [
    ("{not json", "unreadable"),
    (b"\xff\xfe\x00garbage", "unreadable"),
    ("[1, 2]", "not a format-1 kernel plan"),
    ("CPU", "made for CPU 'Zen 9 (family 99)'"),
    ("BUILD", "made for build 'avx512-0000000000000000'"),
    ("VARIANT", "no variant 'warp_drive'"),
    ("MALFORMED", "choices are malformed"),
    ("PRECISION", "timed at activation precision 'q8x2', the engine runs 'q8'"),
])
def test_corrupt_or_foreign_plan_is_ignored_with_one_line(tmp_path, caplog, content, reason):
    path = tmp_path / kernel_plan.PLAN_FILE
    good = [a_choice()]
    if content == "CPU":
        write(tmp_path, plan_doc(good, cpu_model="Zen 9 (family 99)"))
    elif content == "BUILD":
        write(tmp_path, plan_doc(good, build_id="avx512-0000000000000000"))
    elif content == "VARIANT":  # the first choice is fine and must not stay in force
        write(tmp_path, plan_doc(good + [{"type_id": Q6_K, "K": 4864, "n_rec": 2, "variant": "warp_drive"}]))
    elif content == "PRECISION":  # record counts of another precision: loading asks for q8 below
        write(tmp_path, plan_doc(good, precision="q8x2"))
    elif content == "MALFORMED":
        write(tmp_path, plan_doc([{"type_id": "Q4_K", "K": 4864, "n_rec": 2, "variant": "static"}]))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        write(tmp_path, content)
    with caplog.at_level(logging.DEBUG, logger="gateway.llm.kernel_plan"):
        assert kernel_plan.load(tmp_path, "q8" if content == "PRECISION" else None) == "static"
    assert len(caplog.records) == 1, [r.getMessage() for r in caplog.records]
    msg = caplog.records[0].getMessage()
    assert caplog.records[0].levelno == logging.WARNING and "ignored" in msg and reason in msg, msg
    assert _native.kernel_variant_table() == [] and kernel_plan.active()["plan"] == "static"
    assert path.exists()  # the user's file is left as it is


def test_calibration_writes_a_plan_that_loads(tmp_path, qwen05_path):
    doc = kernel_plan.calibrate(qwen05_path, n_threads=2, budget_s=3.0)
    assert _native.kernel_variant_table() == []  # calibrating leaves the static plan running
    assert doc["cpu_model"] == kernel_plan.cpu_model() and doc["build_id"] == kernel_plan.build_id()
    assert doc["seconds"] < 3.0 + 2.0 and doc["choices"], doc
    assert {(c["type_id"], c["K"]) for c in doc["choices"]} <= {(Q4_K, 4864), (Q6_K, 4864)}
    for c in doc["choices"]:
        names = _native.kernel_variants(c["type_id"], c["K"], c["n_rec"])
        assert c["variant"] in names and set(c["ms"]) <= set(names) and "static" in c["ms"]
        if c["variant"] != "static":  # kept only after beating static head to head
            assert c["confirm_ms"][c["variant"]] < c["confirm_ms"]["static"] * (1 - kernel_plan.MIN_GAIN)
    kernel_plan.save(doc, tmp_path / "cache")
    assert kernel_plan.load(tmp_path / "cache") == "calibrated"
    assert len(_native.kernel_variant_table()) == len(doc["choices"])


def test_start_calibrates_only_when_allowed(tmp_path, qwen05_path, monkeypatch):
    calls = []
    real = kernel_plan.calibrate
    monkeypatch.setattr(kernel_plan, "calibrate", lambda *a, **k: calls.append(1) or real(*a, **{**k, "budget_s": 1.0}))
    assert kernel_plan.prepare(qwen05_path, 1, tmp_path, "auto") == "static"  # under pytest: not unless asked
    assert kernel_plan.prepare(qwen05_path, 1, tmp_path, "off") == "static"
    assert calls == [] and not (tmp_path / kernel_plan.PLAN_FILE).exists()
    assert kernel_plan.prepare(qwen05_path, 1, tmp_path, "on") == "calibrated"
    assert calls == [1]
    assert kernel_plan.prepare(qwen05_path, 1, tmp_path, "on") == "calibrated"  # loaded, not timed again
    assert calls == [1]
    with pytest.raises(ValueError, match="auto, on or off"):
        kernel_plan.prepare(qwen05_path, 1, tmp_path, "sometimes")


def test_engine_logits_are_the_same_bits_under_any_plan(qwen05_path):
    """Every engine shape of the 0.5B (Q4_K/Q6_K, K 4864) forced to its i-th variant, for each i: a
    prefill of 9 tokens (18 records), then single tokens (2 records), against the static plan."""
    eng = Engine(qwen05_path, n_sink=4, n_ring=64, n_scratch=64, n_threads=2, **BARE_ENGINE.model_dump())
    prompt = [151644, 872, 198, 9707, 11, 1879, 0, 2585, 525]

    def run() -> np.ndarray:
        out = [eng.forward_scratch(prompt, all_logits=True)]
        for tok in (13, 576, 1052):
            out.append(eng.forward_scratch([tok])[None, :])
        eng.rollback()
        return np.concatenate(out)

    ref = run()
    shapes = [(t, 4864, r) for t in (Q4_K, Q6_K) for r in (2, 18)]
    n_max = max(len(_native.kernel_variants(*s)) for s in shapes)
    for i in range(1, n_max):
        for s in shapes:
            names = _native.kernel_variants(*s)
            _native.set_kernel_variant(*s, names[min(i, len(names) - 1)])
        np.testing.assert_array_equal(run().view(np.uint32), ref.view(np.uint32), err_msg=f"variant set {i}")


def test_doctor_names_the_plan(tmp_path, capsys):
    from gateway.cli import main

    def doctor() -> dict:
        assert main(["doctor", "--data-dir", str(tmp_path), "--json"]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    out = doctor()
    assert out["kernel_plan"] == "static" and out["cpu_model"] == kernel_plan.cpu_model()
    assert out["build_id"] == kernel_plan.build_id() and out["simd"] == _native.quant_simd_name()
    (tmp_path / "cache").mkdir()
    from gateway.llm.engine import resolve_act_precision
    from gateway.settings import EngineSettings
    # a plan timed at the precision the appliance runs ("auto": q8 on CPUs); another precision's is ignored
    write(tmp_path / "cache", plan_doc([a_choice()], precision=resolve_act_precision(EngineSettings().act_precision)))
    assert doctor()["kernel_plan"] == "calibrated"
