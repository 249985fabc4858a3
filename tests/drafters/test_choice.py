"""`drafter = "auto"` chooses by timing (gateway/llm/drafters/choice.py): with a fake target and fake
drafters whose costs advance a fake clock, the choice follows the timings, a candidate that cannot start,
fails or changes the greedy output is skipped with its reason, and the choice is cached and reused until
its key (CPU, build, target, threads, draft file) changes. No real timing: every figure is the fakes'."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from gateway.llm import speculative
from gateway.llm.drafters import choice, choice_cache, make_drafter, resolve_draft_spec
from gateway.llm.drafters import model as draft_model_mod
from gateway.llm.drafters.base import Drafter
from gateway.llm.drafters.choice import TargetOnly, choose_drafter, pick

V = 50
PROMPT = [1, 2, 3, 4, 5, 6, 7, 8]


def next_tok(t: int) -> int:
    """The fake target's greedy rule: the next token is a function of the last."""
    return (t * 7 + 3) % V


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeTarget:
    """A target whose forward costs step_ms + per_tok_ms x tokens on the fake clock. batch_variant: rows of
    a forward of more than one token argmax elsewhere (a kernel that is not batch-invariant)."""

    def __init__(self, clock: Clock, path: Path, *, step_ms: float = 10.0, per_tok_ms: float = 2.0,
                 n_threads: int = 2, batch_variant: bool = False, n_scratch: int = 512) -> None:
        self.clock, self.path, self.n_threads, self.n_scratch = clock, path, n_threads, n_scratch
        self.step_ms, self.per_tok_ms, self.batch_variant = step_ms, per_tok_ms, batch_variant
        self.act_precision = "q8x2"
        self.tokenizer = FakeTokenizer()
        self.scratch: list[int] = []
        self.forwards = 0

    @property
    def scratch_len(self) -> int:
        return len(self.scratch)

    def stats(self) -> dict:
        return {"n_threads": self.n_threads, "n_sink": 4, "n_ring": 64}

    def forward_scratch(self, tokens, all_logits: bool = False) -> np.ndarray:
        self.forwards += 1
        self.clock.now += (self.step_ms + self.per_tok_ms * len(tokens)) / 1e3
        self.scratch += [int(t) for t in tokens]
        rows = np.zeros((len(tokens), V), dtype=np.float32)
        for i, t in enumerate(tokens):
            rows[i, (next_tok(int(t)) + (1 if self.batch_variant and len(tokens) > 1 else 0)) % V] = 1.0
        return rows if all_logits else rows[-1]

    def rollback(self, n: int = 0) -> None:
        del self.scratch[n:]


class FakeDrafter(Drafter):
    """Drafts the target's own tokens (right) or wrong ones, at ms_per_token on the fake clock."""

    def __init__(self, clock: Clock, name: str, *, ms_per_token: float = 0.0, right: bool = True,
                 fail: bool = False) -> None:
        self.clock, self.name, self.ms, self.right, self.fail = clock, name, ms_per_token, right, fail
        self.closed = False

    def propose(self, context_tokens, k):
        if self.fail:
            raise RuntimeError("NPU lost")
        self.clock.now += self.ms * k / 1e3
        out, t = [], int(context_tokens[-1])
        for _ in range(k):
            t = next_tok(t) if self.right else (next_tok(t) + 1) % V
            out.append(t)
        return out, None

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fixed_draft_length(monkeypatch):
    """The loop adapts its draft length to real measured times; the fakes' costs are on the fake clock,
    so the length is held at its initial value: the runs depend on the fakes alone."""
    monkeypatch.setattr(speculative, "adapt_k", lambda *a, **k: None)


class FakeTokenizer:
    chat_template = None
    stop_ids: list[int] = []

    def encode(self, text: str) -> list[int]:
        return [ord(c) % V for c in text[:40]]


@pytest.fixture
def box(tmp_path, monkeypatch):
    """No NPU; a draft GGUF and a target file present (so the candidates are none, ngram, model:native)."""
    monkeypatch.setattr(draft_model_mod, "RKNN_DEVICE_NODES", (str(tmp_path / "no-rknpu"),))
    (tmp_path / "draft.gguf").write_bytes(b"d" * 10)
    (tmp_path / "target.gguf").write_bytes(b"t" * 10)
    (tmp_path / "cache").mkdir()
    return tmp_path


