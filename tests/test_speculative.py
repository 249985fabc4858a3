"""The verification rule and the speculative loop: exactness in distribution (sampling) and token
for token (greedy). Rule-level tests use a tiny exact model; engine tests are in test_speculative_engine.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.fakes import ScratchLM
from tools import TOOL_MODULES
from scipy.stats import chisquare

import gateway.llm.speculative as spec
from gateway.llm.drafters import parse_draft_spec
from gateway.llm.generate import generate_with_drafter
from gateway.llm.sampling import SamplingParams as Sampling
from gateway.llm.speculative import probs_from_logits, speculative_generate, verify_greedy, verify_sampled
from gateway.settings import BARE_ENGINE

VOCAB = 4
N_SAMPLES = 4000
N_POS = 3


class TinyLM(ScratchLM):
    """A 4-token 'language model' (tests/fakes.py)."""

    def __init__(self, salt: int, scale: float):
        super().__init__(salt, scale, VOCAB)


class TinyDrafter:
    """Samples drafts from another TinyLM (q differs a lot from p: the rule has work to do)."""

    name = "tiny"

    def __init__(self, lm: TinyLM, seed: int):
        self.lm, self.rng = lm, np.random.default_rng(seed)

    def begin_job(self, prompt, sampling, seed):
        self.sampling = sampling

    def propose(self, context, k):
        ctx, toks, qs = list(context), [], []
        for _ in range(k):
            q = probs_from_logits(self.lm.logits(ctx), self.sampling)
            t = spec.sample(q, self.rng)
            toks.append(t)
            qs.append(q)
            ctx.append(t)
        return toks, np.stack(qs)

    def observe(self, n_accepted, n_drafted):
        pass

    def end_job(self):
        pass


PROMPT = [1, 2]
SAMPLING = Sampling(temperature=1.0)


def exact_joint(target: TinyLM) -> np.ndarray:
    """P(x1, x2, x3 | PROMPT) under target-only sampling, [V, V, V]."""
    joint = np.zeros((VOCAB,) * N_POS)
    for seq in itertools.product(range(VOCAB), repeat=N_POS):
        prob, ctx = 1.0, list(PROMPT)
        for t in seq:
            prob *= probs_from_logits(target.logits(ctx), SAMPLING)[t]
            ctx.append(t)
        joint[seq] = prob
    return joint


def run_speculative(n_samples: int, k_max: int = 2, seed: int = 0) -> np.ndarray:
    target = TinyLM(salt=1, scale=1.5)
    drafter = TinyDrafter(TinyLM(salt=2, scale=1.5), seed=seed + 1)
    counts = np.zeros((VOCAB,) * N_POS)
    for i in range(n_samples):
        res = speculative_generate(target, drafter, PROMPT, N_POS, SAMPLING, seed=seed * 1_000_003 + i, k_max=k_max)
        assert len(res.tokens) == N_POS and target.scratch_len == 0
        counts[tuple(res.tokens)] += 1
    return counts


def p_values(counts: np.ndarray, joint: np.ndarray) -> list[float]:
    """Chi-square p-value per position (marginals) and for the joint of the 3 positions."""
    n = counts.sum()
    out = []
    for pos in range(N_POS):
        axes = tuple(a for a in range(N_POS) if a != pos)
        out.append(chisquare(counts.sum(axis=axes), joint.sum(axis=axes) * n).pvalue)
    out.append(chisquare(counts.ravel(), joint.ravel() * n).pvalue)
    return out


@pytest.fixture(scope="module")
def joint() -> np.ndarray:
    return exact_joint(TinyLM(salt=1, scale=1.5))


def test_speculative_sampling_matches_target_distribution(joint):
    counts = run_speculative(N_SAMPLES)
    pv = p_values(counts, joint)
    assert min(pv) > 1e-3, f"speculative sampling deviates from the target: p-values {pv}"


def wrong_rule_resample_from_p(draft, q, p, rng):
    """Accepts like the paper but, on rejection, samples from p instead of normalize(max(0, p - q))."""
    for i, x in enumerate(draft):
        if rng.random() < min(1.0, p[i, x] / q[i, x]):
            continue
        return spec.Verdict(i, spec.sample(p[i], rng), bonus=False)
    return spec.Verdict(len(draft), spec.sample(p[len(draft)], rng), bonus=True)


def wrong_rule_accept_always(draft, q, p, rng):
    """Trusts the draft: the output then follows q, not p."""
    return spec.Verdict(len(draft), spec.sample(p[len(draft)], rng), bonus=True)


@pytest.mark.parametrize("wrong_rule", [wrong_rule_resample_from_p, wrong_rule_accept_always])
def test_wrong_acceptance_rule_is_detected(joint, monkeypatch, wrong_rule):
    """The same test with a broken rule must fail: shows the chi-square test has power."""
    monkeypatch.setattr(spec, "verify_sampled", wrong_rule)
    counts = run_speculative(N_SAMPLES)
    pv = p_values(counts, joint)
    assert min(pv) < 1e-6, f"a wrong rule passed the distribution test: p-values {pv}"


def test_rule_single_position_deterministic_proposal():
    """q = point mass (the n-gram case): the first emitted token is still distributed as p."""
    rng = np.random.default_rng(7)
    p = np.array([[0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])
    counts = np.zeros(VOCAB)
    for _ in range(20000):
        v = verify_sampled([3], None, p, rng)
        counts[3 if v.n_accepted else v.token] += 1
    assert chisquare(counts, p[0] * counts.sum()).pvalue > 1e-3


def test_greedy_rule_accepts_prefix_then_recovers():
    logits = np.array([[0, 5, 0], [9, 0, 0], [0, 0, 3], [1, 2, 0]], dtype=np.float32)  # argmax 1, 0, 2, 1
    assert verify_greedy([1, 0, 2], logits) == spec.Verdict(3, 1, bonus=True)
    assert verify_greedy([1, 2, 2], logits) == spec.Verdict(1, 0, bonus=False)
    assert verify_greedy([0, 0, 2], logits) == spec.Verdict(0, 1, bonus=False)
    assert verify_greedy([], logits[:1]) == spec.Verdict(0, 1, bonus=True)


def test_greedy_loop_is_target_greedy_and_counts_forwards():
    target = TinyLM(salt=3, scale=2.0)
    ref_ctx = [0, 1, 2]
    ref = []
    for _ in range(12):
        ref.append(int(np.argmax(target.logits(ref_ctx + ref))))
    # a drafter that knows the right answer for 3 tokens out of 4: forces accepts and rejections
    class Oracle(TinyDrafter):
        def propose(self, context, k):
            n = len(context) - len(ref_ctx)
            toks = ref[n:n + k]
            return [t if (n + i) % 4 != 3 else (t + 1) % VOCAB for i, t in enumerate(toks)], None
    res = speculative_generate(target, Oracle(target, 0), ref_ctx, 12, Sampling())
    assert res.tokens == ref
    st = res.stats
    assert st.n_recovered > 0 and st.n_accepted > 0
    assert st.n_decoded == 12 and st.tokens_per_target_forward > 1.0
    assert target.scratch_len == 0


def test_probs_from_logits_top_k_top_p():
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    assert np.allclose(probs_from_logits(logits, Sampling(1.0, top_k=2)), [0.625, 0.375, 0, 0])
    assert np.allclose(probs_from_logits(logits, Sampling(1.0, top_p=0.7)), [0.625, 0.375, 0, 0])
    assert np.allclose(probs_from_logits(logits, Sampling(1.0, top_p=0.1)), [1, 0, 0, 0])
    assert np.allclose(probs_from_logits(logits, Sampling(1.0)), [0.5, 0.3, 0.15, 0.05])


def test_adaptive_k_follows_acceptance():
    st = spec.SpecStats()
    for _ in range(30):
        spec.adapt_k(st, 4, 4)
    assert st.k == spec.K_MAX
    for _ in range(30):
        spec.adapt_k(st, 4, 0)
    assert st.k == spec.K_MIN


def test_draft_length_follows_the_measured_step_costs():
    st = spec.SpecStats()
    # Verification cheap up to 4 tokens, then a jump (a kernel tile boundary): high acceptance still
    # drafts 3, not K_MAX.
    for t, ms in {1: 20.0, 2: 26.0, 3: 31.0, 4: 36.0}.items():
        st.costs.observe(t, ms)
    for t in range(5, spec.K_MAX + 2):
        st.costs.observe(t, 60.0 + 15.0 * (t - 5))
    for _ in range(30):
        spec.adapt_k(st, 4, 4)
    assert st.accept_ema > 0.99 and st.k == 3
    # Flat costs (verification memory-bound at every size): draft as far as acceptance carries.
    flat = spec.SpecStats()
    for t in range(1, spec.K_MAX + 2):
        flat.costs.observe(t, 20.0)
    for _ in range(30):
        spec.adapt_k(flat, 4, 4)
    assert flat.k == spec.K_MAX
    for _ in range(30):  # rejections: one draft per step
        spec.adapt_k(st, 4, 0)
    assert st.k == spec.K_MIN
    # A size not measured yet is estimated from the largest smaller one, optimistically.
    part = spec.StepCosts()
    part.observe(1, 20.0)
    part.observe(5, 60.0)
    assert part.estimate(7) == 60.0 + 2 * spec.PRIOR_MARGINAL_COST * 20.0
    assert spec.StepCosts().estimate(3) is None


def test_parse_draft_spec():
    assert parse_draft_spec("model") == ("model", "native")
    assert parse_draft_spec("model:onnx") == ("model", "onnx")
    assert parse_draft_spec("ngram") == ("ngram", None)
    for bad in ("model:tpu", "ngram:onnx", "medusa"):
        with pytest.raises(ValueError, match="--draft"):
            parse_draft_spec(bad)


# --- on the real engine: SmolLM2-135M as target and as draft -----------------------------------

import importlib.util  # noqa: E402
from pathlib import Path  # noqa: E402

N_PROMPTS = 20
PROMPT_LEN = 128
N_NEW = 10
LOG_SYSTEMS = ("HDFS", "OpenSSH", "Apache", "Zookeeper", "Linux")


def load_tool(name: str):
    """A tool module by its file name (tools/{bench,convert,probes}/NAME.py)."""
    return importlib.import_module(TOOL_MODULES[name])


@pytest.fixture(scope="module")
def smol_engine(smollm_path):
    from gateway.llm.engine import Engine
    return Engine(str(smollm_path), n_sink=4, n_ring=256, n_scratch=PROMPT_LEN + N_NEW + 2 * spec.K_MAX, n_threads=2,
                  **BARE_ENGINE.model_dump())


@pytest.fixture(scope="module")
def log_prompts(smollm_path, loghub_dir) -> list[list[int]]:
    """20 prompts of 128 tokens: windows of real log files (repetitive, as the appliance sees)."""
    from gateway.llm.tokenizer import Tokenizer
    tok = Tokenizer.from_gguf(smollm_path)
    prompts = []
    for i in range(N_PROMPTS):
        system = LOG_SYSTEMS[i % len(LOG_SYSTEMS)]
        lines = (loghub_dir / system / f"{system}_2k.log").read_text(errors="replace").splitlines()
        start = 37 * (i // len(LOG_SYSTEMS))
        ids = tok.encode("\n".join(lines[start:start + 40]))
        assert len(ids) >= PROMPT_LEN, f"{system}: window too short"
        prompts.append(ids[:PROMPT_LEN])
    return prompts


def target_only_greedy(engine, prompt: list[int], n: int) -> list[int]:
    """Token-by-token greedy decoding after prompt[:-1] already sits in scratch: the reference
    (no batching, no drafts). Leaves the scratch as it found it."""
    base = engine.scratch_len
    logits = engine.forward_scratch(prompt[-1:])
    out = []
    for _ in range(n):
        out.append(int(np.argmax(logits)))
        logits = engine.forward_scratch([out[-1]])
    engine.rollback(base)
    return out


@pytest.fixture(scope="module")
def smol_onnx(smollm_path, artifacts_dir) -> Path:
    exporter = load_tool("export_draft_onnx")
    return exporter.ensure_exported(smollm_path, artifacts_dir / "smollm2.draft.onnx", chunk=16, n_cache=1024)


DRAFT_KINDS = ("ngram", "model:native", "model:onnx", "model:native+deferred")
SHORT_KINDS = ("model:native+deferred",)   # the same drafter on a thread: a few prompts suffice
N_PROMPTS_SHORT = 4


def make_test_drafter(kind: str, smollm_path, smol_onnx):
    from gateway.llm.drafters import make_drafter
    spec_, _, deferred = kind.partition("+")
    return make_drafter(spec_, None, draft_model=str(smollm_path), draft_onnx=str(smol_onnx),
                        deferred=bool(deferred), n_threads=2)


@pytest.fixture(scope="module")
def greedy_runs(smol_engine, log_prompts, smollm_path, smol_onnx) -> dict:
    """Per prompt: target-only greedy and every drafter's speculative greedy. The prompt is
    prefilled once and shared (n_prompt_cached); each run rolls back to it."""
    drafters = {kind: make_test_drafter(kind, smollm_path, smol_onnx) for kind in DRAFT_KINDS}
    runs = {"reference": [], **{kind: [] for kind in DRAFT_KINDS}}
    try:
        for prompt in log_prompts:
            smol_engine.forward_scratch(prompt[:-1])
            runs["reference"].append(target_only_greedy(smol_engine, prompt, N_NEW))
            for kind, drafter in drafters.items():
                if kind in SHORT_KINDS and len(runs[kind]) >= N_PROMPTS_SHORT:
                    continue
                runs[kind].append(speculative_generate(smol_engine, drafter, prompt, N_NEW, Sampling(),
                                                       n_prompt_cached=len(prompt) - 1))
                assert smol_engine.scratch_len == len(prompt) - 1
            smol_engine.rollback(0)
        runs["deferred_hits"] = drafters["model:native+deferred"].hits
    finally:
        for d in drafters.values():
            d.close()
    return runs


@pytest.mark.parametrize("kind", DRAFT_KINDS)
def test_greedy_speculative_is_target_greedy(kind, greedy_runs):
    for i, (ref, res) in enumerate(zip(greedy_runs["reference"], greedy_runs[kind])):
        assert res.tokens == ref, f"{kind}, prompt {i}: speculative greedy diverged from target greedy"
    drafted = sum(r.stats.n_drafted for r in greedy_runs[kind])
    assert drafted > 0, f"{kind} never drafted: the comparison tested nothing"
    if kind.endswith("deferred"):
        assert greedy_runs["deferred_hits"] > 0


def test_greedy_matches_engine_generate(smol_engine, log_prompts, greedy_runs):
    """The reference loop above agrees with the engine's own target-only generate."""
    res = smol_engine.generate(log_prompts[0], N_NEW, stop_tokens=[])
    assert res.tokens == greedy_runs["reference"][0]


