"""Load cost and memory of packed weights (quant.h: pack_weights): builds the engine for MODEL with
LINEGATE_PACK_WEIGHTS as set by the caller, runs one 3-token forward (every weight page touched), and prints one
JSON line: matrices packed, engine construction seconds, VmRSS / VmHWM / RssAnon / RssFile in MiB. Run it with
LINEGATE_PACK_WEIGHTS=0 and =1 on the same host; packing must move the weights from RssFile to RssAnon without
growing VmRSS or VmHWM, and the logit printed must not change.

    LINEGATE_PACK_WEIGHTS=1 .venv/bin/python tools/bench/arm/pack_rss.py qwen2.5-coder-1.5b-instruct
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from gateway import _native
from gateway.llm.models import resolve_model


def status_mib() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, val = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(val.split()[0]) // 1024
    return out


def main(model: str) -> None:
    t0 = time.perf_counter()
    e = _native.Engine(str(resolve_model(model)), n_sink=4, n_ring=64, n_scratch=32, kv_policy="sink_ring",
                       act_precision="q8x2", n_threads=2)
    load_s = time.perf_counter() - t0
    logits = np.empty(e.n_vocab, np.float32)
    e.forward_scratch(np.array([1, 2, 3], np.int32), logits, False)
    print(json.dumps({"model": model, "pack_env": os.environ.get("LINEGATE_PACK_WEIGHTS"), "simd": e.simd,
                      "packed_matrices": e.packed_matrices, "load_s": round(load_s, 2), "mib": status_mib(),
                      "logit0": float(logits[0])}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "qwen2.5-coder-1.5b-instruct")
