"""What the benchmarks record about the host they run on: the core (model, family, SIMD flags), the
CPU time the hypervisor stole, this process's RSS. Knows nothing about engines."""

from __future__ import annotations

import os
from pathlib import Path


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that across exec from the parent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmHWM in /proc/self/status")


def current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


def cpu_identity(cpuinfo: str) -> dict:
    """What kind of core the figures come from (/proc/cpuinfo text): model name, family/model, and the SIMD
    flags the kernels choose between. Hosts differ between runs (a Zen 3 without AVX-512, a Zen 5 with it)."""
    first: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if first:
                break
            continue
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    flags = set(first.get("flags", first.get("Features", "")).split())
    return {"model_name": first.get("model name", first.get("CPU part", "unknown")),
            "family": first.get("cpu family"), "model": first.get("model"),
            "simd_flags": [f for f in CPU_FLAGS_OF_INTEREST if f in flags]}


def cpu_ticks(stat: str) -> tuple[int, int]:
    """(total, steal) jiffies of the 'cpu' line of /proc/stat text (steal: time the hypervisor ran others)."""
    for line in stat.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(v) for v in parts[1:9]]
            values += [0] * (8 - len(values))
            return sum(values), values[7]
    raise ValueError("no 'cpu' line in /proc/stat")


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Share of CPU time stolen by the hypervisor between two cpu_ticks readings, in percent."""
    total = after[0] - before[0]
    return 100.0 * (after[1] - before[1]) / total if total > 0 else 0.0


def read_text(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def cpu_here() -> dict:
    """cpu_identity of this machine's /proc/cpuinfo."""
    return cpu_identity(read_text("/proc/cpuinfo") or "")