def test_generate_with_drafter_cli_entry(smol_engine, log_prompts, greedy_runs):
    """What `linegate generate --draft ...` calls: same tokens, acceptance and tokens per forward."""
    prompt = log_prompts[1]
    res = generate_with_drafter(smol_engine, prompt, N_NEW, draft_spec="ngram", stop_tokens=[], n_threads=2)
    assert res.tokens == greedy_runs["reference"][1]
    assert 0.0 <= res.acceptance <= 1.0 and res.tokens_per_target_forward >= 1.0
    assert res.text == smol_engine.tokenizer.decode(res.tokens)
    assert set(res.timings) >= {"prefill_ms", "decode_ms", "decode_tok_s", "draft_ms", "verify_ms"}


def _reference_probs(row, temperature, top_k, top_p):
    """The sampling distribution written out from its definition, one row, plain Python order."""
    p = np.exp((row - row.max()) / temperature)
    p /= p.sum()
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    keep = set(order[:top_k] if top_k else order)
    mass = 0.0
    kept_nucleus = set()
    for i in order:
        if i not in keep:
            continue
        if mass >= top_p * sum(p[j] for j in keep):
            break
        kept_nucleus.add(i)
        mass += p[i]
    q = np.array([p[i] if i in kept_nucleus else 0.0 for i in range(len(p))])
    return q / q.sum()


