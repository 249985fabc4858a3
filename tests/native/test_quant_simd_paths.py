"""native/quant_neon.cpp cannot run on the x86 CI box: cross-compile quant_selftest.cpp for
aarch64 (with and without the dotprod extension) and run it under qemu-user; the NEON kernels
must match the scalar reference bit for bit. Skipped where the cross tools are not installed
(apt: g++-aarch64-linux-gnu qemu-user)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ["tests/native/quant_selftest.cpp", "native/quant.cpp", "native/quant_scalar.cpp",
           "native/quant_neon.cpp", "native/quant_x86.cpp", "native/gguf.cpp"]
CXX, QEMU = "aarch64-linux-gnu-g++", "qemu-aarch64"


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which(CXX) and shutil.which(QEMU)), reason=f"needs {CXX} and {QEMU}")
@pytest.mark.parametrize("march", ["armv8.2-a+dotprod", "armv8-a"])
def test_neon_kernels_match_scalar_under_qemu(tmp_path, march):
    exe = tmp_path / "quant_selftest"
    subprocess.run([CXX, "-std=c++17", "-O2", f"-march={march}", "-Wall", "-Wextra", "-Werror",
                    "-Wno-unused-parameter", "-static", "-Inative", *SOURCES, "-o", str(exe)],
                   cwd=REPO, check=True, capture_output=True, text=True)
    run = subprocess.run([QEMU, str(exe)], capture_output=True, text=True, timeout=300)
    assert run.stdout.startswith("simd: neon"), run.stdout
    assert run.returncode == 0 and "MISMATCH" not in run.stdout, run.stdout
