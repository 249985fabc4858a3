"""The calibrated kernel plan (FFTW's "wisdom"): which matmul kernel variant runs each of the engine's
shapes on this machine, chosen by timing the variants on the model's own matrices.

Why: the static plan (native/quant/x86/plan.h) was tuned on a few CPUs, and a kernel fast on one core
can be slow on another (issue 28: the one-token Q4_K kernel on Zen 4). Every variant of a shape gives
the same bits (native/quant/variants.cpp; tests/native/test_kernel_variants.py), so a plan changes
speed only, never output. The plan is a small JSON file keyed by CPU model and build (the module's
hash); a file for another CPU or build, or one that does not parse, is ignored with one log line and
the static plan runs. `linegate doctor --calibrate` writes it; the engine thread loads it at start and,
when its setting allows, calibrates at first start (never under pytest unless asked).
Knows nothing about the appliance: callers pass the folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from gateway import _native

log = logging.getLogger(__name__)

PLAN_FILE = "kernel_plan.json"
FORMAT = 1
BUDGET_S = 20.0              # the limit for a calibration on 2 cores
SAMPLE_BYTES = 128 << 20     # weights streamed per timing pass: far past the caches, as in a decode step
# Decode first, then verification batches (1 + drafts): one draft, four, eight, then the sizes between.
TOKENS = (1, 2, 5, 9, 3, 4, 8)
REPS = 4                     # timing passes per variant (min taken), variants interleaved
SCREEN = 1.4                 # after one pass, variants slower than this times the best are dropped
CONFIRM = 3                  # head-to-head passes of the winner and static before the winner is kept
MIN_GAIN = 0.05              # a variant replaces the static choice only when this much faster
ROW_ALIGN = 16               # the engine's row split (native/forward.cpp)
RECORDS_PER_VECTOR = {"q8": 1, "q8x2": 2}
_active = {"plan": "static", "path": None}   # what this process runs (active())


def cpu_model() -> str:
    """The CPU's name with its family/model/stepping (x86) or part numbers (arm64): the plan's key."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""

    def field(name: str) -> str:
        m = re.search(rf"^{name}\s*:\s*(.*)$", text, re.M)
        return m.group(1).strip() if m else ""
    if field("model name"):
        return f"{field('model name')} (family {field('cpu family')} model {field('model')} stepping {field('stepping')})"
    parts = sorted(set(re.findall(r"^CPU part\s*:\s*(\S+)", text, re.M)))
    return f"{platform.machine()} parts {','.join(parts)}" if parts else platform.machine() or "unknown"


