"""Every SIMD path of native/quant/ against the scalar reference, bit for bit, including
the paths this machine's own build does not select: quant_selftest.cpp is compiled for AVX2
(-march=x86-64-v3), for no SIMD (-march=x86-64), and for aarch64 NEON (with and without dotprod,
run under qemu-user; skipped where g++-aarch64-linux-gnu / qemu-user are not installed)."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ["tests/native/quant_selftest.cpp", "native/gguf.cpp",
           *sorted(str(p.relative_to(REPO)) for p in (REPO / "native/quant").rglob("*.cpp"))]
FLAGS = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Inative"]
CROSS, QEMU = "aarch64-linux-gnu-g++", "qemu-aarch64"
IS_X86 = platform.machine() in ("x86_64", "AMD64")


def has_flag(flag: str) -> bool:
    try:
        return f" {flag} " in f" {Path('/proc/cpuinfo').read_text().replace(chr(10), ' ')} "
    except OSError:
        return False


def build_and_run(tmp_path: Path, compiler: list[str], march: str, runner: list[str], extra: tuple[str, ...] = ()) -> str:
    exe = tmp_path / f"quant_selftest_{march.replace('+', '_')}{''.join(extra)}"
    subprocess.run([*compiler, *FLAGS, f"-march={march}", *extra, *SOURCES, "-o", str(exe)],
                   cwd=REPO, check=True, capture_output=True, text=True)
    run = subprocess.run([*runner, str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "MISMATCH" not in run.stdout, run.stdout + run.stderr
    return run.stdout


@pytest.mark.skipif(not (IS_X86 and shutil.which("g++")), reason="x86 paths need an x86 g++")
@pytest.mark.parametrize("march,extra,cpu_flags,simd", [("x86-64-v3", (), ("avx2",), "avx2"),
                                                        ("x86-64-v3", ("-mavxvnni",), ("avx2", "avx_vnni"), "avx2+avxvnni"),
                                                        ("x86-64", (), (), "scalar")])
def test_x86_paths_match_scalar(tmp_path, march, extra, cpu_flags, simd):
    for flag in cpu_flags:
        if not has_flag(flag):
            pytest.skip(f"CPU without {flag}")
    out = build_and_run(tmp_path, ["g++"], march, [], extra)
    assert out.startswith(f"simd: {simd}\n"), out


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which(CROSS) and shutil.which(QEMU)), reason=f"needs {CROSS} and {QEMU}")
@pytest.mark.parametrize("march", ["armv8.2-a+dotprod", "armv8-a"])
def test_neon_paths_match_scalar_under_qemu(tmp_path, march):
    out = build_and_run(tmp_path, [CROSS, "-static"], march, [QEMU])
    assert out.startswith("simd: neon"), out
