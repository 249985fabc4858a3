#!/usr/bin/env bash
# The one prepared device run for the CUDA backend (issue 7): build gateway._native with CUDA for
# the device's python3, run the gpu-marked parity tests, tools/bench_cuda.py (with a per-kernel
# profile), then a compute-sanitizer memcheck of every engine path on SmolLM2-sized random weights.
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

stamp "parity tests"
timeout ${PARITY_S:-300} $PY -m pytest -q -m gpu tests/cuda -p no:cacheprovider --durations=5 2>&1 | tee "$OUT/parity.log"
test_rc=${PIPESTATUS[0]}
stamp "bench"
timeout ${BENCH_S:-240} $PY tools/bench_cuda.py --profile 2>&1 | tee "$OUT/bench.log"
bench_rc=${PIPESTATUS[0]}
tail -1 "$OUT/bench.log" > "$OUT/bench.json"

stamp "memcheck"
cat > /tmp/lg_smoke.py <<'PYEOF'
import sys, numpy as np
sys.path.insert(0, "tools"); sys.path.insert(0, ".")
import random_gguf
from gateway import _native
p = random_gguf.write_model(random_gguf.SMOLLM, "/tmp/lg_smoke.gguf", seed=1)
for prec in ("q8x2", "q8"):
    e = _native.CudaEngine(str(p), n_sink=4, n_ring=64, n_scratch=64, act_precision=prec, max_chunk=16)
    rng = np.random.default_rng(0)
    lg = np.empty(e.n_vocab, np.float32)
    e.prefill_stream(rng.integers(0, e.n_vocab, 90).astype(np.int32), lg)
    out = np.empty((20, e.n_vocab), np.float32)
    e.forward_scratch(rng.integers(0, e.n_vocab, 20).astype(np.int32), out, True)
    first = e.forward_scratch_next(np.asarray([5], np.int32))
    e.decode(first, 6)
    e.use_graph = False
    e.decode(first, 4, temperature=0.8, seed=3)
    e.rollback(0)
    print(prec, "smoke ok", int(out.argmax()), e.stream_checksum() & 0xffff)
PYEOF
timeout ${MEMCHECK_S:-150} compute-sanitizer --tool memcheck --leak-check no --error-exitcode 3 $PY /tmp/lg_smoke.py \
  2>&1 | tail -30 | tee "$OUT/memcheck.log"
mem_rc=${PIPESTATUS[0]}
stamp "done: parity tests rc=$test_rc, bench rc=$bench_rc, memcheck rc=$mem_rc"
exit $(( test_rc || bench_rc || mem_rc ))
