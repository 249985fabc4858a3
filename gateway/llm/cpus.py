"""Which CPUs the engine's threads should use by default: the fastest cores this process may run on.

Why: the matmul kernels split rows evenly over the thread pool, so every step waits for its slowest
thread. On a big.LITTLE chip such as the RK3588 (4x Cortex-A76 + 4x Cortex-A55) one thread per core puts
half the rows on the little cores, and the big ones idle while those finish. And os.cpu_count() counts
the machine's CPUs, not the ones a container or `taskset` leaves to this process.
Reads Linux sysfs only; knows nothing about the engine.
"""

from __future__ import annotations

import os
from pathlib import Path

SYSFS_CPUS = Path("/sys/devices/system/cpu")


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _speed(sysfs: Path, cpu: int) -> int | None:
    """The kernel's relative capacity of `cpu` (arm64: 1024 for the biggest cores), else its maximum
    frequency, else None."""
    base = sysfs / f"cpu{cpu}"
    cap = _read_int(base / "cpu_capacity")
    return cap if cap is not None else _read_int(base / "cpufreq" / "cpuinfo_max_freq")


def performance_cpus(allowed: set[int] | None = None, sysfs: Path = SYSFS_CPUS) -> list[int]:
    """The CPUs of `allowed` (default: this process's affinity mask) with the highest capacity. All of
    them when the kernel reports no capacities, not one for every CPU, or the same for all."""
    cpus = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    if not cpus:
        raise ValueError("performance_cpus: no CPUs allowed")
    speeds = {c: _speed(sysfs, c) for c in cpus}
    if any(s is None for s in speeds.values()):
        return cpus
    top = max(speeds.values())
    return [c for c in cpus if speeds[c] == top]


def default_threads() -> int:
    """The engine's default thread count: one per performance core this process may use."""
    return len(performance_cpus())
