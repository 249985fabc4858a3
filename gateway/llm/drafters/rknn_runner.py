"""Runs the converted draft graph (.rknn) on the RK3588 NPU through rknn-toolkit-lite2 (RKNNLite).

Same feeds and outputs as the onnxruntime runner in onnx_engine.py; knows nothing about the cache.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gateway.llm.drafters.onnx_engine import INPUT_ORDER, Runner


def rknn_runner(rknn_path: Path) -> Runner:
    from rknnlite.api import RKNNLite   # only on the board; model.rknn_available() checked it

    rt = RKNNLite()
    if rt.load_rknn(str(rknn_path)) != 0:
        raise RuntimeError(f"RKNNLite could not load {rknn_path}")
    if rt.init_runtime(core_mask=RKNNLite.NPU_CORE_AUTO) != 0:
        raise RuntimeError(f"RKNNLite could not start the NPU runtime for {rknn_path}")

    def run(feeds: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        logits, k_new, v_new = rt.inference(inputs=[feeds[name] for name in INPUT_ORDER], data_format="nchw")
        return np.asarray(logits, np.float32), np.asarray(k_new, np.float32), np.asarray(v_new, np.float32)
    return run