def test_probs_match_their_definition():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, (5, 50))
    for s in (Sampling(0.7), Sampling(1.0, top_k=7), Sampling(1.3, top_p=0.8), Sampling(0.9, 10, 0.9)):
        ours = probs_from_logits(logits, s)
        for row, p in zip(logits, ours):
            ref = _reference_probs(row, s.temperature, s.top_k, s.top_p)
            assert np.allclose(p, ref), (s, np.flatnonzero(p), np.flatnonzero(ref))


class NoisyDrafter(TinyDrafter):
    """Proposes random tokens: nearly every block ends in a rejection."""

    def __init__(self, n_vocab, seed):
        self.n_vocab, self.rng = n_vocab, np.random.default_rng(seed)

    def propose(self, context, k):
        return [int(t) for t in self.rng.integers(0, self.n_vocab, k)], None


def test_stream_bit_identical_after_rejections(smol_engine, log_prompts):
    smol_engine.prefill_stream(log_prompts[0][:100])
    before = (smol_engine.stream_checksum(), smol_engine.stream_len)
    res_g = speculative_generate(smol_engine, NoisyDrafter(smol_engine.n_vocab, 1), log_prompts[1][:40], 10, Sampling())
    res_s = speculative_generate(smol_engine, NoisyDrafter(smol_engine.n_vocab, 2), log_prompts[2][:40], 10,
                                 Sampling(temperature=1.0), seed=3)
    assert res_g.stats.n_recovered + res_s.stats.n_recovered >= 10
    assert (smol_engine.stream_checksum(), smol_engine.stream_len) == before
    assert smol_engine.scratch_len == 0


