"""Drafters for speculative decoding, and `make_drafter` that builds one from a --draft spec.

Knows nothing about verification; gateway.speculative drives whichever drafter this returns.
"""

from __future__ import annotations

from gateway.drafters.base import Drafter, Proposal

# Deferred (drafter on its own thread) or serial, per drafter kind: the faster one measured by
# tools/bench_spec.py on the 2-core dev box (Qwen 1.5B target, 2 threads, greedy, 3 log tasks, 128 new
# tokens): model:native 3.21 -> 4.76 tok/s with the pipeline (x1.48); n-gram 5.57 -> 5.64 (x1.01, noise:
# its drafting costs ~0.2 ms/token, so the thread hop buys nothing and serial stays the simpler default).
DEFERRED_DEFAULT = {"ngram": False, "model": True}

__all__ = ["Drafter", "Proposal", "make_drafter", "DEFERRED_DEFAULT"]


def make_drafter(spec: str, target_engine=None, *, draft_model: str | None = None,
                 draft_onnx: str | None = None, deferred: bool | None = None, n_threads: int | None = None,
                 n_scratch: int | None = None, draft_precision: str | None = None):
    """'none' -> None; 'ngram'; 'model[:native|onnx|rknn]' (the draft keeps its own stream context).
    draft_precision: the native draft's activation precision (default DRAFT_ACT_PRECISION)."""
    from gateway.speculative import parse_draft_spec

    kind, backend = parse_draft_spec(spec)
    if kind == "none":
        return None
    n_sink, n_ring = _stream_shape(target_engine)
    if kind == "ngram":
        from gateway.drafters.ngram import NgramDrafter
        drafter: Drafter = NgramDrafter(n_sink=n_sink, n_ring=n_ring)
    else:
        from gateway.drafters.model import ModelDrafter
        drafter = ModelDrafter.create(backend, draft_model=draft_model, draft_onnx=draft_onnx,
                                      n_sink=n_sink, n_ring=n_ring, n_threads=n_threads,
                                      n_scratch=n_scratch, act_precision=draft_precision)
        if target_engine is not None and drafter.engine.n_vocab != target_engine.n_vocab:
            raise ValueError(f"draft model ({drafter.engine.n_vocab} tokens) and target ({target_engine.n_vocab} "
                             "tokens) do not share a tokenizer; pass --draft-model with the target's family")
    if DEFERRED_DEFAULT[kind] if deferred is None else deferred:
        from gateway.drafters.deferred import DeferredDrafter
        drafter = DeferredDrafter(drafter)
    return drafter


def _stream_shape(engine) -> tuple[int, int]:
    """The target's sink/ring sizes, so drafters mirror the same window of the stream."""
    from gateway.drafters.ngram import DEFAULT_N_RING, DEFAULT_N_SINK
    if engine is None:
        return DEFAULT_N_SINK, DEFAULT_N_RING
    stats = engine.stats()
    return int(stats["n_sink"]), int(stats["n_ring"])
