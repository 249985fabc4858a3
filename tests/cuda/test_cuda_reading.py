"""The CUDA engine does not read the stream during a job (issue 42 part 3; native/kv_cache.h, READING DURING
A JOB): it says so (reads_during_jobs False, the engine thread then reads between jobs only) and keeps
refusing prefill_stream while scratch holds a job. Needs a CUDA device (marker gpu)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from gateway import _native  # noqa: E402

if not getattr(_native, "cuda_built", False) or not _native.cuda_available():
    pytest.skip("no CUDA device (or the CUDA backend was not built)", allow_module_level=True)

from tools.convert import random_gguf  # noqa: E402


def test_the_cuda_engine_waits_for_the_job(tmp_path):
    spec = random_gguf.SPECS["smollm2-135m"]
    path = random_gguf.write_model(spec, tmp_path / f"{spec.name}.gguf", seed=7)
    gpu = _native.CudaEngine(str(path), n_sink=4, n_ring=64, n_scratch=32, kv_policy="sink_ring", act_precision="q8x2")
    assert gpu.reads_during_jobs is False and gpu.job_view_lost == 0
    gpu.prefill_stream(np.arange(10, 30, dtype=np.int32))
    gpu.forward_scratch(np.arange(40, 44, dtype=np.int32))
    with pytest.raises(RuntimeError, match="rollback"):
        gpu.prefill_stream(np.arange(50, 54, dtype=np.int32))
    gpu.rollback(0)
    gpu.prefill_stream(np.arange(50, 54, dtype=np.int32))
