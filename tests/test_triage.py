"""Triage: Drain grouping accuracy on Loghub, persisted templates, and the alert decisions."""

from __future__ import annotations

import csv

import pytest

from gateway.ingest.record import LogRecord
from gateway.pipeline.triage import Triage, grouping_accuracy, load_rules, miner_config

SYSTEMS = ("Apache", "BGL", "HDFS", "Hadoop", "Linux", "OpenSSH", "Spark", "Zookeeper")
PUBLISHED_DRAIN_AVG = 0.85


def test_grouping_accuracy_definition():
    assert grouping_accuracy([1, 1, 2, 3], ["a", "a", "b", "b"]) == 0.5     # b split: both wrong
    assert grouping_accuracy([1, 1, 1], ["a", "a", "b"]) == 0.0             # a and b merged


def test_loghub_grouping_accuracy(loghub_dir):
    """Mines the structured CSV's Content column (the message part), as the Loghub benchmark does."""
    accs = {}
    for system in SYSTEMS:
        with open(loghub_dir / system / f"{system}_2k.log_structured.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        t = Triage(None)
        pred = [c.template_id for c in t.classify([LogRecord(0, "t", "", 6, r["Content"]) for r in rows])]
        accs[system] = grouping_accuracy(pred, [r["EventId"] for r in rows])
    avg = sum(accs.values()) / len(accs)
    assert avg >= PUBLISHED_DRAIN_AVG, accs
    assert min(accs.values()) > 0.6, accs


def _recs(texts, t0=1000.0, dt=1.0, host="line3/plc", sev=6):
    return [LogRecord(t0 + i * dt, "t", host, sev, x) for i, x in enumerate(texts)]


def _run(tr, recs):
    cl = tr.classify(recs)
    return tr.evaluate(recs, list(range(1, len(recs) + 1)), cl)


def test_templates_persist_across_restart(tmp_path):
    t = Triage(tmp_path)
    a = t.classify(_recs(["pump 3 started at 10.0.0.1", "pump 4 started at 10.0.0.2"]))
    assert a[0].template_id == a[1].template_id and a[0].is_new and not a[1].is_new
    del t                                    # no close(): new ids are saved at once
    t2 = Triage(tmp_path)
    b = t2.classify(_recs(["pump 9 started at 10.0.0.7", "valve 2 closed"]))
    assert b[0].template_id == a[0].template_id and not b[0].is_new
    assert b[1].is_new and b[1].template_id != a[0].template_id
    assert t2.templates()[0]["count"] == 3


def test_new_template_and_severity_alerts_with_dedup(tmp_path):
    t = Triage(tmp_path, dedup_s=60, baseline_lines=0, baseline_s=0)     # no baseline: the first line is new
    alerts = _run(t, _recs(["cycle 1 complete", "cycle 2 complete"]))
    assert [a.kind for a in alerts] == ["new_template"]
    errs = _recs([f"JAM detected at PE-{i}" for i in range(5)], t0=2000, sev=3)
    alerts = _run(t, errs)
    assert [(a.kind, a.severity, a.count) for a in alerts] == [("severity", "error", 1)]
    assert "JAM detected at PE-0" in alerts[0].lines and alerts[0].template == "JAM detected at PE-<NUM>"
    # after the dedup window the next alert carries the suppressed count
    alerts = _run(t, _recs(["JAM detected at PE-9"], t0=2100, sev=3))
    assert [(a.kind, a.count) for a in alerts] == [("severity", 5)]
    # another host is another alert stream
    assert len(_run(t, _recs(["JAM detected at PE-9"], t0=2101, sev=3, host="line4/plc"))) == 1


def test_rules_count_window_dedup_and_flap(tmp_path):
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text('''
[[rule]]
name = "jams"
match = "(?i)jam"
count = 3
window_s = 10
severity = "critical"
cooldown_s = 0
flap_max = 2
flap_window_s = 1000
''')
    t = Triage(tmp_path, load_rules(rules_file), new_template_alerts=False, min_alert_severity="emergency")
    # two matches in the window: nothing; the third fires once, a fourth in the same episode does not
    assert _run(t, _recs(["jam a", "jam b"], t0=0, dt=1)) == []
    fired = _run(t, _recs(["jam c", "jam d"], t0=2, dt=1))
    assert [(a.kind, a.rule, a.severity, a.count) for a in fired] == [("rule", "jams", "critical", 3)]
    assert fired[0].lines == ["jam a", "jam b", "jam c"]
    # the condition clears (a sparse hit), then a second episode fires again
    assert _run(t, _recs(["jam e"], t0=100)) == []
    assert len(_run(t, _recs(["jam f", "jam g"], t0=101, dt=1))) == 1
    # a third activation within flap_window_s exceeds flap_max=2: suppressed
    assert _run(t, _recs(["jam h"], t0=200)) == []
    assert _run(t, _recs(["jam i", "jam j"], t0=201, dt=1)) == []
    assert t.stats()["flap_suppressed"] == 1


def test_rules_file_errors_name_file_rule_and_key(tmp_path):
    f = tmp_path / "r.toml"
    f.write_text('[[rule]]\nname = "x"\nmatch = "("\n')
    with pytest.raises(ValueError, match=r"r.toml, rule 'x': bad regex"):
        load_rules(f)
    f.write_text('[[rule]]\nname = "x"\n')
    with pytest.raises(ValueError, match="exactly one of 'match'"):
        load_rules(f)
    f.write_text('[[rule]]\nname = "x"\nmatch = "a"\ncuont = 3\n')
    with pytest.raises(ValueError, match="unknown keys \\['cuont'\\]"):
        load_rules(f)
    with pytest.raises(ValueError, match="does not exist"):
        load_rules(tmp_path / "missing.toml")


def test_masking_config_is_named():
    names = [m.mask_with for m in miner_config().masking_instructions]
    assert names == ["IP", "BLK", "HEX", "MAC", "NUM"]


def test_induced_header_columns_persist_across_restart(tmp_path, caplog):
    # an unseen shape ("<node> <seq> message"): columns induced from the first lines, kept on restart
    lines = [f"node-{i % 3} {1000 + i} job {i} finished in {i % 7} s" for i in range(40)]
    t = Triage(tmp_path)
    _run(t, _recs(lines))
    t.close()
    cols = t.headers.columns()
    assert cols.get("t")
    t2 = Triage(tmp_path)
    assert t2.headers.columns() == cols                 # known before any line of the new run
    (tmp_path / "header_columns.json").write_text("{not json")
    with caplog.at_level("WARNING"):
        assert Triage(tmp_path).headers.columns() == {}
    assert "header columns" in caplog.text


def test_alerts_survive_the_clock_jumping_back_and_forward(tmp_path):
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text('[[rule]]\nname = "jams"\nmatch = "(?i)jam"\ncount = 2\nwindow_s = 10\n'
                          'severity = "critical"\ncooldown_s = 300\n')
    t = Triage(tmp_path, load_rules(rules_file), new_template_alerts=False, dedup_s=60)
    day = 86_400.0
    assert len(_run(t, _recs(["JAM at PE-1", "JAM at PE-2"], t0=10_000, sev=3))) == 2      # severity + rule
    # the clock set back an hour: a new episode alerts at once (the dedup window and the rule's
    # cooldown are not an hour long)
    back = _run(t, _recs(["JAM at PE-3", "JAM at PE-4"], t0=10_000 - 3600, sev=3))
    assert sorted(a.kind for a in back) == ["rule", "severity"]
    # and forward a day: the same
    fwd = _run(t, _recs(["JAM at PE-5", "JAM at PE-6"], t0=10_000 + day, sev=3))
    assert sorted(a.kind for a in fwd) == ["rule", "severity"]
