"""The demo line: deterministic for a seed; faults on schedule; severities set."""

from __future__ import annotations

from gateway.ingest.demo import DemoLine


def _run(seed):
    line = DemoLine(seed=seed, cycle_s=2.0, jam_every_s=60, overtemp_every_s=90, estop_every_s=120, first_fault_s=10)
    return [(r.ts, r.host, r.severity, r.text) for r in line.records(200, start_ts=1000.0)]


def test_deterministic_and_faults_on_schedule():
    a, b = _run(3), _run(3)
    assert a == b and a != _run(4)
    texts = [t for _, _, _, t in a]
    jams = [ts for ts, _, _, t in a if "JAM detected" in t]
    assert len(jams) >= 3 and jams[0] == 1010.0
    assert any("over-temperature" in t for t in texts) and any("E-STOP pressed" in t for t in texts)
    assert any("cleared jam" in t for t in texts)
    assert {sev for _, _, sev, t in a if "E-STOP pressed" in t} == {2}
    assert {sev for _, _, sev, t in a if "JAM detected" in t} == {3}
    assert {h.split("/")[0] for _, h, _, _ in a} == {"line3"}
    assert {"line3/plc", "line3/filler", "line3/capper", "line3/hmi"} <= {h for _, h, _, _ in a}
