"""gateway.llm.engine on the real SmolLM2 GGUF: the ENGINE_API contract, generation (greedy,
seeded sampling, stops), jobs leaving the stream untouched, `linegate generate`, and a long
stream through sink_ring vs fifo (StreamingLLM, Xiao et al. 2023)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gateway.llm.engine import Engine, GenerateResult, resolve_act_precision
from gateway.settings import BARE_ENGINE

REPO = Path(__file__).resolve().parents[1]
STREAM_SYSTEMS = ("HDFS", "Apache", "OpenSSH", "Linux", "Zookeeper")
PPL_WINDOW = 256            # tokens per perplexity chunk
MAX_PPL_RATIO = 1.5         # last chunks vs the first window (issue 3)

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def eng(smollm_path) -> Engine:
    return Engine(smollm_path, n_sink=4, n_ring=128, n_scratch=96, n_threads=2, **BARE_ENGINE.model_dump())


def test_contract_properties(eng):
    assert (eng.arch, eng.n_layer, eng.n_embd, eng.n_vocab, eng.n_ctx_train) == ("llama", 30, 576, 49152, 8192)
    s = eng.stats()
    for key in ("n_sink", "n_ring", "n_scratch", "sink_used", "ring_used", "scratch_used", "stream_total",
                "prefill_ms_per_tok_ema", "decode_ms_per_tok_ema", "n_threads", "simd", "act_precision"):
        assert key in s
    assert (s["n_sink"], s["n_ring"], s["n_scratch"], s["n_threads"]) == (4, 128, 96, 2)


def test_greedy_generation_is_deterministic_and_rolls_back(eng):
    eng.prefill_stream(eng.tokenizer.encode("081109 203615 148 INFO dfs.DataNode$PacketResponder: Received block\n"))
    before = (eng.stream_checksum(), eng.stream_len, eng.stream_total)
    prompt = eng.tokenizer.encode("The capital of France is")
    a = eng.generate(prompt, 8)
    b = eng.generate(prompt, 8)
    assert isinstance(a, GenerateResult) and a.tokens == b.tokens and len(a.tokens) == 8
    assert eng.scratch_len == 0
    assert (eng.stream_checksum(), eng.stream_len, eng.stream_total) == before
    assert a.prefill_tok_s > 0 and a.decode_tok_s > 0 and a.finish_reason == "length"
    # greedy == argmax of the logits forward_scratch returns, token by token
    logits = eng.forward_scratch(prompt)
    manual = []
    for _ in range(8):
        manual.append(int(np.argmax(logits)))
        logits = eng.forward_scratch([manual[-1]])
    eng.rollback(0)
    assert manual == a.tokens


@pytest.mark.parametrize("T", [2, 4, 8])
def test_batch_invariance_real_model(eng, T):
    """Every position of a T-token scratch forward is bit-identical to token-by-token decode."""
    eng.prefill_stream(eng.tokenizer.encode("Nov 29 12:00:01 host sshd[42]: Accepted publickey for root\n" * 4))
    toks = eng.tokenizer.encode(" kernel: eth0: link up, 1000Mbps, full-duplex")[:T]
    batched = eng.forward_scratch(toks, all_logits=True)
    eng.rollback(0)
    stepped = np.stack([eng.forward_scratch([t]) for t in toks])
    eng.rollback(0)
    assert batched.shape == (T, eng.n_vocab)
    assert np.array_equal(batched, stepped)


@pytest.fixture(scope="module")
def eng_pair(smollm_path) -> dict[str, Engine]:
    return {p: Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=32, n_threads=2, kv_policy=BARE_ENGINE.kv_policy, act_precision=p)
            for p in ("q8x2", "q8")}


@pytest.mark.parametrize("T", [2, 8])
def test_q8_activations_are_batch_invariant_and_near_q8x2(eng_pair, T):
    """The one-term precision (the draft's) keeps batch invariance within itself, and is a different,
    nearby computation: its logits differ from the default's but point the same way."""
    x2, q8 = eng_pair["q8x2"], eng_pair["q8"]
    assert (x2.act_precision, q8.act_precision, q8.stats()["act_precision"]) == ("q8x2", "q8", "q8")
    toks = q8.tokenizer.encode("Nov 29 12:00:01 host sshd[42]: Accepted publickey for root from 10.0.0.7")[:T]
    batched = q8.forward_scratch(toks, all_logits=True)
    q8.rollback(0)
    stepped = np.stack([q8.forward_scratch([t]) for t in toks])
    q8.rollback(0)
    assert np.array_equal(batched, stepped)
    ref = x2.forward_scratch(toks, all_logits=True)
    x2.rollback(0)
    assert not np.array_equal(batched, ref)
    cos = (batched * ref).sum(-1) / np.linalg.norm(batched, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert cos.min() > 0.99, cos


@pytest.mark.parametrize("machine,backend,want", [("aarch64", "cpu", "q8"), ("arm64", "cpu", "q8"),
                                                   ("x86_64", "cpu", "q8"), ("aarch64", "cuda", "q8x2"),
                                                   ("x86_64", "cuda", "q8x2")])
def test_auto_act_precision_is_q8_on_cpus(monkeypatch, machine, backend, want):
    import platform
    monkeypatch.setattr(platform, "machine", lambda: machine)
    assert resolve_act_precision("auto", backend) == want
    assert resolve_act_precision("q8x2", backend) == "q8x2" and resolve_act_precision("q8", backend) == "q8"


def test_auto_act_precision_reaches_the_engine(smollm_path):
    import platform
    e = Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=32, n_threads=1, kv_policy=BARE_ENGINE.kv_policy, act_precision="auto")
    want = "q8" if e.backend == "cpu" else "q8x2"
    assert platform.machine() and e.act_precision == e.stats()["act_precision"] == want


def test_unknown_act_precision_is_named(smollm_path):
    with pytest.raises(ValueError, match="q8x2, q8.*'q4'"):
        Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=32, n_threads=1, kv_policy=BARE_ENGINE.kv_policy, act_precision="q4")
    from gateway import _native
    with pytest.raises(ValueError, match="unknown activation precision 'fp8' \\(q8x2, q8\\)"):
        _native.Engine(str(smollm_path), n_sink=4, n_ring=64, n_scratch=32, kv_policy="sink_ring", n_threads=1,
                       act_precision="fp8")