def build_id() -> str:
    """The native module's SIMD kind and a hash of its file: a rebuild invalidates old plans."""
    h = hashlib.sha256()
    with open(_native.__file__, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"{_native.quant_simd_name()}-{h.hexdigest()[:16]}"


def plan_path(cache_dir: str | os.PathLike) -> Path:
    return Path(cache_dir) / PLAN_FILE


def active() -> dict:
    """{"plan": "static" | "calibrated", "path": the loaded file or None}."""
    return dict(_active)


def reset() -> None:
    """Back to the static plan for every shape."""
    _native.clear_kernel_variants()
    _active.update(plan="static", path=None)


# ---- loading --------------------------------------------------------------------------------------

def _check(doc: object, cpu: str, build: str, precision: str | None = None) -> str | None:
    """Why `doc` cannot be this machine's plan, or None when it can."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return f"not a format-{FORMAT} kernel plan"
    if precision is not None and doc.get("precision") != precision:
        # its record counts are another precision's (a token is RECORDS_PER_VECTOR records)
        return f"timed at activation precision {doc.get('precision')!r}, the engine runs {precision!r}"
    if doc.get("cpu_model") != cpu:
        return f"made for CPU {doc.get('cpu_model')!r}, this is {cpu!r}"
    if doc.get("build_id") != build:
        return f"made for build {doc.get('build_id')!r}, this is {build!r}"
    choices = doc.get("choices")
    if not isinstance(choices, list) or not all(
            isinstance(c, dict) and isinstance(c.get("type_id"), int) and isinstance(c.get("K"), int)
            and isinstance(c.get("n_rec"), int) and isinstance(c.get("variant"), str) for c in choices):
        return "its choices are malformed"
    return None


def load(cache_dir: str | os.PathLike, precision: str | None = None) -> str:
    """Run the plan in cache_dir if it is this CPU's and build's (and, given, timed at this activation
    precision): "calibrated"; else "static" (a file that is there but unusable is ignored with one warning)."""
    path = plan_path(cache_dir)
    reset()
    if not path.exists():
        return "static"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("kernel plan %s ignored (unreadable: %s); the static plan runs", path, exc)
        return "static"
    why = _check(doc, cpu_model(), build_id(), precision)
    if why is None:
        try:
            for c in doc["choices"]:
                _native.set_kernel_variant(c["type_id"], c["K"], c["n_rec"], c["variant"])
        except ValueError as exc:
            reset()
            why = str(exc)
    if why is not None:
        log.warning("kernel plan %s ignored (%s); the static plan runs", path, why)
        return "static"
    _active.update(plan="calibrated", path=str(path))
    log.info("kernel plan %s loaded: %d shapes", path, len(doc["choices"]))
    return "calibrated"


# ---- calibration ----------------------------------------------------------------------------------

@dataclass
class Shape:
    type_id: int
    type_name: str
    K: int
    mats: list   # (raw uint8 weights, n_rows), the sample streamed per pass


def engine_shapes(gguf: _native.GGUFFile, sample_bytes: int = SAMPLE_BYTES) -> list[Shape]:
    """The (type, K) of every quantized matrix the forward multiplies by (layer weights and the output
    head; not the embedding table, a lookup), each with a sample of its matrices: whole layers, spread
    over the model, until sample_bytes (the output head whole, as the decode streams it)."""
    by_shape: dict[tuple[int, int], dict[str, list]] = {}
    for t in gguf.tensors:
        name = t.name
        if not name.endswith(".weight") or len(t.shape) != 2 or t.type_id not in (12, 14):  # Q4_K, Q6_K
            continue
        if not (name.startswith("blk.") or name == "output.weight"):
            continue
        layer = name.split(".")[1] if name.startswith("blk.") else "output"
        by_shape.setdefault((t.type_id, t.shape[0]), {}).setdefault(layer, []).append(t)
    shapes = []
    for (type_id, K), layers in sorted(by_shape.items()):
        keys = list(layers)
        order = keys[::2] + keys[1::2]   # every other layer first: spread over the model
        mats, total = [], 0
        for key in order:
            for t in layers[key]:
                mats.append((gguf.tensor_data(t.name), t.n_rows))
                total += t.nbytes
            if total >= sample_bytes:
                break
        shapes.append(Shape(type_id, layers[keys[0]][0].type, K, mats))
    return shapes


def _row_ranges(n_rows: int, n_threads: int) -> list[tuple[int, int]]:
    """The engine's split: contiguous ranges, boundaries rounded to ROW_ALIGN rows."""
    cuts = [min(n_rows, (n_rows * i // n_threads) // ROW_ALIGN * ROW_ALIGN) for i in range(n_threads)] + [n_rows]
    return [(cuts[i], cuts[i + 1]) for i in range(n_threads)]


def _time_pass(pool: ThreadPoolExecutor, n_threads: int, shape: Shape, acts, x) -> float:
    """Wall seconds for one pass over the shape's sample, rows split over n_threads (GIL released)."""
    def run(i: int) -> None:
        for W, n_rows in shape.mats:
            r0, r1 = _row_ranges(n_rows, n_threads)[i]
            _native.matmul(shape.type_id, W, n_rows, acts, x, r0, r1)
    t0 = time.perf_counter()
    list(pool.map(run, range(n_threads)))
    return time.perf_counter() - t0


def _calibrate_shape(pool, n_threads: int, shape: Shape, T: int, precision: str, deadline: float) -> dict | None:
    """Time every variant of (shape, T tokens); the choice and its figures, or None past the deadline.
    One screening pass each drops variants slower than SCREEN x the best; the rest run REPS passes,
    interleaved, min taken; a winner other than static must then beat it again, head to head
    (CONFIRM passes each), by MIN_GAIN: on a loaded host one lucky pass must not change the plan."""
    n_rec = T * RECORDS_PER_VECTOR[precision]
    names = _native.kernel_variants(shape.type_id, shape.K, n_rec)
    x = np.random.default_rng(T).standard_normal((T, shape.K)).astype(np.float32)
    acts = _native.prepare_acts(shape.type_id, x, ["q8", "q8x2"].index(precision))
    best = {name: float("inf") for name in names}
    extra: dict = {}

    def timed(name: str) -> bool:
        if time.monotonic() > deadline:
            return False
        _native.set_kernel_variant(shape.type_id, shape.K, n_rec, name)
        best[name] = min(best[name], _time_pass(pool, n_threads, shape, acts, x))
        return True
    try:
        if not all(timed(n) for n in names):
            return None
        live = [n for n in names if n == "static" or best[n] <= SCREEN * min(best.values())]
        for _ in range(REPS - 1):
            if not all(timed(n) for n in live):
                return None
        fastest = min(live, key=best.get)
        confirmed = fastest != "static" and best[fastest] < best["static"] * (1 - MIN_GAIN)
        if confirmed:
            head = {"static": float("inf"), fastest: float("inf")}
            for _ in range(CONFIRM):
                for n in head:
                    if time.monotonic() > deadline:
                        return None
                    _native.set_kernel_variant(shape.type_id, shape.K, n_rec, n)
                    head[n] = min(head[n], _time_pass(pool, n_threads, shape, acts, x))
            confirmed = head[fastest] < head["static"] * (1 - MIN_GAIN)
            extra = {"confirm_ms": {k: round(v * 1e3, 3) for k, v in head.items()}}
    finally:
        _native.set_kernel_variant(shape.type_id, shape.K, n_rec, "static")
    return {"type": shape.type_name, "type_id": shape.type_id, "K": shape.K, "n_rec": n_rec, "tokens": T,
            "variant": fastest if confirmed else "static",
            "ms": {k: round(v * 1e3, 3) for k, v in best.items() if v != float("inf")}, **extra}


def calibrate(model_path: str | os.PathLike, n_threads: int, precision: str = "q8x2", budget_s: float = BUDGET_S,
              heartbeat: Callable[[], None] | None = None) -> dict:
    """Time the variants of the engine's shapes on the model's matrices with n_threads threads, decode
    first, until budget_s; the plan document (not yet saved or loaded). Leaves the static plan running."""
    if precision not in RECORDS_PER_VECTOR:
        raise ValueError(f"precision must be one of {', '.join(RECORDS_PER_VECTOR)}, got {precision!r}")
    reset()
    t0 = time.monotonic()
    deadline = t0 + budget_s
    gguf = _native.GGUFFile(str(model_path))
    shapes = engine_shapes(gguf)
    choices, complete = [], True
    try:
        with ThreadPoolExecutor(n_threads) as pool:
            for T in TOKENS:
                for shape in shapes:
                    if heartbeat is not None:
                        heartbeat()
                    c = _calibrate_shape(pool, n_threads, shape, T, precision, deadline)
                    if c is None:
                        complete = False
                        break
                    choices.append(c)
                if not complete:
                    break
    finally:
        reset()
    return {"format": FORMAT, "cpu_model": cpu_model(), "build_id": build_id(), "simd": _native.quant_simd_name(),
            "precision": precision, "n_threads": n_threads, "model": Path(model_path).name,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": round(time.monotonic() - t0, 2),
            "complete": complete, "choices": choices}


def save(doc: dict, cache_dir: str | os.PathLike) -> Path:
    """Write the plan atomically."""
    return write_json(doc, plan_path(cache_dir))


def write_json(doc: dict, path: Path) -> Path:
    """A cache document written atomically (a reader never sees half a file); the drafter choice's too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def under_test() -> bool:
    return "PYTEST_CURRENT_TEST" in os.environ


def prepare(model_path: str | os.PathLike, n_threads: int, cache_dir: str | os.PathLike, mode: str = "auto",
            precision: str = "q8x2", heartbeat: Callable[[], None] | None = None) -> str:
    """At engine start: load this machine's plan; without one, calibrate first when mode allows it
    ("auto": not under pytest; "on": always; "off": never). Returns "calibrated" or "static"."""
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"kernel calibration mode must be auto, on or off, got {mode!r}")
    if load(cache_dir, precision) == "calibrated":
        return "calibrated"
    if mode == "off" or (mode == "auto" and under_test()):
        return "static"
    doc = calibrate(model_path, n_threads, precision, heartbeat=heartbeat)
    path = save(doc, cache_dir)
    log.info("kernel plan calibrated in %.1f s (%d shapes, complete: %s): %s", doc["seconds"], len(doc["choices"]),
             doc["complete"], path)
    return load(cache_dir, precision)
