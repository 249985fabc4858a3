"""gateway/llm/cpus.py: the default thread count, on fake sysfs trees (RK3588, x86, a VM without capacities)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.llm import cpus


def fake_sysfs(tmp_path: Path, capacity: dict[int, int] | None = None, max_freq: dict[int, int] | None = None) -> Path:
    for cpu, cap in (capacity or {}).items():
        (tmp_path / f"cpu{cpu}").mkdir(parents=True, exist_ok=True)
        (tmp_path / f"cpu{cpu}" / "cpu_capacity").write_text(f"{cap}\n")
    for cpu, freq in (max_freq or {}).items():
        (tmp_path / f"cpu{cpu}" / "cpufreq").mkdir(parents=True, exist_ok=True)
        (tmp_path / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq").write_text(f"{freq}\n")
    return tmp_path


def test_rk3588_uses_the_four_big_cores(tmp_path):
    # What an RK3588 kernel reports: cpu0-3 Cortex-A55, cpu4-7 Cortex-A76.
    sysfs = fake_sysfs(tmp_path, capacity={**{c: 414 for c in range(4)}, **{c: 1024 for c in range(4, 8)}})
    assert cpus.performance_cpus(set(range(8)), sysfs) == [4, 5, 6, 7]
    # taskset to cpu2-5: the big ones among them
    assert cpus.performance_cpus({2, 3, 4, 5}, sysfs) == [4, 5]
    # only little cores allowed: those are the fastest it has
    assert cpus.performance_cpus({0, 1}, sysfs) == [0, 1]


def test_max_frequency_when_there_is_no_capacity(tmp_path):
    sysfs = fake_sysfs(tmp_path, max_freq={0: 1800000, 1: 1800000, 2: 2400000, 3: 2400000})
    assert cpus.performance_cpus({0, 1, 2, 3}, sysfs) == [2, 3]


def test_equal_or_missing_figures_keep_every_allowed_cpu(tmp_path):
    same = fake_sysfs(tmp_path / "same", capacity={c: 1024 for c in range(4)})
    assert cpus.performance_cpus({0, 1, 2, 3}, same) == [0, 1, 2, 3]
    partial = fake_sysfs(tmp_path / "partial", capacity={0: 1024, 1: 414})   # cpu2 reports nothing
    assert cpus.performance_cpus({0, 1, 2}, partial) == [0, 1, 2]
    assert cpus.performance_cpus({0, 1, 2}, tmp_path / "none") == [0, 1, 2]
    bad = fake_sysfs(tmp_path / "bad", capacity={0: 1024})
    (bad / "cpu1").mkdir()
    (bad / "cpu1" / "cpu_capacity").write_text("fast\n")
    assert cpus.performance_cpus({0, 1}, bad) == [0, 1]


def test_default_follows_this_process_affinity():
    allowed = os.sched_getaffinity(0)
    assert set(cpus.performance_cpus()) <= allowed
    assert 1 <= cpus.default_threads() <= len(allowed)


def test_no_cpus_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no CPUs allowed"):
        cpus.performance_cpus(set(), tmp_path)