def test_seeded_sampling_reproducible(eng):
    prompt = eng.tokenizer.encode("Once upon a time")
    runs = [eng.generate(prompt, 12, temperature=1.0, top_k=40, top_p=0.95, seed=s).tokens for s in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_stops(eng):
    prompt = eng.tokenizer.encode("1, 2, 3, 4,")
    free = eng.generate(prompt, 6)
    stop_at = free.tokens[2]
    res = eng.generate(prompt, 6, stop_tokens=[stop_at])
    assert res.tokens == free.tokens[: free.tokens.index(stop_at) + 1] and res.finish_reason == "stop"
    seen = []
    res = eng.generate(prompt, 6, on_token=lambda t: seen.append(t) or len(seen) < 3)
    assert res.tokens == free.tokens[:3] == seen
    with pytest.raises(ValueError, match="scratch"):
        eng.generate(list(range(100, 300)), 4)
    assert eng.scratch_len == 0


def test_cli_generate_json(smollm_path):
    cmd = [sys.executable, "-m", "gateway", "generate", "--model", str(smollm_path), "--prompt",
           "The capital of France is", "--max-tokens", "6", "--json", "--threads", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(res) >= {"text", "tokens", "prefill_tok_s", "decode_tok_s"}
    assert len(res["tokens"]) == 6 and res["text"].strip()
    eng = Engine(smollm_path, n_sink=4, n_ring=16, n_scratch=32, n_threads=2, **BARE_ENGINE.model_dump())
    assert res["tokens"] == eng.generate(eng.tokenizer.encode("The capital of France is"), 6).tokens


def _stream_tokens(eng: Engine, loghub_dir: Path, n: int) -> np.ndarray:
    lines = [(loghub_dir / s / f"{s}_2k.log").read_text(errors="replace").splitlines() for s in STREAM_SYSTEMS]
    text = "\n".join(line for group in zip(*lines) for line in group)
    toks = np.array(eng.tokenizer.encode(text), dtype=np.int32)
    assert toks.size >= n
    return toks[:n]


def _chunk_ppl(logits: np.ndarray, toks: np.ndarray) -> list[float]:
    z = logits[:-1].astype(np.float64)
    z -= z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    nll = -logp[np.arange(toks.size - 1), toks[1:]]
    return [float(np.exp(nll[i:i + PPL_WINDOW].mean())) for i in range(0, nll.size - PPL_WINDOW + 1, PPL_WINDOW)]


def test_long_stream_sink_ring_stays_sane_fifo_does_not(smollm_path, loghub_dir):
    """10x the cache capacity of Loghub lines through a 4 + 256 + 16 cache."""
    result = {}
    for policy in ("sink_ring", "fifo"):
        eng = Engine(smollm_path, n_sink=4, n_ring=256, n_scratch=16, kv_policy=policy, act_precision=BARE_ENGINE.act_precision, n_threads=2)
        toks = _stream_tokens(eng, loghub_dir, 10 * eng.native.capacity)
        ppl = _chunk_ppl(eng.prefill_stream(toks, all_logits=True), toks)
        assert eng.stream_total == toks.size and eng.stream_len == eng.native.n_sink + 256
        gen = eng.generate(eng.tokenizer.encode("\n"), 12)
        result[policy] = {"ppl": ppl, "text": gen.text}
    print("\nlong stream:", json.dumps(result))
    first, last = result["sink_ring"]["ppl"][0], result["sink_ring"]["ppl"][-3:]
    assert max(last) <= MAX_PPL_RATIO * first, result["sink_ring"]
    # A coherent continuation of the log: a line starting like the logs (words and digits).
    text = result["sink_ring"]["text"]
    assert sum(c.isalpha() for c in text) >= 3 and any(c.isdigit() for c in text), text
    # The StreamingLLM contrast: without a sink, the late chunks are clearly worse.
    assert np.mean(result["fifo"]["ppl"][-3:]) > 1.3 * np.mean(last), result


def test_backend_selection_falls_back_to_cpu_without_a_device():
    """auto picks CUDA only with a device; asking for CUDA without one is a clear error."""
    from gateway import _native
    from gateway.llm.engine import select_backend

    if _native.cuda_available():
        assert select_backend("auto") == "cuda"
    else:
        assert select_backend("auto") == "cpu"
        with pytest.raises(RuntimeError, match="no CUDA device"):
            select_backend("cuda")
    assert select_backend("cpu") == "cpu"
    with pytest.raises(ValueError, match="expected one of"):
        select_backend("tpu")


def test_block_policy_runs_as_sink_ring_on_the_cuda_engine(smollm_path, monkeypatch):
    """The CUDA engine has no block compaction: the default policy (novelty) must not stop a CUDA box
    from starting. Here a CPU engine stands in for CudaEngine (same constructor): what the wrapper asks
    it for, and what stats() says."""
    from gateway import _native
    from gateway.llm import engine as engine_mod

    asked: dict = {}

    def fake_cuda(path, **kw):
        asked.update(kw)
        return _native.Engine(path, **kw)

    monkeypatch.setattr(engine_mod, "select_backend", lambda backend="auto": "cuda" if backend == "auto" else backend)
    monkeypatch.setattr(_native, "CudaEngine", fake_cuda, raising=False)
    e = Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=64, kv_policy="novelty", kv_block=16, act_precision=BARE_ENGINE.act_precision)
    assert asked["kv_policy"] == "sink_ring" and "kv_block" not in asked
    st = e.stats()
    assert e.kv_policy == st["kv_policy"] == "sink_ring" and st["kv_policy_requested"] == "novelty"
    # on the CPU the same request runs novelty
    c = Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=64, kv_policy="novelty", kv_block=16, backend="cpu",
               act_precision=BARE_ENGINE.act_precision)
    assert c.kv_policy == c.stats()["kv_policy"] == "novelty"