class Setup:
    """One start: a fake target, the candidates' fakes, and what was built."""

    def __init__(self, box: Path, candidates: dict, **target) -> None:
        self.box, self.clock = box, Clock()
        self.target = FakeTarget(self.clock, box / "target.gguf", **target)
        self.fakes = {spec: (f(self.clock) if callable(f) else f) for spec, f in candidates.items()}
        self.built: list[str] = []

    def build(self, spec: str):
        self.built.append(spec)
        if spec == "none":
            return None
        got = self.fakes[spec]
        if isinstance(got, Exception):
            raise got
        return got

    def choose(self, timing: str = "on") -> Drafter:
        return choose_drafter(self.target, self.build, draft_model=str(self.box / "draft.gguf"),
                              cache_dir=self.box / "cache", timing=timing, prompt=PROMPT, stops=(),
                              clock=self.clock, n_new=24)


def ngram(**kw):
    return lambda clock: FakeDrafter(clock, "ngram", **kw)


def native(**kw):
    return lambda clock: FakeDrafter(clock, "model:native", **kw)


@pytest.mark.parametrize("ngram_kw, native_kw, want", [
    ({}, {"ms_per_token": 1.0}, "ngram"),                       # both right: the free one wins
    ({"right": False}, {"ms_per_token": 0.5}, "model:native"),  # only the model drafts right
    ({"right": False}, {"right": False}, "none"),               # no draft pays its verification
    ({}, {"ms_per_token": 0.0}, "ngram"),                       # equal speed: the simpler one
])
def test_the_choice_follows_the_timings(box, ngram_kw, native_kw, want):
    s = Setup(box, {"ngram": ngram(**ngram_kw), "model:native": native(**native_kw)})
    d = s.choose()
    assert d.choice["spec"] == want
    if want == "none":
        assert isinstance(d, TargetOnly) and d.propose(PROMPT, 4) == ([], None)
    else:
        assert d is s.fakes[want] and not d.closed
    assert all(f.closed for spec, f in s.fakes.items() if spec != want)   # the losers are freed
    figures = d.choice["figures"]
    assert set(figures) == {"none", "ngram", "model:native"}
    assert max(figures, key=lambda k: figures[k]["tok_s"]) == want or want == "ngram"
    assert f"simplest: {want}" in d.choice["why"] and "none" in d.choice["why"]
    assert choice.active()["spec"] == want
    assert s.target.scratch == []   # the timing leaves the target's scratch as it found it


def test_a_drafter_must_beat_the_simpler_ones_by_min_gain():
    assert pick({"none": 10.0, "ngram": 10.4}) == "none"
    assert pick({"none": 10.0, "ngram": 11.0}) == "ngram"
    assert pick({"none": 10.0, "ngram": 12.0, "model:native": 12.3}) == "ngram"
    assert pick({"none": 10.0, "ngram": 12.0, "model:rknn": 14.0}) == "model:rknn"


def test_a_candidate_that_cannot_start_or_fails_is_skipped_with_its_reason(box):
    s = Setup(box, {"ngram": ngram(fail=True), "model:native": FileNotFoundError("no draft at x.gguf")})
    d = s.choose()
    assert d.choice["spec"] == "none"
    skipped = d.choice["skipped"]
    assert skipped["ngram"] == "failed: RuntimeError: NPU lost" and s.fakes["ngram"].closed
    assert skipped["model:native"] == "cannot start: FileNotFoundError: no draft at x.gguf"
    assert "; ngram: failed: RuntimeError: NPU lost" in d.choice["why"] and "; skipped model:rknn: " in d.choice["why"]
    assert set(d.choice["figures"]) == {"none"}


def test_a_candidate_whose_greedy_output_differs_is_skipped(box):
    s = Setup(box, {"ngram": ngram(), "model:native": native(ms_per_token=0.1)}, batch_variant=True)
    d = s.choose()
    assert d.choice["spec"] == "none"
    for spec in ("ngram", "model:native"):
        assert d.choice["skipped"][spec].startswith("greedy output differs from target-only at token 0")


def test_when_target_only_cannot_run_the_static_rule_runs(box):
    s = Setup(box, {"ngram": ngram(), "model:native": native()}, n_scratch=len(PROMPT) - 2)
    d = s.choose()
    assert d.choice["spec"] == "ngram" and d.choice["why"].startswith("timing failed (ValueError")
    assert not (box / "cache" / choice_cache.CHOICE_FILE).exists()
    assert s.fakes["model:native"].closed


