"""Every SIMD path of native/quant/ against the scalar reference, bit for bit, including
the paths this machine's own build does not select: quant_selftest.cpp is compiled for AVX2
(-march=x86-64-v3), for no SIMD (-march=x86-64), and once for aarch64 (baseline Armv8-A, as the package
builds it), then run under qemu-user as CPUs with and without dotprod, so that the run-time choice from
HWCAP and every NEON variant are checked (g++-aarch64-linux-gnu and qemu-user: tools/setup_system.sh); and the
aarch64 engine with packed weights against itself unpacked (engine_pack_selftest.cpp)."""

from __future__ import annotations

import platform
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ["tests/native/quant_selftest.cpp", "native/gguf.cpp",
           *sorted(str(p.relative_to(REPO)) for p in (REPO / "native/quant").rglob("*.cpp"))]
FLAGS = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Inative"]
CROSS, QEMU, OBJDUMP = "aarch64-linux-gnu-g++", "qemu-aarch64", "aarch64-linux-gnu-objdump"
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
    assert "packed: 1196 checked, ok\n" in out, out   # packed weights through the GGUF kernels, group by group


needs_cross = pytest.mark.skipif(not (shutil.which(CROSS) and shutil.which(QEMU) and shutil.which(OBJDUMP)),
                                 reason=f"needs {CROSS} and {QEMU}: run tools/setup_system.sh")


@pytest.fixture(scope="module")
def aarch64_selftest(tmp_path_factory) -> Path:
    """One static aarch64 build, both NEON variants inside, like the package's module."""
    exe = tmp_path_factory.mktemp("aarch64") / "quant_selftest"
    subprocess.run([CROSS, "-static", *FLAGS, "-march=armv8-a", *SOURCES, "-o", str(exe)],
                   cwd=REPO, check=True, capture_output=True, text=True)
    return exe


def run_qemu(exe: Path, cpu: str, variant: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LINEGATE_NEON"}
    if variant:
        env["LINEGATE_NEON"] = variant
    return subprocess.run([QEMU, "-cpu", cpu, str(exe)], capture_output=True, text=True, timeout=300, env=env)


# (qemu CPU, forced variant or None for the HWCAP choice, the variant that must run). cortex-a53: Armv8.0, no
# dotprod; cortex-a76: the RK3588's big core (dotprod, no i8mm); max: every extension qemu has (dotprod, i8mm).
NEON_RUNS = [("cortex-a53", None, "neon"), ("cortex-a76", None, "neon+dotprod"),
             ("cortex-a76", "neon", "neon"), ("max", None, "neon+i8mm"), ("max", "neon+dotprod", "neon+dotprod")]


@needs_cross
@pytest.mark.parametrize("cpu,forced,expected", NEON_RUNS)
def test_neon_variants_match_scalar_under_qemu(aarch64_selftest, cpu, forced, expected):
    run = run_qemu(aarch64_selftest, cpu, forced)
    assert run.returncode == 0 and "MISMATCH" not in run.stdout, run.stdout + run.stderr
    assert run.stdout.startswith(f"simd: {expected}\n"), run.stdout
    # K = 768: 8 types x 2 precisions; K = 864: the 5 legacy types x 2 precisions; each checked
    assert run.stdout.count(" ok ") == 26, run.stdout
    # packed weights, against the scalar path: 13 (type, K) x 2 precisions x 9 counts x 5 row ranges, and the
    # 13 (type, K) x 2 precisions at extreme values
    assert "packed: 1196 checked, ok\n" in run.stdout, run.stdout


@needs_cross
def test_neon_variant_the_cpu_lacks_is_refused(aarch64_selftest):
    run = run_qemu(aarch64_selftest, "cortex-a53", "neon+dotprod")
    assert run.returncode != 0
    assert "LINEGATE_NEON=neon+dotprod: this CPU lacks its instructions" in run.stderr
    run = run_qemu(aarch64_selftest, "cortex-a76", "neon+i8mm")   # dotprod but no i8mm
    assert run.returncode != 0
    assert "LINEGATE_NEON=neon+i8mm: this CPU lacks its instructions" in run.stderr
    run = run_qemu(aarch64_selftest, "cortex-a76", "sve")
    assert run.returncode != 0 and "unknown variant (neon+i8mm, neon+dotprod, neon)" in run.stderr


@needs_cross
def test_dotprod_instructions_only_in_the_dotprod_variant(aarch64_selftest):
    """sdot outside neon_dotprod / neon_i8mm would be a SIGILL on an Armv8.0 core, smmla outside neon_i8mm one on
    an Armv8.2 core like the A76 (e.g. an inline helper compiled under a variant's target pragma and picked by
    the linker for everyone)."""
    dis = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", "-C", str(aarch64_selftest)],
                         capture_output=True, text=True, check=True).stdout
    fn, users, mm_users = "", set(), set()
    for line in dis.splitlines():
        if line.endswith(">:"):
            fn = line
        elif "\tsdot\t" in line or "\tudot\t" in line:
            users.add(fn)
        elif "\tsmmla\t" in line or "\tummla\t" in line or "\tusmmla\t" in line:
            mm_users.add(fn)
    assert users, "no sdot at all: the dotprod variant was not compiled with dotprod"
    assert all("neon_dotprod::" in u or "neon_i8mm::" in u for u in users), sorted(users)
    assert any("neon_dotprod::" in u for u in users), sorted(users)
    assert mm_users, "no smmla at all: the i8mm variant was not compiled with i8mm"
    assert all("neon_i8mm::" in u for u in mm_users), sorted(mm_users)


ENGINE_SOURCES = ["tests/native/engine_pack_selftest.cpp",
                  *(f"native/{n}.cpp" for n in ("alloc_counter", "attention", "engine", "forward", "gguf", "kv_cache",
                                                "kv_semantic", "kv_view", "model", "ops", "threadpool")),
                  *sorted(str(p.relative_to(REPO)) for p in (REPO / "native/quant").rglob("*.cpp"))]


@pytest.fixture(scope="module")
def aarch64_engine_selftest(tmp_path_factory) -> tuple[Path, Path]:
    """One static aarch64 build of engine_pack_selftest.cpp and the tiny qwen2 model it runs."""
    from tools.convert import random_gguf
    d = tmp_path_factory.mktemp("aarch64_engine")
    model, exe = random_gguf.write_tiny(d / "tiny.gguf", "qwen2"), d / "engine_pack_selftest"
    subprocess.run([CROSS, "-static", "-std=c++17", "-O2", "-Inative", "-march=armv8-a", "-pthread", *ENGINE_SOURCES,
                    "-o", str(exe)], cwd=REPO, check=True, capture_output=True, text=True)
    return exe, model


@needs_cross
@pytest.mark.parametrize("cpu,expected", [("cortex-a76", "neon+dotprod"), ("max", "neon+i8mm")])
def test_engine_with_packed_weights_matches_unpacked_under_qemu(aarch64_engine_selftest, cpu, expected):
    """The whole aarch64 engine (forward passes, row splits over threads) with the tiny qwen2 model's Q8_0/Q5_0/Q4_1
    matrices packed at load (all but token_embd) gives the logits of the same engine unpacked, bit for bit."""
    exe, model = aarch64_engine_selftest
    run = subprocess.run([QEMU, "-cpu", cpu, str(exe), str(model)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"simd: {expected}, matrices packed: 15, logits identical"), run.stdout
