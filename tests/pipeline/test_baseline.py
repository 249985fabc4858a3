"""New-kind alerts against each source's learned baseline (issue 40, point 3): learning, grouping,
persistence across a restart, and the header's level in a line's severity."""

from __future__ import annotations

import logging

from gateway.ingest.record import LogRecord
from gateway.pipeline.baseline import MAX_LISTED
from gateway.pipeline.triage import Triage
from gateway.server.routes.stats import ui_stats
from gateway.settings import Settings

# distinct kinds for Drain: no word in common (and no digits, which Drain's tree treats as variables)
_W = ["".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(200)]
KINDS = [f"{w}start {w}middle {w}end" for w in _W]


def _rec(text, ts, source="plc", sev=6, host="line3/plc"):
    return LogRecord(ts, source, host, sev, text)


def _run(t, recs, first_id=1):
    return t.evaluate(recs, list(range(first_id, first_id + len(recs))), t.classify(recs))


def _new(alerts):
    return [a for a in alerts if a.kind == "new_template"]


def test_learning_suppresses_new_kinds_per_source_not_severity(tmp_path):
    t = Triage(tmp_path, baseline_lines=4, baseline_s=0)
    # source a learns 4 lines: new kinds are quiet, an ERROR line alerts at once
    learn = [_rec(KINDS[0], 1), _rec(KINDS[1], 2), _rec("pump 7 tripped", 3, sev=3), _rec(KINDS[2], 4)]
    assert [a.kind for a in _run(t, learn)] == ["severity"]
    assert t.stats()["sources_learning"] == {} and t.stats()["sources_learned"] == 1
    # b starts learning on its own; a kind b has never had is quiet there
    assert _run(t, [_rec(KINDS[3], 5, source="b")]) == []
    assert t.stats()["sources_learning"]["b"]["lines_left"] == 3
    # a has learned: a baseline kind stays quiet, a new one alerts (once)
    assert _run(t, [_rec(KINDS[1], 10)]) == []
    a = _new(_run(t, [_rec(KINDS[4], 11)]))
    assert [(x.source, x.count, x.lines) for x in a] == [("plc", 1, [KINDS[4]])]
    assert t.stats()["sources_learning"].keys() == {"b"}
    assert _run(t, [_rec(KINDS[4], 200)]) == []
    # a kind new to a that b created while learning is new against a's baseline
    assert len(_new(_run(t, [_rec(KINDS[3], 300)]))) == 1


def test_baseline_takes_lines_and_seconds_whichever_ends_later(tmp_path):
    t = Triage(tmp_path, baseline_lines=2, baseline_s=60)
    assert _run(t, [_rec(KINDS[0], 0), _rec(KINDS[1], 1), _rec(KINDS[2], 30)]) == []     # lines done, time not
    assert t.stats()["sources_learning"]["plc"]["s_left"] == 30.0
    assert len(_new(_run(t, [_rec(KINDS[3], 61)]))) == 1


def test_a_burst_of_new_kinds_folds_into_one_alert(tmp_path):
    t = Triage(tmp_path, baseline_lines=1, baseline_s=0)
    _run(t, [_rec("cycle 1 complete", 0)])
    # 1 + MAX_LISTED + 5 new kinds within a second: the first alerts at once, the rest wait
    burst = [_rec(KINDS[i], 100 + i / 100) for i in range(MAX_LISTED + 6)]
    first = _new(_run(t, burst, first_id=10))
    assert [(a.count, a.line_ids) for a in first] == [(1, [10])]
    assert t.stats()["new_kinds_held"] == MAX_LISTED + 5
    # the window ends with the next line: one alert lists MAX_LISTED kinds and counts the other 5
    (g,) = _new(_run(t, [_rec("cycle 2 complete", 161)], first_id=100))
    assert g.count == MAX_LISTED + 5 and len(g.template.split("\n")) == MAX_LISTED + 1
    assert g.template.endswith("\n+5") and g.lines[0] == KINDS[1] and g.line_ids[0] == 11
    # a storm that goes on: one alert per window; then quiet, and the next new kind alerts at once
    assert _new(_run(t, [_rec(KINDS[170], 170)])) == []
    (g2,) = t.new_kind_alerts()
    assert g2.count == 1 and g2.lines == [KINDS[170]]
    assert t.new_kind_alerts() == []
    assert len(_new(_run(t, [_rec(KINDS[171], 1000)]))) == 1
    # every line judged a new kind is named at once, held for its group's alert or not (the KV cache
    # keeps it: gateway/appliance.py); a known kind or a learning source's is not
    named: set[int] = set()
    burst2 = [_rec(KINDS[180 + i], 2000 + i / 100) for i in range(3)] + [_rec(KINDS[0], 2000.5)]
    first = _new(t.evaluate(burst2, [501, 502, 503, 504], t.classify(burst2), new_kinds=named))
    assert [a.line_ids for a in first] == [[501]] and named == {501, 502, 503}
    # two sources group apart
    t2 = Triage(None, baseline_lines=0, baseline_s=0)
    out = _new(_run(t2, [_rec(KINDS[0], 0, source="x"), _rec(KINDS[1], 0, source="y")]))
    assert sorted(a.source for a in out) == ["x", "y"]


