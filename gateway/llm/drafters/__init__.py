"""Drafters for speculative decoding, and `make_drafter` that builds one from a --draft spec.

Knows nothing about verification; gateway.llm.speculative drives whichever drafter this returns.
"""

from __future__ import annotations

from gateway.llm.drafters.base import Drafter, Proposal
from gateway.llm.drafters.deferred import DeferredDrafter
from gateway.llm.drafters.model import ModelDrafter
from gateway.llm.drafters.ngram import DEFAULT_N_RING, DEFAULT_N_SINK, NgramDrafter

DRAFT_KINDS = ("none", "ngram", "model")
MODEL_BACKENDS = ("native", "onnx", "rknn")

# Deferred (drafter on its own thread, drafting the next block while the target verifies) pays only when
# the two run on different processors (a model draft on the NPU, or any draft beside a CUDA target); on
# shared CPU cores the thread hop makes them compete. Measured: docs/perf/2026-11-30-drafter-defaults.md.
def deferred_default(kind: str, draft_backend: str | None, target_backend: str | None) -> bool:
    """The faster pipeline when the caller does not choose: see above."""
    if kind != "model":
        return False
    return draft_backend == "rknn" or target_backend == "cuda"


__all__ = ["Drafter", "Proposal", "make_drafter", "deferred_default", "parse_draft_spec", "DRAFT_KINDS",
           "MODEL_BACKENDS"]


def parse_draft_spec(spec: str) -> tuple[str, str | None]:
    """'none' | 'ngram' | 'model' | 'model:native|onnx|rknn' -> (kind, backend)."""
    kind, _, backend = (spec or "none").partition(":")
    if kind not in DRAFT_KINDS:
        raise ValueError(f"--draft: unknown drafter {kind!r}; expected one of {', '.join(DRAFT_KINDS)}")
    if backend and kind != "model":
        raise ValueError(f"--draft: only 'model' takes a backend, got {spec!r}")
    if backend and backend not in MODEL_BACKENDS:
        raise ValueError(f"--draft: unknown model backend {backend!r}; expected one of {', '.join(MODEL_BACKENDS)}")
    return kind, (backend or ("native" if kind == "model" else None))


def make_drafter(spec: str, target_engine=None, *, draft_model: str | None = None,
                 draft_onnx: str | None = None, deferred: bool | None = None, n_threads: int | None = None,
                 n_scratch: int | None = None, draft_precision: str | None = None):
    """'none' -> None; 'ngram'; 'model[:native|onnx|rknn]' (the draft keeps its own stream context).
    draft_precision: the native draft's activation precision (default DRAFT_ACT_PRECISION)."""
    kind, backend = parse_draft_spec(spec)
    if kind == "none":
        return None
    n_sink, n_ring = _stream_shape(target_engine)
    if kind == "ngram":
        drafter: Drafter = NgramDrafter(n_sink=n_sink, n_ring=n_ring)
    else:
        drafter = ModelDrafter.create(backend, draft_model=draft_model, draft_onnx=draft_onnx,
                                      n_sink=n_sink, n_ring=n_ring, n_threads=n_threads,
                                      n_scratch=n_scratch, act_precision=draft_precision)
        if target_engine is not None and drafter.engine.n_vocab != target_engine.n_vocab:
            raise ValueError(f"draft model ({drafter.engine.n_vocab} tokens) and target ({target_engine.n_vocab} "
                             "tokens) do not share a tokenizer; pass --draft-model with the target's family")
    if deferred is None:
        deferred = deferred_default(kind, getattr(drafter, "backend", None), getattr(target_engine, "backend", None))
    if deferred:
        drafter = DeferredDrafter(drafter)
    return drafter


def _stream_shape(engine) -> tuple[int, int]:
    """The target's sink/ring sizes, so drafters mirror the same window of the stream."""
    if engine is None:
        return DEFAULT_N_SINK, DEFAULT_N_RING
    stats = engine.stats()
    return int(stats["n_sink"]), int(stats["n_ring"])
