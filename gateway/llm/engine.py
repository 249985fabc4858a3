"""The inference engine as Python sees it: one model, its sink+ring+scratch KV cache, generate().

Wraps gateway._native.Engine (C++; the GIL is released inside). One thread owns an Engine; it is
not thread-safe. Knows nothing about where tokens come from (ring, HTTP) or about drafters.
"""

from __future__ import annotations

import logging
import os
import platform
import time
import warnings
from typing import Callable, Sequence

import numpy as np

from gateway import _native
from gateway.llm import kernel_plan
from gateway.llm.cpus import default_threads
from gateway.llm.models import resolve_model
from gateway.llm.sampling import SamplingParams
from gateway.llm.speculative import GenerateResult, speculative_generate
from gateway.llm.timing import MsPerToken
from gateway.llm.tokenizer import Tokenizer

__all__ = ["Engine", "GenerateResult", "select_backend", "BACKENDS", "ACT_PRECISIONS", "BLOCK_POLICIES",
           "auto_act_precision", "resolve_act_precision"]

log = logging.getLogger(__name__)

# KV policies that keep the ring in blocks and compact it (native/kv_semantic.cpp): CPU engine only
BLOCK_POLICIES = ("semantic", "novelty")


def _tokens(tokens: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(tokens, dtype=np.int32)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("tokens must be a non-empty 1-D sequence of ids")
    return arr


BACKENDS = ("auto", "cpu", "cuda")
ACT_PRECISIONS = ("q8x2", "q8")  # native/quant.h ActPrecision


def _renamed(new: str, value, old_name: str, old):
    """`value` given under `new`, or under its older name `old_name` (one release: a DeprecationWarning
    names the new one). None is "not given"."""
    if old is None:
        return value
    warnings.warn(f"Engine({old_name}=) is now Engine({new}=)", DeprecationWarning, stacklevel=3)
    if value is not None and value != old:
        raise ValueError(f"{new}={value!r} and {old_name}={old!r} (its older name) disagree: give {new} only")
    return old


def auto_act_precision(machine: str, backend: str = "cpu") -> str:
    """What "auto" means on a machine (platform.machine()) and backend: q8 for the CPU engine (aarch64
    and x86 alike: the box's answers are the dev machine's), q8x2 for CUDA."""
    del machine     # kept in the signature: what "auto" means has depended on it (doctor, tests)
    return "q8" if backend == "cpu" else "q8x2"


def resolve_act_precision(act_precision: str, backend: str = "cpu") -> str:
    """"auto" -> "q8" for the CPU engine, "q8x2" for CUDA; "q8x2" / "q8" pass through.
    A CPU batch (reading the stream, a job's prompt, verifying drafts) is compute-bound: at q8x2 it does
    twice q8's integer work, so it takes longer on x86 and on the RK3588's A76 alike (figures:
    docs/perf/2026-12-05-act-precision-x86.md, 2026-12-02-arm-kernels.md); one token's step is bound by
    weight reads and costs the same at both. What q8 does to answers: docs/perf/2026-12-05-act-precision-x86.md."""
    if act_precision == "auto":
        return auto_act_precision(platform.machine(), backend)
    if act_precision not in ACT_PRECISIONS:
        raise ValueError(f"act_precision must be one of auto, {', '.join(ACT_PRECISIONS)}, got {act_precision!r}")
    return act_precision


def select_backend(backend: str = "auto") -> str:
    """"cpu" or "cuda". "auto" takes CUDA when the module was built with it and a device is
    present, else the CPU (the reference). Asking for "cuda" without a device is an error."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    has_cuda = bool(getattr(_native, "cuda_built", False)) and bool(_native.cuda_available())
    if backend == "cuda" and not has_cuda:
        raise RuntimeError("backend 'cuda' requested but no CUDA device is available "
                           f"(module built with CUDA: {bool(getattr(_native, 'cuda_built', False))})")
    if backend == "auto":
        return "cuda" if has_cuda else "cpu"
    return backend


class Engine:
    def __init__(self, path_or_model_name: str | os.PathLike, *, n_sink: int, n_ring: int, n_scratch: int,
                 kv_policy: str | None = None, kv_block: int | None = None, act_precision: str,
                 n_threads: int | None = None, max_chunk: int | None = None, backend: str = "auto", tokenizer=None,
                 sem_layer: int | None = None, sem_threshold: float | None = None, sem_keep: float | None = None,
                 policy: str | None = None, sem_block: int | None = None):
        """The cache layout (n_sink | n_ring | n_scratch), kv_policy and act_precision are the caller's:
        the appliance's come from gateway/settings.py (engine.*), an engine outside it names its own
        (tests, tools: settings' BARE_ENGINE). kv_policy is required (None: not given, unless under `policy`).
        kv_policy: what leaves the KV ring when full (native/kv_cache.h); kv_block: tokens per block,
        required by the block policies (novelty, semantic). act_precision: "q8x2" (the precision the
        correctness gate holds), "q8" (one int8 term per activation, llama.cpp's scheme: about half the
        integer work of a batch) or "auto" (resolve_act_precision: q8 on CPUs, q8x2 on CUDA); both backends.
        tokenizer: the caller's Tokenizer for this GGUF, if it has one (else loaded on first use).
        n_threads: default one per performance core this process may use (gateway/llm/cpus.py).
        policy, sem_block: the older names of kv_policy, kv_block (one release)."""
        kv_policy = _renamed("kv_policy", kv_policy, "policy", policy)
        kv_block = _renamed("kv_block", kv_block, "sem_block", sem_block)
        if kv_policy is None:    # the caller names the policy (settings' engine.kv_policy, or BARE_ENGINE)
            raise TypeError("Engine() needs kv_policy (gateway/settings.py: engine.kv_policy, or BARE_ENGINE)")
        self.path = resolve_model(path_or_model_name)
        self.backend = select_backend(backend)
        act_precision = resolve_act_precision(act_precision, self.backend)
        kwargs = {} if max_chunk is None else {"max_chunk": int(max_chunk)}
        # The CUDA engine has no block compaction: a block policy (the appliance's default is novelty)
        # runs as sink_ring there, said in the log and in stats() (kv_policy_requested), not refused.
        self.kv_policy_requested = kv_policy
        if self.backend == "cuda" and kv_policy in BLOCK_POLICIES:
            log.warning("kv policy %s is CPU-only: the CUDA engine runs sink_ring", kv_policy)
            kv_policy = "sink_ring"
        if kv_policy in BLOCK_POLICIES:
            if kv_block is None:
                raise ValueError(f"kv_policy {kv_policy!r} keeps the ring in blocks: give kv_block (engine.kv_block)")
            # block size, pooled layer, similarity threshold, share of blocks kept for important lines
            for key, val in (("kv_block", kv_block), ("sem_layer", sem_layer), ("sem_threshold", sem_threshold),
                             ("sem_keep", sem_keep)):
                if val is not None:
                    kwargs[key] = val
        cls = _native.CudaEngine if self.backend == "cuda" else _native.Engine
        self._e = cls(str(self.path), n_sink=n_sink, n_ring=n_ring, n_scratch=n_scratch,
                      kv_policy=kv_policy, n_threads=int(n_threads or default_threads()),
                      act_precision=act_precision, **kwargs)
        self.n_vocab: int = self._e.n_vocab
        self.n_ctx_train: int = self._e.n_ctx_train
        self.n_layer: int = self._e.n_layer
        self.n_embd: int = self._e.n_embd
        self.arch: str = self._e.arch
        self.act_precision: str = self._e.act_precision
        self._tokenizer = tokenizer
        self._prefill_ms = MsPerToken()    # figures for stats(): batches (prefill) and single tokens (decode)
        self._decode_ms = MsPerToken()

    # --- properties --------------------------------------------------------------------------

    @property
    def native(self):
        """The gateway._native.Engine (tests, benchmarks)."""
        return self._e

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = Tokenizer.from_gguf(self.path)
        return self._tokenizer

    @property
    def stream_len(self) -> int:
        return self._e.stream_len

    @property
    def stream_total(self) -> int:
        return self._e.stream_total

    @property
    def scratch_len(self) -> int:
        return self._e.scratch_used

    @property
    def n_scratch(self) -> int:
        return self._e.n_scratch

    def _note(self, n: int, seconds: float) -> None:
        (self._prefill_ms if n > 1 else self._decode_ms).observe(n, seconds * 1e3)

    # --- the committed stream ----------------------------------------------------------------

    def prefill_stream(self, tokens: Sequence[int], all_logits: bool = False) -> np.ndarray:
        """Append tokens to sink+ring (oldest ring entries evicted when full). Logits of the last
        token [n_vocab], or of every token [n, n_vocab] when all_logits."""
        toks = _tokens(tokens)
        out = np.empty((toks.size, self.n_vocab) if all_logits else self.n_vocab, dtype=np.float32)
        t0 = time.perf_counter()
        self._e.prefill_stream(toks, out, all_logits)
        self._note(toks.size, time.perf_counter() - t0)
        return out

    def stream_checksum(self) -> int:
        return int(self._e.stream_checksum())

    @property
    def reads_during_jobs(self) -> bool:
        """prefill_stream may run while a job holds scratch: the job keeps the stream view it started with
        (native/kv_cache.h, READING DURING A JOB). False on the CUDA engine: there it waits for the job."""
        return bool(getattr(self._e, "reads_during_jobs", False))

    @property
    def job_view_lost(self) -> int:
        """Stream tokens of the running job's view that the ring evicted since the job began."""
        return int(getattr(self._e, "job_view_lost", 0))

    @property
    def job_sees_stream(self) -> bool:
        """Whether a job started from now on attends to the ring (True) or to the sink only (False:
        native/kv_cache.h, A JOB WITHOUT THE STREAM). Engines without the choice always see the ring."""
        return bool(getattr(self._e, "job_sees_stream", True))

    @job_sees_stream.setter
    def job_sees_stream(self, value: bool) -> None:
        if hasattr(self._e, "job_sees_stream"):
            self._e.job_sees_stream = bool(value)

    # --- jobs in scratch ---------------------------------------------------------------------

    def forward_scratch(self, tokens: Sequence[int], all_logits: bool = False) -> np.ndarray:
        toks = _tokens(tokens)
        out = np.empty((toks.size, self.n_vocab) if all_logits else self.n_vocab, dtype=np.float32)
        t0 = time.perf_counter()
        self._e.forward_scratch(toks, out, all_logits)
        self._note(toks.size, time.perf_counter() - t0)
        return out

    def rollback(self, n: int = 0) -> None:
        self._e.rollback(int(n))

    def forward_hidden(self, tokens: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(hidden [n_layer+1, T, n_embd]: after the embeddings, then after each layer (before the
        final norm); logits [T, n_vocab]) of a fresh scratch forward, rolled back after."""
        toks = _tokens(tokens)
        hidden = np.empty((self.n_layer + 1, toks.size, self.n_embd), dtype=np.float32)
        logits = np.empty((toks.size, self.n_vocab), dtype=np.float32)
        self._e.forward_hidden(toks, hidden, logits)
        return hidden, logits

    def generate(self, prompt_tokens: Sequence[int], max_tokens: int, temperature: float = 0.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int | None = None,
                 stop_tokens: Sequence[int] | None = None,
                 on_token: Callable[[int], bool | None] | None = None,
                 logits_processor=None, no_repeat_ngram: int = 0) -> GenerateResult:
        """Run prompt + answer in scratch, then roll scratch back to where it was: the one decode loop
        (gateway.llm.speculative) without a drafter. Greedy when temperature == 0. on_token(id) may
        return False to stop. Default stops: the tokenizer's end-of-turn ids."""
        params = SamplingParams(temperature, top_k, top_p)
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        stops = self.tokenizer.stop_ids if stop_tokens is None else stop_tokens
        return speculative_generate(self, None, list(_tokens(prompt_tokens)), max_tokens, params, seed,
                                    stop_tokens=sorted(int(t) for t in stops), on_token=on_token,
                                    detokenize=lambda ids: self.tokenizer.decode(ids, skip_special=True),
                                    logits_processor=logits_processor, no_repeat_ngram=no_repeat_ngram)

    @property
    def kv_policy(self) -> str:
        """The KV eviction policy the cache runs (kv_policy_requested: what was asked for)."""
        return self._e.kv_policy

    @property
    def policy(self) -> str:
        """kv_policy under its older name (one release, beside the `policy` keyword)."""
        warnings.warn("Engine.policy is now Engine.kv_policy", DeprecationWarning, stacklevel=2)
        return self.kv_policy

    def set_stream_importance(self, value: float) -> None:
        """Policy novelty: the importance of the stream tokens prefilled from now on (native/kv_cache.h)."""
        self._e.set_stream_importance(float(value))

    # --- bookkeeping -------------------------------------------------------------------------

    def stats(self) -> dict:
        e = self._e
        return {
            "n_sink": e.n_sink, "n_ring": e.n_ring, "n_scratch": e.n_scratch,
            "sink_used": e.sink_used, "ring_used": e.ring_used, "scratch_used": e.scratch_used,
            "stream_total": e.stream_total, "kv_policy": e.kv_policy, "kv_policy_requested": self.kv_policy_requested,
            "prefill_ms_per_tok_ema": self._prefill_ms.value, "decode_ms_per_tok_ema": self._decode_ms.value,
            "n_threads": e.n_threads, "simd": e.simd, "kv_bytes": e.kv_bytes, "act_precision": self.act_precision,
            "kernel_plan": kernel_plan.active()["plan"],
            **e.evict_stats,
        }