# --- slow: sampling end to end, and the real pair (Qwen 0.5B drafting for 1.5B) ---------------

E2E_SAMPLES = 300
E2E_SAMPLING = Sampling(temperature=1.0, top_k=3)


def exact_engine_joint(engine, prompt: list[int]) -> dict[tuple, float]:
    """P(x1, x2, x3) of target-only sampling, enumerated over the top-3 support (13 forwards)."""
    joint: dict[tuple, float] = {}

    def walk(prefix: tuple, prob: float) -> None:
        if len(prefix) == N_POS:
            joint[prefix] = prob
            return
        p = probs_from_logits(engine.forward_scratch(list(prompt) + list(prefix)), E2E_SAMPLING)
        engine.rollback(0)
        for t in np.flatnonzero(p):
            walk(prefix + (int(t),), prob * p[t])
    walk((), 1.0)
    return joint


@pytest.mark.slow
def test_sampling_end_to_end_matches_target(smol_engine, smollm_path, log_prompts):
    """SmolLM2 drafting for itself at a hotter temperature (q != p, drafts outside p's support)."""
    from gateway.llm.drafters.model import ModelDrafter

    class HotDrafter(ModelDrafter):
        def begin_job(self, prompt_tokens, sampling, seed):
            super().begin_job(prompt_tokens, Sampling(temperature=2.0, top_k=6), seed)

    from gateway.llm.engine import Engine
    drafter = HotDrafter(Engine(str(smollm_path), n_sink=4, n_ring=64, n_scratch=64, n_threads=2, **BARE_ENGINE.model_dump()), "native")
    prompt = log_prompts[3][:24]
    joint = exact_engine_joint(smol_engine, prompt)
    keys = sorted(joint)
    counts = dict.fromkeys(keys, 0)
    rejected = 0
    for i in range(E2E_SAMPLES):
        res = speculative_generate(smol_engine, drafter, prompt, N_POS, E2E_SAMPLING, seed=i, k_max=2)
        counts[tuple(res.tokens)] += 1   # a KeyError would mean a token outside p's support
        rejected += res.stats.n_recovered
    assert rejected > E2E_SAMPLES // 10, "q never disagreed with p: the rule was not exercised"
    expected = np.array([joint[k] for k in keys]) * E2E_SAMPLES
    observed = np.array([counts[k] for k in keys])
    for pos in range(N_POS):   # per-position marginals
        cells = sorted({k[pos] for k in keys})
        o = [sum(observed[j] for j, k in enumerate(keys) if k[pos] == c) for c in cells]
        e = [sum(expected[j] for j, k in enumerate(keys) if k[pos] == c) for c in cells]
        assert chisquare(o, e).pvalue > 1e-3, f"position {pos + 1}: {o} vs expected {np.round(e, 1)}"


