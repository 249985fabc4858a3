"""The engines tools/bench/bench_engine.py compares, as built for it: llama-cpp-python installed when missing,
and both engines built for another instruction set (--isa avx2: x86-64-v3, no AVX-512) into build/, then
loaded by a worker in place of the installed ones. Split from bench_engine.py (its workers import this)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ISA_DIRS = {"avx2": (REPO / "build" / "bench-avx2", REPO / "build" / "bench-llama-avx2")}
LLAMA_AVX2_CMAKE = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
                    "-DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF")


def ensure_llama_cpp() -> bool:
    try:
        import llama_cpp  # noqa: F401
        return True
    except ImportError:
        print("installing llama-cpp-python (builds llama.cpp from source; minutes)...", file=sys.stderr)
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "llama-cpp-python"])
        return r.returncode == 0


def build_isa(isa: str) -> None:
    """Build ours and llama-cpp-python for `isa` into ISA_DIRS[isa] unless already there."""
    ours_dir, llama_dir = ISA_DIRS[isa]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    if not (ours_dir / "CMakeCache.txt").is_file():
        import pybind11
        subprocess.run(["cmake", "-S", str(REPO), "-B", str(ours_dir), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DLINEGATE_NATIVE_ARCH=OFF", "-DCMAKE_CXX_FLAGS=-march=x86-64-v3",
                        f"-Dpybind11_DIR={pybind11.get_cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}"],
                       check=True, env=env, capture_output=True)
    print(f"building the native module for x86-64-v3 in {ours_dir} ...", file=sys.stderr)
    subprocess.run(["cmake", "--build", str(ours_dir)], check=True, env=env, capture_output=True)   # incremental
    if not (llama_dir / "llama_cpp").is_dir():
        print(f"building llama-cpp-python for AVX2 in {llama_dir} (minutes) ...", file=sys.stderr)
        from importlib.metadata import version
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-cache-dir", "--target",
                        str(llama_dir), f"llama-cpp-python=={version('llama_cpp_python')}"],
                       check=True, env=dict(os.environ, CMAKE_ARGS=LLAMA_AVX2_CMAKE))


def use_isa(kind: str, isa: str | None) -> None:
    """In a worker: load the engine built for `isa` (ours: gateway._native from its build folder)."""
    if not isa:
        return
    ours_dir, llama_dir = ISA_DIRS[isa]
    if kind == "llama":
        sys.path.insert(0, str(llama_dir))
    else:  # the editable install's finder maps gateway._native to its own build: load this one first
        import importlib.util
        so = next(ours_dir.glob("_native*.so"))
        spec = importlib.util.spec_from_file_location("gateway._native", so)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["gateway._native"] = mod
        import gateway
        gateway._native = mod
