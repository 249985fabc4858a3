"""Drafters for speculative decoding, and `make_drafter` that builds one from a --draft spec.

Knows nothing about verification; gateway.llm.speculative drives whichever drafter this returns.
"""

from __future__ import annotations

import os

from gateway.llm.drafters.base import Drafter, Proposal
from gateway.llm.drafters.choice import candidate_specs, choose_drafter
from gateway.llm.drafters.deferred import DeferredDrafter
from gateway.llm.drafters.model import ModelDrafter, rknn_ready
from gateway.llm.drafters.ngram import DEFAULT_N_RING, DEFAULT_N_SINK, NgramDrafter

DRAFT_KINDS = ("none", "ngram", "model")
MODEL_BACKENDS = ("native", "onnx", "rknn")
# What the appliance runs when `model:rknn` cannot start (engine.drafter_fallback); "error" refuses to start.
DRAFT_FALLBACKS = ("ngram", "none", "error")

# Deferred (drafter on its own thread, drafting the next block while the target verifies) pays only when
# the two run on different processors (a model draft on the NPU, or any draft beside a CUDA target); on
# shared CPU cores the thread hop makes them compete. Measured: docs/perf/2026-11-30-drafter-defaults.md.
def deferred_default(kind: str, draft_backend: str | None, target_backend: str | None) -> bool:
    """The faster pipeline when the caller does not choose: see above."""
    if kind != "model":
        return False
    return draft_backend == "rknn" or target_backend == "cuda"


__all__ = ["Drafter", "Proposal", "make_drafter", "choose_drafter", "deferred_default", "parse_draft_spec", "resolve_draft_spec",
           "DRAFT_KINDS", "MODEL_BACKENDS", "DRAFT_FALLBACKS"]


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


def resolve_draft_spec(spec: str, fallback: str = "ngram", draft_model: str | None = None) -> tuple[str, str]:
    """The appliance's configured drafter -> (the spec that runs, why). `auto` stays "auto": make_drafter
    chooses on the loaded target by timing target-only, ngram and the model draft where it can run
    (drafters.choice), or reuses the cached choice. `model:rknn`: the NPU, or `fallback` when it cannot
    start ("error": ValueError naming what is missing)."""
    if fallback not in DRAFT_FALLBACKS:
        raise ValueError(f"drafter fallback {fallback!r}: expected one of {', '.join(DRAFT_FALLBACKS)}")
    if spec == "auto":   # make_drafter times the candidates on the target (or reuses the cached choice)
        specs, skipped = candidate_specs(draft_model)
        why = f"chosen by timing {', '.join(specs)} at first start, then cached"
        return "auto", why + "".join(f"; no {s} ({w})" for s, w in skipped.items())
    kind, backend = parse_draft_spec(spec)
    if backend != "rknn":
        return spec, "configured"
    ok, why = rknn_ready(draft_model)
    if ok:
        return "model:rknn", why
    if fallback == "error":
        raise ValueError(f"drafter {spec!r} cannot start: {why}. On an RK3588: install rknn-toolkit-lite2 and convert "
                         "the draft (tools/convert/convert_draft_rknn.py); or set engine.drafter_fallback = \"ngram\"")
    return fallback, f"{spec} unavailable ({why}): fallback {fallback}"


def make_drafter(spec: str, target_engine=None, *, draft_model: str | None = None,
                 draft_onnx: str | None = None, deferred: bool | None = None, n_threads: int | None = None,
                 n_scratch: int | None = None, draft_precision: str | None = None,
                 choice_dir: str | os.PathLike | None = None, choice_timing: str = "auto"):
    """'none' -> None; 'ngram'; 'model[:native|onnx|rknn]' (the draft keeps its own stream context);
    'auto': the candidate fastest on target_engine (drafters.choice; cached in choice_dir, default
    beside the loaded kernel plan; choice_timing auto|on|off), labelled with `.choice`.
    draft_precision: the native draft's activation precision (default DRAFT_ACT_PRECISION)."""
    if spec == "auto":
        if target_engine is None:
            raise ValueError("drafter 'auto' is chosen by timing the target: pass the target engine")
        return choose_drafter(target_engine, lambda s: make_drafter(
            s, target_engine, draft_model=draft_model, draft_onnx=draft_onnx, deferred=deferred, n_threads=n_threads,
            n_scratch=n_scratch, draft_precision=draft_precision), draft_model=draft_model, cache_dir=choice_dir,
            timing=choice_timing)
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