@pytest.mark.slow
def test_qwen_pair_greedy_identical(qwen15_path, qwen05_path, loghub_dir):
    from gateway.llm.drafters.model import ModelDrafter
    from gateway.llm.engine import Engine
    from gateway.llm.tokenizer import Tokenizer

    target = Engine(str(qwen15_path), n_sink=4, n_ring=256, n_scratch=PROMPT_LEN + 64 + 2 * spec.K_MAX, n_threads=2,
                    **BARE_ENGINE.model_dump())
    drafter = ModelDrafter.create("native", draft_model=str(qwen05_path), n_ring=256, n_threads=2)
    tok = Tokenizer.from_gguf(qwen15_path)
    lines = (loghub_dir / "OpenSSH" / "OpenSSH_2k.log").read_text().splitlines()
    accepted = 0
    for i in range(3):
        prompt = tok.encode("\n".join(lines[40 * i:40 * i + 30]))[:PROMPT_LEN]
        target.forward_scratch(prompt[:-1])
        ref = target_only_greedy(target, prompt, 32)
        res = speculative_generate(target, drafter, prompt, 32, Sampling(), n_prompt_cached=len(prompt) - 1)
        target.rollback(0)
        assert res.tokens == ref
        accepted += res.stats.n_accepted
    assert accepted > 0


