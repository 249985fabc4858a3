#!/usr/bin/env bash
# The one prepared device run for the CUDA backend (issue 7): build gateway._native with CUDA for
# the device's python3, run the gpu-marked parity tests, tools/bench/bench_cuda.py (with a per-kernel
# profile), a compute-sanitizer memcheck of every engine path on SmolLM2-sized random weights, then
# Nsight Compute on a few kernels of one layer (a 32-token chunk and a decode step of the 1.5B shapes).
# Usage on the device machine (repo root), carrying .whl (the gguf wheel, prepared here once with
#   .venv/bin/pip download --no-deps --only-binary=:all: -d .whl gguf==0.19.0):
#   bash tools/device_run.sh            # logs and bench JSON land in $OUT (or /tmp/lg_out)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/lg_out}
mkdir -p "$OUT"
PY=${PY:-python3}
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"

if ! $PY -c "import gguf" 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/gguf-*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

stamp "build"
cmake -S . -B /tmp/lg_build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v $PY)" \
  -Dpybind11_DIR="$($PY -m pybind11 --cmakedir)" > "$OUT/build.log" 2>&1 \
  && cmake --build /tmp/lg_build -j16 >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
cp /tmp/lg_build/_native*.so gateway/
stamp "built"
$PY -c "from gateway import _native as n; print('cuda_built', n.cuda_built, 'cuda_available', n.cuda_available())"

stamp "smoke"
cat > /tmp/lg_smoke.py <<'PYEOF'
import sys, numpy as np
sys.path.insert(0, "tools"); sys.path.insert(0, ".")
import random_gguf
from gateway import _native
p = random_gguf.write_model(random_gguf.SMOLLM, "/tmp/lg_smoke.gguf", seed=1)
for prec, mma, pdl in (("q8x2", True, True), ("q8", True, False), ("q8x2", False, False)):
    e = _native.CudaEngine(str(p), n_sink=4, n_ring=64, n_scratch=64, act_precision=prec, max_chunk=40)
    e.mma, e.pdl = mma, pdl
    rng = np.random.default_rng(0)
    lg = np.empty(e.n_vocab, np.float32)
    e.prefill_stream(rng.integers(0, e.n_vocab, 90).astype(np.int32), lg)
    out = np.empty((20, e.n_vocab), np.float32)
    e.forward_scratch(rng.integers(0, e.n_vocab, 20).astype(np.int32), out, True)
    first = e.forward_scratch_next(np.asarray([5, 6, 7], np.int32))
    e.decode(first, 6)
    e.use_graph = False
    e.decode(first, 4, temperature=0.8, seed=3)
    e.rollback(0)
    print(prec, "mma", mma, "pdl", pdl, "smoke ok", int(out.argmax()), e.stream_checksum() & 0xffff)
PYEOF
timeout ${SMOKE_S:-60} $PY /tmp/lg_smoke.py 2>&1 | tee "$OUT/smoke.log"
[ "${PIPESTATUS[0]}" = 0 ] || { stamp "smoke run failed: stopping here"; exit 1; }

stamp "parity tests"
timeout ${PARITY_S:-300} $PY -m pytest -q -m gpu tests/cuda -p no:cacheprovider --durations=5 2>&1 | tee "$OUT/parity.log"
test_rc=${PIPESTATUS[0]}
stamp "bench"
timeout ${BENCH_S:-240} $PY tools/bench/bench_cuda.py --profile 2>&1 | tee "$OUT/bench.log"
bench_rc=${PIPESTATUS[0]}
tail -1 "$OUT/bench.log" > "$OUT/bench.json"

stamp "memcheck"
timeout ${MEMCHECK_S:-150} compute-sanitizer --tool memcheck --leak-check no --error-exitcode 3 $PY /tmp/lg_smoke.py \
  2>&1 | tail -30 | tee "$OUT/memcheck.log"
mem_rc=${PIPESTATUS[0]}
stamp "ncu"
cat > /tmp/lg_probe.py <<'PYEOF'
# One engine on the bench's 1.5B-shaped file, launches in a fixed order: 4 stream chunks of 64, a
# 32-token scratch chunk, decode steps (no graph, no pdl: ncu times kernels one by one anyway).
import sys, numpy as np
from pathlib import Path
sys.path.insert(0, "tools"); sys.path.insert(0, ".")
import random_gguf
from gateway import _native
p = Path("/tmp/linegate_bench/qwen15_q4km_random.gguf")
if not p.exists():
    p.parent.mkdir(parents=True, exist_ok=True)
    random_gguf.write_model(random_gguf.QWEN15, p, seed=3)
e = _native.CudaEngine(str(p), n_sink=4, n_ring=2048, n_scratch=512)
e.pdl, e.use_graph, e.mma = False, False, True
rng = np.random.default_rng(0)
e.prefill_stream(rng.integers(0, e.n_vocab, 256).astype(np.int32))
e.decode(e.forward_scratch_next(rng.integers(0, e.n_vocab, 32).astype(np.int32)), 2)
PYEOF
# Matching launches: 168 per forward (14 layers with q, k, v apart: 7; 14 with q+k+v in one: 5), the
# lm head once after the scratch chunk. Layer 3 is the first plain layer: skip 4 x 168 + 21 for the
# 32-token chunk, 5 x 168 + 1 + 21 for the first decode step.
NCU="ncu --clock-control none --kernel-name regex:attn_partial|mm_mma_kernel|mm_q_kernel --launch-count 5
  --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats"
{ timeout ${NCU_S:-100} $NCU --launch-skip 693 $PY /tmp/lg_probe.py
  timeout ${NCU_S:-100} $NCU --launch-skip 862 $PY /tmp/lg_probe.py; } > "$OUT/ncu.txt" 2>&1
grep -E "^  [a-z_:<>]|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Stall" \
  "$OUT/ncu.txt" | head -80
stamp "done: parity tests rc=$test_rc, bench rc=$bench_rc, memcheck rc=$mem_rc"
exit $(( test_rc || bench_rc || mem_rc ))
