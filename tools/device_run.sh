#!/usr/bin/env bash
# The one prepared device run for the CUDA backend (issue 7): build gateway._native with CUDA for
# the device's python3, run the gpu-marked parity tests, then tools/bench_cuda.py. ~6-8 minutes.
# Usage on the device machine (repo root): carry .whl (gguf wheel, see below) and run
#   bash tools/device_run.sh            # logs and bench JSON land in $OUT (or /tmp/lg_out)
# Prepare the wheel here once: .venv/bin/pip download --no-deps --only-binary=:all: -d .whl gguf==0.19.0
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/lg_out}
mkdir -p "$OUT"
PY=${PY:-python3}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

if ! $PY -c "import gguf" 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/gguf-*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

# Build from a copy of CMakeLists.txt + native/, applying the two integration edits if the tree
# does not have them yet (C++-only warning/arch flags; register_cuda in bindings.cpp; cuda_wip).
SRC=/tmp/lg_src
rm -rf "$SRC" && mkdir -p "$SRC" && cp -r CMakeLists.txt native "$SRC/"
if [ ! -d "$SRC/native/cuda" ] && [ -d "$SRC/native/cuda_wip" ]; then mv "$SRC/native/cuda_wip" "$SRC/native/cuda"; fi
grep -q 'COMPILE_LANGUAGE:CXX' "$SRC/CMakeLists.txt" || $PY - "$SRC/CMakeLists.txt" <<'PYEOF'
import sys
p = sys.argv[1]; s = open(p).read()
s = s.replace("PRIVATE -O3 -fno-math-errno -Wall -Wextra -Wno-unused-parameter)",
              'PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-O3;-fno-math-errno;-Wall;-Wextra;-Wno-unused-parameter>")')
s = s.replace("PRIVATE -mcpu=native)", 'PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-mcpu=native>")')
s = s.replace("PRIVATE -march=native)", 'PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-march=native>")')
open(p, "w").write(s)
PYEOF
grep -q 'register_cuda' "$SRC/native/bindings.cpp" || $PY - "$SRC/native/bindings.cpp" <<'PYEOF'
import sys
p = sys.argv[1]; s = open(p).read()
s = s.replace("PYBIND11_MODULE(_native, m) {",
              "#ifdef LINEGATE_HAVE_CUDA\nvoid register_cuda(py::module_& m);\n#endif\n\nPYBIND11_MODULE(_native, m) {")
s = s.replace('    m.attr("cuda_built") = true;', '    register_cuda(m);\n    m.attr("cuda_built") = true;')
open(p, "w").write(s)
PYEOF
t0=$(date +%s)
cmake -S "$SRC" -B /tmp/lg_build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v $PY)" \
  -Dpybind11_DIR="$($PY -m pybind11 --cmakedir)" > "$OUT/build.log" 2>&1 \
  && cmake --build /tmp/lg_build -j16 >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
cp /tmp/lg_build/_native*.so gateway/
echo "build: $(( $(date +%s) - t0 )) s"
$PY -c "from gateway import _native as n; print('cuda_built', n.cuda_built, 'cuda_available', n.cuda_available())"

timeout 300 $PY -m pytest -q -m gpu tests/cuda -p no:cacheprovider 2>&1 | tee "$OUT/parity.log"
test_rc=${PIPESTATUS[0]}
timeout 240 $PY tools/bench_cuda.py 2>&1 | tee "$OUT/bench.log"
bench_rc=${PIPESTATUS[0]}
tail -1 "$OUT/bench.log" > "$OUT/bench.json"
echo "parity tests rc=$test_rc, bench rc=$bench_rc"
exit $(( test_rc || bench_rc ))
