"""`linegate doctor` says which drafter runs and why: a configured one as it resolves; `auto` as the
cached timed choice with its figures, or that the next start times it (no file, or one for another CPU)."""

from __future__ import annotations

import json

import pytest

from gateway.llm.drafters import choice, choice_cache
from gateway.llm.drafters import model as draft_model_mod
from gateway.llm.engine import resolve_act_precision
from gateway.llm.models import resolve_model
from gateway.settings import EngineSettings


@pytest.fixture
def doctor(tmp_path, capsys, monkeypatch):
    from gateway.cli import main
    monkeypatch.setattr(draft_model_mod, "RKNN_DEVICE_NODES", (str(tmp_path / "no-rknpu"),))

    def run(drafter: str) -> tuple[str, dict]:
        monkeypatch.setenv("LINEGATE_ENGINE__DRAFTER", drafter)
        assert main(["doctor", "--data-dir", str(tmp_path), "--threads", "2", "--json"]) == 0
        out = capsys.readouterr().out
        return out, json.loads(out.strip().splitlines()[-1])["drafter"]
    return run


def cached(tmp_path, choice_name: str, **key_changes) -> dict:
    """A timed choice in the cache under the key this machine's next start would have."""
    specs, _ = choice.candidate_specs()
    key = choice_cache.choice_key(resolve_model(EngineSettings().model), 2,
                                  resolve_act_precision(EngineSettings().act_precision), specs)
    key.update(key_changes)
    figures = {"none": {"tok_s": 5.0, "runs": [5.0]}, "ngram": {"tok_s": 7.5, "runs": [7.5]}}
    doc = choice_cache.document(key, choice_name, choice.explain(choice_name, {"none": 5.0, "ngram": 7.5}, {}),
                                figures, {}, 12.0)
    choice_cache.save(doc, tmp_path / "cache")
    return doc


def test_a_configured_drafter_is_named_as_it_resolves(doctor):
    out, d = doctor("ngram")
    assert "drafter: ngram -> ngram (configured)" in out and d == {"configured": "ngram", "spec": "ngram",
                                                                   "why": "configured"}


def test_auto_before_its_first_start_says_what_will_be_timed(doctor):
    out, d = doctor("auto")
    assert "drafter: auto, not timed yet: the first start times none, ngram" in out
    assert "no model:rknn: no NPU device node" in out and d["state"] == "untimed" and d["spec"] is None


def test_auto_prints_the_timed_choice_and_its_figures(doctor, tmp_path):
    doc = cached(tmp_path, "ngram")
    out, d = doctor("auto")
    assert "drafter: auto -> ngram (timed " in out and "ngram 7.50 tok/s (1.50x), none 5.00 tok/s (1.00x)" in out
    assert d["state"] == "cached" and d["spec"] == "ngram" and d["why"] == doc["why"]
    assert d["figures"]["ngram"]["tok_s"] == 7.5


def test_auto_with_a_choice_for_another_cpu_says_it_times_again(doctor, tmp_path):
    cached(tmp_path, "ngram", cpu_model="Another CPU")
    out, d = doctor("auto")
    assert "cached choice not reused (timed with cpu_model 'Another CPU'" in out and d["state"] == "stale"


@pytest.mark.models
def test_time_drafter_caches_a_choice_the_doctor_and_the_next_start_read(doctor, tmp_path, smollm_path,
                                                                        monkeypatch):
    """--time-drafter runs the first start's timing on the settings' target (SmolLM2 here; the 0.5B draft
    does not share its tokenizer, so it cannot start) under the key the doctor computes from the settings."""
    monkeypatch.setenv("LINEGATE_ENGINE__MODEL", str(smollm_path))
    from gateway.cli import main
    monkeypatch.setenv("LINEGATE_ENGINE__DRAFTER", "auto")
    assert main(["doctor", "--data-dir", str(tmp_path), "--threads", "2", "--time-drafter"]) == 0
    out, d = doctor("auto")
    assert d["state"] == "cached" and d["spec"] in ("none", "ngram") and f"drafter: auto -> {d['spec']} (timed" in out
    assert set(d["figures"]) == {"none", "ngram"} and "model:native: cannot start: ValueError" in d["why"]