def test_under_pytest_auto_does_not_time(box):
    s = Setup(box, {"ngram": ngram(), "model:native": native()})
    d = s.choose(timing="auto")
    assert d.choice["spec"] == "ngram" and d.choice["why"].startswith("not timed (under pytest)")
    assert s.target.forwards == 0 and s.built == ["ngram"]
    assert not (box / "cache" / choice_cache.CHOICE_FILE).exists()


def start(box: Path, **target) -> Setup:
    """A start whose timing picks model:native (the n-gram drafts wrong)."""
    return Setup(box, {"ngram": ngram(right=False), "model:native": native(ms_per_token=0.5)}, **target)


def test_the_choice_is_cached_and_reused(box):
    first = start(box)
    assert first.choose().choice["spec"] == "model:native"
    doc = json.loads((box / "cache" / choice_cache.CHOICE_FILE).read_text())
    assert doc["choice"] == "model:native" and doc["key"]["n_threads"] == 2
    assert doc["key"]["candidates"] == {"none": "", "ngram": "", "model:native": "draft.gguf:10"}
    again = start(box)
    d = again.choose()
    assert d is again.fakes["model:native"] and d.choice["why"] == f"cached: {doc['why']}"
    assert again.target.forwards == 0 and again.built == ["model:native"]   # nothing timed, one drafter built
    assert d.choice["figures"] == doc["figures"]


def _other_cpu(monkeypatch, box):
    monkeypatch.setattr(choice_cache.kernel_plan, "cpu_model", lambda: "Another CPU (family 25 model 97)")


def _new_draft(monkeypatch, box):
    (box / "draft.gguf").write_bytes(b"d" * 11)


def _new_target(monkeypatch, box):
    (box / "target.gguf").write_bytes(b"t" * 12)


def _new_build(monkeypatch, box):
    monkeypatch.setattr(choice_cache.kernel_plan, "build_id", lambda: "avx2-0000000000000000")


def _unreadable(monkeypatch, box):
    (box / "cache" / choice_cache.CHOICE_FILE).write_text("{not json")


@pytest.mark.parametrize("change, field", [(_other_cpu, "cpu_model"), (_new_draft, "candidates"),
                                            (_new_target, "target"), (_new_build, "build_id"), (_unreadable, None)])
def test_a_changed_key_times_again(box, monkeypatch, caplog, change, field):
    start(box).choose()
    change(monkeypatch, box)
    again = start(box)
    with caplog.at_level(logging.INFO, logger="gateway.llm.drafters"):
        d = again.choose()
    assert again.target.forwards > 0 and not d.choice["why"].startswith("cached")
    if field is not None:
        assert f"not reused (timed with {field}" in caplog.text
    doc = json.loads((box / "cache" / choice_cache.CHOICE_FILE).read_text())
    assert doc["key"] == choice_cache.choice_key(box / "target.gguf", 2, "q8x2", ["none", "ngram", "model:native"],
                                                 str(box / "draft.gguf"))


def test_other_threads_time_again(box):
    start(box).choose()
    again = start(box, n_threads=4)
    assert not again.choose().choice["why"].startswith("cached") and again.target.forwards > 0


def test_make_drafter_auto_times_the_real_candidates(box):
    """The plumbing the engine thread uses: make_drafter("auto", target) builds through make_drafter
    itself (a real n-gram drafter; no draft model here, so no model candidate)."""
    clock = Clock()
    target = FakeTarget(clock, box / "target.gguf")
    d = make_drafter("auto", target, draft_model=str(box / "absent.gguf"), choice_dir=box / "cache",
                     choice_timing="on")
    assert d.choice["spec"] in ("none", "ngram") and d.choice["skipped"]["model:native"].startswith("no draft model")
    doc = json.loads((box / "cache" / choice_cache.CHOICE_FILE).read_text())
    assert doc["choice"] == d.choice["spec"] and set(doc["figures"]) == {"none", "ngram"}
    with pytest.raises(ValueError, match="pass the target engine"):
        make_drafter("auto")


def test_resolve_keeps_auto_and_names_the_candidates(box):
    spec, why = resolve_draft_spec("auto", draft_model=str(box / "draft.gguf"))
    assert spec == "auto" and why.startswith("chosen by timing none, ngram, model:native at first start")
    assert "no model:rknn (no NPU device node" in why
