"""Correctness gate: the native engine against tools/probes/reference.py (transformers, fp32, same GGUF)
on a 256-token Loghub excerpt: hidden state after every layer, logits, top-1, for one batched
forward (T = 256) and for token-by-token decode (bit-identical to the batched one)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from gateway.llm.engine import Engine
from gateway.settings import BARE_ENGINE

REPO = Path(__file__).resolve().parents[1]
N_TOKENS = 256
LOGHUB_SYSTEMS = ("HDFS", "Apache", "OpenSSH", "Linux")   # a few lines of each, interleaved
# Thresholds of the gate (issue 3).
MIN_COS_HIDDEN = 0.999
MIN_COS_LOGITS = 0.999
MIN_TOP1 = 0.99


def _load_reference_module():
    return importlib.import_module("tools.probes.reference")


def model_sha256(path: Path) -> str:
    """The verified stamp's sha256 when it matches this very file; otherwise hash the file."""
    st = path.stat()
    try:
        stamp = json.loads(path.with_name(path.name + ".verified").read_text())
        if stamp.get("size") == st.st_size and stamp.get("mtime_ns") == st.st_mtime_ns and stamp.get("sha256"):
            return stamp["sha256"]
    except (OSError, ValueError):
        pass
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def loghub_excerpt(loghub_dir: Path, n_lines: int = 12) -> str:
    lines = []
    for system in LOGHUB_SYSTEMS:
        with open(loghub_dir / system / f"{system}_2k.log", encoding="utf-8", errors="replace") as f:
            lines.append([next(f).rstrip("\n") for _ in range(n_lines)])
    return "\n".join(line for group in zip(*lines) for line in group) + "\n"


def reference_cached(gguf: Path, tokens: np.ndarray, artifacts: Path) -> dict:
    key = hashlib.sha256((model_sha256(gguf) + ":" + ",".join(map(str, tokens.tolist()))).encode()).hexdigest()[:20]
    cache = artifacts / f"reference_{gguf.stem}_{key}.npz"
    if cache.exists():
        with np.load(cache) as z:
            return {k: z[k] for k in z.files}
    ref = _load_reference_module().reference_forward(gguf, tokens)
    out = {"hidden": ref["hidden"], "logits": ref["logits"]}
    np.savez(cache, **out)
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def run_gate(gguf: Path, loghub_dir: Path, artifacts: Path) -> dict:
    eng = Engine(gguf, n_sink=4, n_ring=64, n_scratch=N_TOKENS, max_chunk=N_TOKENS, **BARE_ENGINE.model_dump())
    tokens = np.array(eng.tokenizer.encode(loghub_excerpt(loghub_dir))[:N_TOKENS], dtype=np.int32)
    assert tokens.size == N_TOKENS, "the Loghub excerpt must hold enough tokens"
    ref = reference_cached(gguf, tokens, artifacts)
    hidden, logits = eng.forward_hidden(tokens)                 # one batched T = 256 forward
    decoded = np.stack([eng.forward_scratch([t]) for t in tokens])   # token by token in scratch
    eng.rollback(0)
    cos_h = cosine(hidden, ref["hidden"])                        # [n_layer+1, T]
    cos_l = cosine(logits, ref["logits"])
    report = {
        "model": gguf.stem,
        "min_cos_hidden": float(cos_h.min()),
        "worst_layer": int(cos_h.min(axis=1).argmin()),
        "min_cos_logits": float(cos_l.min()),
        "max_abs_logit_diff": float(np.abs(logits - ref["logits"]).max()),
        "top1_batched": float((logits.argmax(-1) == ref["logits"].argmax(-1)).mean()),
        "top1_decode": float((decoded.argmax(-1) == ref["logits"].argmax(-1)).mean()),
        "min_cos_logits_decode": float(cosine(decoded, ref["logits"]).min()),
        "decode_bit_identical": bool(np.array_equal(decoded, logits)),
    }
    print("\ncorrectness gate:", json.dumps(report))
    return report


def check(report: dict) -> None:
    assert report["decode_bit_identical"], "token-by-token decode differs from the batched forward"
    assert report["min_cos_hidden"] >= MIN_COS_HIDDEN, report
    assert report["min_cos_logits"] >= MIN_COS_LOGITS, report
    assert report["top1_batched"] >= MIN_TOP1 and report["top1_decode"] >= MIN_TOP1, report


@pytest.mark.models
def test_gate_smollm2(smollm_path, loghub_dir, artifacts_dir):
    check(run_gate(smollm_path, loghub_dir, artifacts_dir))


@pytest.mark.models
def test_gate_qwen05(qwen05_path, loghub_dir, artifacts_dir):
    check(run_gate(qwen05_path, loghub_dir, artifacts_dir))


@pytest.mark.models
@pytest.mark.slow
def test_gate_qwen15(qwen15_path, loghub_dir, artifacts_dir):
    check(run_gate(qwen15_path, loghub_dir, artifacts_dir))
