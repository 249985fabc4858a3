"""An engine-like draft model over the static graph of tools/convert/export_draft_onnx.py (onnxruntime or RKNN).

Owns the host side of the graph: the sink + ring + scratch K/V slots, their RoPE positions (by age,
as the native engine) and the validity mask. Knows nothing about what the graph computes inside.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from gateway.llm.cpus import default_threads

log = logging.getLogger(__name__)

Runner = Callable[[dict], tuple[np.ndarray, np.ndarray, np.ndarray]]   # feeds -> (logits, k_new, v_new)


def read_meta(onnx_path: Path) -> dict:
    import onnx   # optional, heavy: only when a graph draft is used
    model = onnx.load(str(onnx_path), load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    needed = ("chunk", "n_cache", "n_layer", "n_head_kv", "head_dim", "n_vocab", "mask_neg")
    missing = [k for k in needed if k not in meta]
    if missing:
        raise ValueError(f"{onnx_path}: not a linegate draft graph (metadata lacks {', '.join(missing)}); "
                         "export it with tools/convert/export_draft_onnx.py")
    return {k: (float(meta[k]) if k == "mask_neg" else int(meta[k])) for k in needed} | {"arch": meta.get("arch", "?")}


def onnxruntime_runner(onnx_path: Path, n_threads: int | None) -> Runner:
    import onnxruntime as ort   # optional, heavy: only for the onnx draft backend
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = n_threads or default_threads()
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])

    def run(feeds: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        logits, k_new, v_new = sess.run(["logits", "k_new", "v_new"], feeds)
        return logits, k_new, v_new
    return run


INPUT_ORDER = ("tokens", "positions", "cache_positions", "mask", "k_cache", "v_cache")


class OnnxDraftEngine:
    """The subset of gateway.llm.engine.Engine a drafter needs: prefill_stream, forward_scratch, rollback."""

    def __init__(self, onnx_path: str | Path, n_sink: int, n_ring: int, n_scratch: int,
                 n_threads: int | None = None, runner: Runner | None = None):
        onnx_path = Path(onnx_path)
        if not onnx_path.is_file():
            raise FileNotFoundError(f"draft graph not found: {onnx_path} (export it with tools/convert/export_draft_onnx.py)")
        m = read_meta(onnx_path)
        self.chunk, self.n_cache, self.n_vocab, self.mask_neg = m["chunk"], m["n_cache"], m["n_vocab"], m["mask_neg"]
        if n_sink + n_ring + n_scratch > self.n_cache:
            raise ValueError(f"{onnx_path}: n_sink + n_ring + n_scratch = {n_sink + n_ring + n_scratch} exceeds "
                             f"the graph's {self.n_cache} cache slots (re-export with --n-cache)")
        self.n_sink, self.n_ring, self.n_scratch = n_sink, n_ring, n_scratch
        shape = (m["n_layer"], m["n_head_kv"], self.n_cache, m["head_dim"])
        self.k = np.zeros(shape, np.float32)    # [L, Hkv, S, D] un-rotated keys
        self.v = np.zeros(shape, np.float32)
        self.run = runner or onnxruntime_runner(onnx_path, n_threads)
        self.sink_used = 0
        self.ring_pos: list[int] = []   # stream positions held in the ring, oldest first
        self.stream_total = 0
        self.scratch_len = 0

    # slots: sink [0, n_sink), ring [n_sink, n_sink + n_ring) by pos % n_ring, scratch after
    def _ring_slot(self, pos: int) -> int:
        return self.n_sink + (pos - self.n_sink) % self.n_ring

    @property
    def stream_len(self) -> int:
        return self.sink_used + len(self.ring_pos)

    def _context(self) -> tuple[np.ndarray, np.ndarray]:
        """-> (valid [S] bool, cache_positions [S]): positions by age, sink 0.. then ring then scratch."""
        valid = np.zeros(self.n_cache, bool)
        pos = np.zeros(self.n_cache, np.float32)
        valid[:self.sink_used] = True
        pos[:self.sink_used] = np.arange(self.sink_used)
        for age, p in enumerate(self.ring_pos):
            slot = self._ring_slot(p)
            valid[slot] = True
            pos[slot] = self.sink_used + age
        base = self.n_sink + self.n_ring
        valid[base:base + self.scratch_len] = True
        pos[base:base + self.scratch_len] = self.stream_len + np.arange(self.scratch_len)
        return valid, pos

    def _run_chunk(self, tokens: Sequence[int], first_pos: int, slots: list[int]) -> np.ndarray:
        """One graph run over <= chunk tokens; writes their K/V into `slots`. -> logits [c, V]."""
        c, C, S = len(tokens), self.chunk, self.n_cache
        valid, cache_pos = self._context()
        mask = np.full((C, S + C), self.mask_neg, np.float32)
        mask[:, :S][:, valid] = 0.0
        mask[:, S:][np.tril(np.ones((C, C), bool))] = 0.0   # causal inside the chunk; padding rows see themselves
        feeds = {"tokens": np.zeros(C, np.int64), "positions": np.zeros(C, np.float32),
                 "cache_positions": cache_pos, "mask": mask, "k_cache": self.k, "v_cache": self.v}
        feeds["tokens"][:c] = tokens
        feeds["positions"][:] = first_pos + np.arange(C)
        logits, k_new, v_new = self.run(feeds)
        self.k[:, :, slots, :] = k_new[:, :, :c, :]
        self.v[:, :, slots, :] = v_new[:, :, :c, :]
        return logits[:c]

    def prefill_stream(self, tokens: Sequence[int]) -> np.ndarray:
        assert self.scratch_len == 0, "the stream grows only between jobs"
        toks = [int(t) for t in tokens]
        logits = np.zeros((0, self.n_vocab), np.float32)
        i = 0
        while i < len(toks):
            n = min(self.chunk, len(toks) - i, self.n_ring)
            in_sink = self.sink_used < self.n_sink
            if in_sink:                       # a chunk never straddles sink and ring
                n = min(n, self.n_sink - self.sink_used)
            positions = list(range(self.stream_total, self.stream_total + n))
            slots = positions if in_sink else [self._ring_slot(p) for p in positions]
            if not in_sink:                   # evict first: the chunk must not see what its slots overwrite
                overflow = len(self.ring_pos) + n - self.n_ring
                if overflow > 0:
                    del self.ring_pos[:overflow]
            logits = self._run_chunk(toks[i:i + n], self.stream_len, slots)
            if in_sink:
                self.sink_used += n
            else:
                self.ring_pos.extend(positions)
            self.stream_total += n
            i += n
        return logits[-1] if len(logits) else logits

    def forward_scratch(self, tokens: Sequence[int], all_logits: bool = False) -> np.ndarray:
        toks = [int(t) for t in tokens]
        if self.scratch_len + len(toks) > self.n_scratch:
            raise ValueError(f"draft scratch full: {self.scratch_len} + {len(toks)} tokens > n_scratch={self.n_scratch}")
        rows = []
        for i in range(0, len(toks), self.chunk):
            part = toks[i:i + self.chunk]
            base = self.n_sink + self.n_ring + self.scratch_len
            rows.append(self._run_chunk(part, self.stream_len + self.scratch_len, list(range(base, base + len(part)))))
            self.scratch_len += len(part)
        out = np.concatenate(rows)
        return out if all_logits else out[-1]

    def rollback(self, n: int = 0) -> None:
        assert 0 <= n <= self.scratch_len, f"rollback({n}) beyond scratch_len={self.scratch_len}"
        self.scratch_len = n