def test_keep_going_stops_a_long_prefill_and_otherwise_changes_nothing():
    """A cancelled job stops between prompt chunks (its prefill is not finished first); when it is
    not cancelled, the chunked prefill gives the tokens of the one-forward prefill."""
    from gateway.llm.speculative import PREFILL_CHECK_TOKENS
    prompt = [i % VOCAB for i in range(3 * PREFILL_CHECK_TOKENS + 5)]
    whole = speculative_generate(TinyLM(salt=5, scale=2.0), None, prompt, 6, Sampling())
    chunked = speculative_generate(TinyLM(salt=5, scale=2.0), None, prompt, 6, Sampling(), keep_going=lambda: True)
    assert chunked.tokens == whole.tokens and len(whole.tokens) == 6
    target = TinyLM(salt=5, scale=2.0)
    forwards = []
    real = target.forward_scratch
    target.forward_scratch = lambda toks, all_logits=False: forwards.append(len(toks)) or real(toks, all_logits)
    asked = []
    res = speculative_generate(target, None, prompt, 6, Sampling(), keep_going=lambda: asked.append(1) or len(asked) < 2)
    assert forwards == [PREFILL_CHECK_TOKENS] and res.tokens == [] and res.prefill_tokens == PREFILL_CHECK_TOKENS
    assert target.scratch_len == 0