def test_older_argument_names_still_reach_the_engine(smollm_path):
    """policy / sem_block are kv_policy / kv_block under their older names (one release), with a warning
    naming the new one; the native engine takes the new names only."""
    with pytest.warns(DeprecationWarning) as seen:
        e = Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=32, n_threads=1, policy="novelty", sem_block=16,
                   act_precision=BARE_ENGINE.act_precision)
    assert sorted(str(w.message) for w in seen) == ["Engine(policy=) is now Engine(kv_policy=)",
                                                    "Engine(sem_block=) is now Engine(kv_block=)"]
    with pytest.warns(DeprecationWarning, match="Engine.kv_policy"):
        assert e.kv_policy == e.policy == "novelty"
    from gateway import _native
    with pytest.raises(TypeError):
        _native.Engine(str(smollm_path), n_sink=4, n_ring=64, n_scratch=32, policy="sink_ring", act_precision="q8x2")
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="disagree"):
        Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=32, kv_policy="semantic", policy="novelty", kv_block=16,
               act_precision=BARE_ENGINE.act_precision)


def test_a_block_policy_needs_its_block_size(smollm_path):
    with pytest.raises(ValueError, match="kv_block"):
        Engine(smollm_path, n_sink=4, n_ring=64, n_scratch=32, n_threads=1, kv_policy="novelty", act_precision=BARE_ENGINE.act_precision)
