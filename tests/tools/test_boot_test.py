"""tools/boot_test.py's verdict: each boot judged by what survives a power cut (issue 44)."""

from __future__ import annotations

import pytest

from tools.boot_test import failed_checks

# The healthy run of issue 44 (Zen 5): booted, answered, lost nothing across the reset, answered again; the
# journal kept "Started linegate.service" for 1 of its 2 boots (the boot cut by the reset lost its tail).
HEALTHY = {"booted": True, "health_s": 52.0, "chat_ok": True, "syslog_ok": True, "drafter": {"active": "ngram"},
           "acked": 4400, "lost_after_reset": 0, "health_after_reset_s": 52.0, "boots": 2,
           "linegate_started": 1, "units_failed": [], "simd": "neon-dotprod", "act_precision": "q8"}


def test_a_boot_whose_journal_tail_was_cut_passes_on_its_health():
    assert failed_checks(HEALTHY) == []
    assert failed_checks({**HEALTHY, "linegate_started": 0}) == []


@pytest.mark.parametrize("change, failed", [
    ({"health_after_reset_s": None, "lost_after_reset": None}, ["healthy_after_reset", "none_lost_after_reset"]),
    ({"lost_after_reset": 3}, ["none_lost_after_reset"]),
    ({"units_failed": ["linegate.service"]}, ["no_failed_units"]),
    ({"units_failed": None, "boots": None, "linegate_started": None}, ["no_failed_units"]),   # no journal read
    ({"booted": False, "health_s": None}, ["booted"]),
    ({"act_precision": "f32"}, ["act_precision_q8"]),
    ({"chat_ok": False, "syslog_ok": False}, ["syslog_ok", "chat_ok"]),
])
def test_what_a_power_cut_keeps_still_fails_the_run(change, failed):
    assert failed_checks({**HEALTHY, **change}) == failed
