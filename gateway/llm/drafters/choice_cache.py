"""The drafter choice's cache: one small JSON file beside the kernel plan, keyed by what moves the timing.

What the timing depends on is its key: the CPU model and native build (gateway.llm.kernel_plan), the
target model file, the engine's threads and activation precision, and each candidate with the file it
runs (a new draft model or converted NPU graph re-times). A file whose key differs, or that does not
parse, is ignored with one log line and the choice is timed again. Knows nothing about timing.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Sequence

from gateway.llm import kernel_plan
from gateway.llm.drafters.model import default_paths

log = logging.getLogger(__name__)

CHOICE_FILE = "drafter_choice.json"
FORMAT = 1


def choice_path(cache_dir: str | os.PathLike) -> Path:
    return Path(cache_dir) / CHOICE_FILE


def file_id(path: str | os.PathLike | None) -> str:
    """A file's name and size: enough to tell another model or graph from the one timed."""
    if path is None:
        return "none"
    p = Path(path)
    try:
        return f"{p.name}:{p.stat().st_size}"
    except OSError:
        return f"{p.name}:missing"


def candidate_file(spec: str, draft_model: str | None = None) -> str:
    """The file a candidate runs ('' for none and ngram, which run no file of their own)."""
    gguf, onnx, rknn = default_paths(draft_model)
    return {"model:native": file_id(gguf), "model:onnx": file_id(onnx), "model:rknn": file_id(rknn)}.get(spec, "")


def choice_key(target_path: str | os.PathLike | None, n_threads: int, act_precision: str,
               candidates: Sequence[str], draft_model: str | None = None) -> dict:
    """What a cached choice must match to be reused (see the module's docstring)."""
    return {"cpu_model": kernel_plan.cpu_model(), "build_id": kernel_plan.build_id(), "target": file_id(target_path),
            "n_threads": int(n_threads), "act_precision": str(act_precision),
            "candidates": {spec: candidate_file(spec, draft_model) for spec in candidates}}


def mismatch(doc: object, key: dict) -> str | None:
    """Why `doc` cannot be reused under `key` (the first differing field), or None when it can."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("key"), dict):
        return f"not a format-{FORMAT} drafter choice"
    if not isinstance(doc.get("choice"), str):
        return "it names no choice"
    for field, want in key.items():
        have = doc["key"].get(field)
        if have != want:
            return f"timed with {field} {have!r}, this start has {want!r}"
    return None


def read(cache_dir: str | os.PathLike) -> dict | None:
    """The cached document as it is (None: no file, or unreadable, logged)."""
    path = choice_path(cache_dir)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("drafter choice %s ignored (unreadable: %s): timed again", path, exc)
        return None


def load(cache_dir: str | os.PathLike, key: dict) -> dict | None:
    """The cached choice when its key is `key`; else None (a stale file is logged, not removed)."""
    doc = read(cache_dir)
    if doc is None:
        return None
    why = mismatch(doc, key)
    if why is not None:
        log.info("drafter choice %s not reused (%s): timed again", choice_path(cache_dir), why)
        return None
    return doc


def save(doc: dict, cache_dir: str | os.PathLike) -> Path:
    """Write atomically (kernel_plan.write_json)."""
    return kernel_plan.write_json(doc, choice_path(cache_dir))


def document(key: dict, choice: str, why: str, figures: dict, skipped: dict, seconds: float) -> dict:
    return {"format": FORMAT, "key": key, "choice": choice, "why": why, "figures": figures, "skipped": skipped,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": round(seconds, 2)}


def default_dir() -> Path | None:
    """Where the appliance keeps remakeable files when its caller names no folder: the folder of the
    kernel plan this process loaded (<data_dir>/cache); None when none is loaded (nothing is cached)."""
    path = kernel_plan.active()["path"]
    return Path(path).parent if path else None
