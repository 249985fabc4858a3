"""Without a CUDA device the backend must step aside: cuda_available() is False (no error) and
constructing a CudaEngine fails with a clear message, so the CPU engine is chosen. Runs in CI."""

from __future__ import annotations

import pytest

from gateway import _native


def test_cuda_available_is_a_bool():
    if not hasattr(_native, "cuda_available"):
        pytest.skip("gateway._native built without the CUDA bindings (register_cuda not wired)")
    assert isinstance(_native.cuda_available(), bool)


def test_cuda_engine_refuses_cleanly_without_a_device(tmp_path):
    if not getattr(_native, "cuda_built", False) or not hasattr(_native, "CudaEngine"):
        pytest.skip("CUDA backend not built")
    if _native.cuda_available():
        pytest.skip("a CUDA device is present (tests/cuda/test_cuda_parity.py covers it)")
    with pytest.raises(RuntimeError, match="CUDA device 0 not available"):
        _native.CudaEngine(str(tmp_path / "missing.gguf"), n_sink=4, n_ring=64, n_scratch=64, kv_policy="sink_ring",
                           act_precision="q8x2")
