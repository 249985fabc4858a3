"""native/membench.cpp: the read-bandwidth measurement the decode roofline is held to."""

from __future__ import annotations

import math

import pytest

from gateway import _native


def test_read_bandwidth_is_a_finite_positive_rate():
    gbs = _native.read_bandwidth_gbs(64, 2, 1)
    # 64 MiB in more than 1 us and less than a minute: no unit mix-up (bytes vs GB, s vs ms)
    assert math.isfinite(gbs) and 64 * 2**20 / 60 / 1e9 < gbs < 64 * 2**20 / 1e-6 / 1e9


@pytest.mark.parametrize("kwargs, match", [
    ({"mb": 8}, r"mb must be in \[64, 16384\], got 8"),
    ({"mb": 1 << 20}, r"mb must be in \[64, 16384\]"),
    ({"mb": 64, "threads": 0}, "threads must be >= 1, got 0"),
    ({"mb": 64, "reps": 0}, "reps must be >= 1, got 0"),
])
def test_read_bandwidth_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _native.read_bandwidth_gbs(**kwargs)