def test_learning_state_survives_a_restart(tmp_path):
    t = Triage(tmp_path, baseline_lines=5, baseline_s=0)
    _run(t, [_rec(KINDS[i], i) for i in range(3)])
    t.close()
    t2 = Triage(tmp_path, baseline_lines=5, baseline_s=0)
    assert t2.stats()["sources_learning"] == {"plc": {"lines": 3, "lines_left": 2, "s_left": 0.0}}
    assert _run(t2, [_rec(KINDS[3], 3), _rec(KINDS[4], 4)]) == []
    del t2                                   # no close(): known kinds and a finished baseline are saved at once
    t3 = Triage(tmp_path, baseline_lines=5, baseline_s=0)
    assert t3.stats()["sources_learning"] == {} and t3.stats()["sources_learned"] == 1
    assert _run(t3, [_rec(KINDS[i], 10 + i) for i in range(5)]) == []     # the baseline's kinds
    assert len(_new(_run(t3, [_rec(KINDS[5], 20)]))) == 1
    # an unreadable file: every source learns again (and says so)
    (tmp_path / "baselines.json").write_text("{not json")
    assert Triage(tmp_path, baseline_lines=5).stats()["sources_learning"] == {}
    assert Triage(tmp_path, baseline_lines=5).stats()["sources_learned"] == 0


def test_header_level_raises_the_default_severity(tmp_path):
    t = Triage(tmp_path, baseline_lines=10_000)     # learning: only severity alerts
    lines = ["2024-05-01 12:00:01 <ALARM> conveyor 3 stopped",
             '{"time": "2024-05-01T12:00:02Z", "lvl": "F", "unit": "press-2", "msg": "hydraulic pressure lost"}',
             "2024-05-01 12:00:03 警告 温度过高 传感器 T3",
             "2024-05-01 12:00:04 INFO conveyor 3 started"]
    recs = [LogRecord.make(x, source="s") for x in lines]
    assert {r.severity for r in recs} == {6}       # the source said nothing: the default
    alerts = _run(t, recs)
    assert [(a.kind, a.severity) for a in alerts] == [("severity", "alert"), ("severity", "critical"),
                                                      ("severity", "warning")]
    # a source's own severity other than the default stands
    assert _run(t, [LogRecord(recs[-1].ts, "s", "", 5, "2024-05-01 12:00:05 <ALARM> door 2 open")]) == []


def test_settings_baseline_keys_and_the_old_warmup_lines(caplog):
    s = Settings()
    assert (s.triage.baseline_lines, s.triage.baseline_s) == (2000, 600.0)
    with caplog.at_level(logging.WARNING):
        s = Settings(triage={"warmup_lines": 50})
    assert s.triage.baseline_lines == 50 and "baseline_lines" in caplog.text
    assert Settings(triage={"warmup_lines": 50, "baseline_lines": 7}).triage.baseline_lines == 7


def test_stats_ui_block_lists_learning_sources():
    u = ui_stats({"triage": {"sources_learning": {"plc": {"lines": 12, "lines_left": 1988, "s_left": 540.0}}}})
    assert [(x.source, x.lines_left, x.s_left) for x in u.learning] == [("plc", 1988, 540.0)]
    assert ui_stats({}).learning == []
