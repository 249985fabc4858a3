"""Draft-model drafter: a small model (Qwen2.5-Coder-0.5B) with its own sink + ring context of the stream.

One drafter, three backends behind the same engine-like object: `native` (a second
gateway.llm.engine.Engine), `onnx` (onnxruntime on the exported static graph), `rknn` (the same graph
converted for the RK3588 NPU, run by rknn-toolkit-lite2). Knows nothing about verification.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from gateway.llm.drafters.base import Drafter, Proposal
from gateway.llm.drafters.onnx_engine import OnnxDraftEngine, read_meta
from gateway.llm.drafters.rknn_runner import rknn_runner
from gateway.llm.engine import Engine
from gateway.llm.sampling import greedy_token, probs_from_logits, sample

log = logging.getLogger(__name__)

DRAFT_MODEL = "qwen2.5-coder-0.5b-instruct"
DRAFT_N_SCRATCH = 512        # job prompt + answer + one block, in the draft's own scratch
RKNN_DEVICE_NODES = ("/dev/rknpu", "/dev/dri/renderD129")   # RK3588 NPU (the latter: rknpu via DRM)
DRAFT_SEED_OFFSET = 0x5EED   # the draft's sampling stream must not replay the verifier's
# The native draft runs one int8 term per activation (gateway/llm/engine.py): the target verifies every
# draft, so the draft's precision moves only its acceptance rate, and it halves the integer work of the
# draft's batches (the stream it reads along, and its re-fed prompts).
DRAFT_ACT_PRECISION = "q8"
# The draft's ring is the plain one (the oldest tokens leave), as its graph backends (onnx, rknn) keep it.
DRAFT_KV_POLICY = "sink_ring"


def model_dir() -> Path:
    return Path(os.environ.get("LINEGATE_MODEL_DIR", Path.home() / ".cache" / "linegate" / "models"))


def default_paths(draft_model: str | None) -> tuple[Path, Path, Path]:
    """-> (gguf, onnx, rknn) paths: the graph files sit next to the GGUF, named after it."""
    gguf = Path(draft_model) if draft_model else model_dir() / f"{DRAFT_MODEL}.gguf"
    return gguf, gguf.with_suffix(".draft.onnx"), gguf.with_suffix(".draft.rknn")


def rknn_available() -> tuple[bool, str]:
    """(usable, why not): the NPU device node and rknnlite must both be present."""
    node = next((n for n in RKNN_DEVICE_NODES if os.path.exists(n)), None)
    if node is None:
        return False, f"no NPU device node ({' or '.join(RKNN_DEVICE_NODES)})"
    try:
        import rknnlite.api  # noqa: F401  (optional: only on the RK3588 board)
    except ImportError:
        return False, "rknn-toolkit-lite2 (rknnlite) is not installed"
    return True, ""


def rknn_ready(draft_model: str | None = None) -> tuple[bool, str]:
    """(the rknn drafter can start, why or why not): the NPU and rknnlite (rknn_available), the converted
    graph, and the exported ONNX graph whose metadata (cache shape) the runner needs."""
    ok, why = rknn_available()
    if not ok:
        return False, why
    _, onnx_path, rknn_path = default_paths(draft_model)
    for path, tool in ((rknn_path, "tools/convert/convert_draft_rknn.py"), (onnx_path, "tools/convert/export_draft_onnx.py")):
        if not path.is_file():
            return False, f"no draft graph at {path} ({tool})"
    node = next(n for n in RKNN_DEVICE_NODES if os.path.exists(n))
    return True, f"NPU at {node}, rknnlite and {rknn_path.name} present"


class ModelDrafter(Drafter):
    """Drafts k tokens one at a time from a draft engine; keeps the job's K/V in the draft's scratch
    across blocks and rolls back only past what verification rejected."""

    def __init__(self, engine, backend: str):
        self.engine = engine
        self.backend = backend
        self.name = f"model:{backend}"
        self.n_scratch = int(engine.stats()["n_scratch"]) if hasattr(engine, "stats") else int(engine.n_scratch)
        self._cached: list[int] = []              # job tokens whose K/V sit in the draft's scratch
        self._logits: np.ndarray | None = None    # draft logits after _cached, when known
        self._sampling = None
        self._rng = np.random.default_rng()

    @classmethod
    def create(cls, backend: str, *, draft_model: str | None = None, draft_onnx: str | None = None,
               n_sink: int = 4, n_ring: int = 2048, n_threads: int | None = None,
               n_scratch: int | None = None, act_precision: str | None = None) -> "ModelDrafter":
        gguf, onnx_path, rknn_path = default_paths(draft_model)
        n_scratch = n_scratch or DRAFT_N_SCRATCH
        onnx_path = Path(draft_onnx) if draft_onnx else onnx_path
        if backend == "rknn":
            ok, why = rknn_available()
            if ok and rknn_path.is_file():
                return cls(_graph_engine(onnx_path, n_sink, n_ring, n_scratch, runner=rknn_runner(rknn_path)), "rknn")
            if ok:
                why = f"no converted graph at {rknn_path} (tools/convert/convert_draft_rknn.py)"
            backend = "onnx" if onnx_path.is_file() else "native"
            log.warning("draft backend rknn unavailable (%s): falling back to %s", why, backend)
        if backend == "onnx":
            return cls(_graph_engine(onnx_path, n_sink, n_ring, n_scratch, n_threads=n_threads), "onnx")
        if not gguf.is_file():
            raise FileNotFoundError(f"draft model not found at {gguf}: run `linegate models pull {DRAFT_MODEL}`")
        return cls(Engine(str(gguf), n_sink=n_sink, n_ring=n_ring, n_scratch=n_scratch, n_threads=n_threads,
                          kv_policy=DRAFT_KV_POLICY, act_precision=act_precision or DRAFT_ACT_PRECISION), "native")

    # --- Drafter ---------------------------------------------------------------------------
    def push_stream(self, tokens: Sequence[int]) -> None:
        self.engine.prefill_stream(list(tokens))

    def begin_job(self, prompt_tokens, sampling, seed) -> None:
        self.engine.rollback(0)
        self._cached, self._logits, self._sampling = [], None, sampling
        self._rng = np.random.default_rng(None if seed is None else seed + DRAFT_SEED_OFFSET)

    def propose(self, context_tokens: Sequence[int], k: int) -> Proposal:
        context = [int(t) for t in context_tokens]
        room = self.n_scratch - len(context)
        if room <= 0:                      # the job outgrew the draft's scratch: stop drafting
            return [], None
        keep = _common_prefix(self._cached, context)
        if keep == len(context) and not (keep == len(self._cached) and self._logits is not None):
            keep -= 1                      # re-feed the last token: its logits are needed
        if keep < len(self._cached):
            self.engine.rollback(keep)
            self._cached = self._cached[:keep]
        logits = np.asarray(self.engine.forward_scratch(context[keep:])) if keep < len(context) else self._logits
        self._cached = context
        tokens, qs = [], []
        greedy = self._sampling is None or self._sampling.greedy
        for i in range(min(k, room)):
            if greedy:
                t = greedy_token(logits)
            else:
                q = probs_from_logits(logits, self._sampling)
                t = sample(q, self._rng)
                qs.append(q)
            tokens.append(t)
            if i + 1 < min(k, room):
                logits = np.asarray(self.engine.forward_scratch([t]))
                self._cached = self._cached + [t]
        self._logits = logits              # after _cached (the last draft was not fed)
        return tokens, (np.stack(qs) if qs else None)

    def end_job(self) -> None:
        self.engine.rollback(0)
        self._cached, self._logits = [], None

    def close(self) -> None:
        self.engine = None


def _graph_engine(onnx_path: Path, n_sink: int, n_ring: int, n_scratch: int, n_threads: int | None = None, runner=None):
    if not onnx_path.is_file():
        raise FileNotFoundError(f"draft graph not found at {onnx_path}: export it with "
                                f"`python tools/convert/export_draft_onnx.py --gguf <draft.gguf> --out {onnx_path}`")
    n_cache = read_meta(onnx_path)["n_cache"]
    # the draft's own ring: as much of the target's window as the graph's cache slots allow
    ring = min(n_ring, n_cache - n_sink - n_scratch)
    if ring < 1:
        raise ValueError(f"{onnx_path}: {n_cache} cache slots leave no ring after n_sink={n_sink} "
                         f"and n_scratch={n_scratch}; re-export with a larger --n-cache")
    return OnnxDraftEngine(onnx_path, n_sink, ring, n_scratch, n_threads=n_threads, runner=runner)


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
