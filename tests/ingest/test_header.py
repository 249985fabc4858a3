"""Header fields found without configuration: one fixture line per common shape, and induction
of an unseen shape from a source's first lines."""

from __future__ import annotations

import calendar

import re

import pytest

from gateway.ingest.header import scan
from gateway.ingest.source_format import INDUCE_LINES, SourceFormats, induce_columns, shape

# (line, expected fields; "message" is the rest of the line)
SHAPES = {
    "syslog_3164": ("Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; rhost=218.188.2.4",
                    dict(host="combo", component="sshd(pam_unix)", pid=19939, ts_text="Jun 14 15:16:01",
                         message="authentication failure; rhost=218.188.2.4")),
    "syslog_pri": ("<13>Feb  5 17:32:18 10.0.0.99 myapp[77]: Use the BFG!",
                   dict(host="10.0.0.99", component="myapp", pid=77, message="Use the BFG!")),
    "rfc5424": ("<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 42 ID47 "
                "[exampleSDID@32473 iut=\"3\"] An application event",
                dict(host="mymachine.example.com", component="evntslog", pid=42, message="An application event",
                     ts=calendar.timegm((2003, 10, 11, 22, 14, 15)) + 0.003)),
    "log4j": ("2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster",
              dict(level="info", component="org.apache.hadoop.mapreduce.v2.app.MRAppMaster", message="Created MRAppMaster",
                   ts=calendar.timegm((2015, 10, 18, 18, 1, 47)) + 0.978)),
    "zookeeper": ("2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:FastLeaderElection@774] - "
                  "Notification time out: 3200",
                  dict(level="info", component="FastLeaderElection", message="Notification time out: 3200")),
    "yymmdd_pid": ("081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_38865 terminating",
                   dict(level="info", pid=148, component="dfs.DataNode$PacketResponder",
                        message="PacketResponder 1 for block blk_38865 terminating",
                        ts=calendar.timegm((2008, 11, 9, 20, 36, 15)))),
    "android": ("03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app wtoken = 5",
                dict(level="debug", pid=1702, component="WindowManager", message="printFreezingDisplayLogsopening app wtoken = 5")),
    "windows_cbs": ("2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 with Core",
                    dict(level="info", component="CBS", ts_text="2016-09-28 04:30:30",
                         message="Loaded Servicing Stack v6.1.7601.23505 with Core")),
    "windows_cbs_id": ("2016-09-28 04:30:31, Warning               CSI    3b3562d1 Warning: Unrecognized packageExtended attribute.",
                       dict(level="warning", component="CSI", host=None,      # past a column component: the message
                            message="3b3562d1 Warning: Unrecognized packageExtended attribute.")),
    "windows_cbs_num": ("2016-09-28 04:30:31, Warning               CSI    91725646 Warning: Unrecognized packageExtended attribute.",
                        dict(level="warning", component="CSI", pid=None,
                             message="91725646 Warning: Unrecognized packageExtended attribute.")),
    "proxifier": ("[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS",
                  dict(component="chrome.exe", ts_text="10.30 16:49:06",
                       message="proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS")),
    "openstack": ('nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO nova.osapi_compute.wsgi.server '
                  '[req-38101a0b-2096 113d3a99 54fadb41 - - -] 10.11.10.1 "GET /v2/servers/detail HTTP/1.1" status: 200',
                  dict(level="info", pid=25746, component="nova.osapi_compute.wsgi.server",
                       message='10.11.10.1 "GET /v2/servers/detail HTTP/1.1" status: 200')),
    "hpc": ("134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: Component is unavailable",
            dict(host="node-246", ts=1077804742.0, message="Component State Change: Component is unavailable")),
    "mac": ("Jul  1 09:04:37 authorMacBook-Pro com.apple.xpc.launchd[1] (com.apple.mdworker.bundles[12345]): Service exited",
            dict(host="authorMacBook-Pro", component="com.apple.xpc.launchd", pid=1, message="Service exited")),
    "thunderbird": ("- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: session closed for user root",
                    dict(host="dn228", component="crond(pam_unix)", pid=2915, ts=1131537661.0,   # as written
                         message="session closed for user root")),
    "bgl": ("- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 RAS KERNEL INFO "
            "instruction cache parity error corrected",
            dict(level="info", host="R02-M1-N0-C:J12-U11", message="instruction cache parity error corrected")),
    "apache": ("[Sun Dec 04 04:47:44 2005] [error] [client 222.166.160.184] Directory index forbidden by rule: /var/www/html/",
               dict(level="error", ts=calendar.timegm((2005, 12, 4, 4, 47, 44)),
                    message="[client 222.166.160.184] Directory index forbidden by rule: /var/www/html/")),
    "pipes": ("20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
              dict(component="Step_LSC", pid=30002312, message="onStandStepChanged 3579")),
    "spark": ("17/06/09 20:10:40 INFO spark.SecurityManager: Changing view acls to: yarn,curi",
              dict(level="info", component="spark.SecurityManager", message="Changing view acls to: yarn,curi")),
    "no_header": ("E-STOP pressed at station 4", dict(message="E-STOP pressed at station 4", ts=None, level=None)),
    "plain_sentence_with_time": ("User admin logged in at 2024-01-01 12:00:00 from the console",
                                 dict(message="User admin logged in at 2024-01-01 12:00:00 from the console", ts=None)),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_header_shapes(name):
    line, want = SHAPES[name]
    h = scan(line, year=2024)
    for key, value in want.items():
        got = getattr(h, key)
        if isinstance(value, float):
            assert got == pytest.approx(value), (name, key, h)
        else:
            assert got == value, (name, key, h)


def test_syslog_year_comes_from_arrival():
    h = scan("Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster", year=2019)
    assert h.ts == calendar.timegm((2019, 12, 10, 6, 55, 46)) and h.ts_text == "Dec 10 06:55:46"


def test_shape():
    assert shape("node-246") == "a-9" and shape("R02-M1") == "A9-A9" and shape("0042") == "9"


def test_induction_on_an_unseen_shape():
    """Lines with no timestamp or level: "<unit tag> <counter> <message>". The general scanner
    leaves them whole; induction over the source's first lines learns the two header columns."""
    units = ["ZX-04", "ZX-11", "QP-02"]
    msgs = ["Pressure nominal at 3.2 bar", "valve opened", "Filter change due in 12 h", "pump stopped by operator"]
    lines = [f"{units[i % 3]} {100 + i} {msgs[i % 4]}" for i in range(INDUCE_LINES + 5)]
    assert scan(lines[0]).message == lines[0]                       # no general rule applies
    sh = SourceFormats()
    hs = [sh.parse(x, "plant") for x in lines]
    assert sh.columns()["plant"] == ["A-9", "9"]
    last = hs[-1]
    assert last.message == msgs[(len(lines) - 1) % 4] and last.host == units[(len(lines) - 1) % 3]
    assert last.pid == 100 + len(lines) - 1
    assert sh.parse("valve closed", "plant").message == "valve closed"   # a line without the columns
    assert sh.parse(lines[0], "other").message == lines[0]                # induction is per source


def test_induction_keeps_message_words():
    # first words vary in shape, or are one constant word: nothing is cut
    assert induce_columns(["Received block blk_1", "PacketResponder 1 for", "Verification succeeded"] * 10) == []
    assert induce_columns(["Temperature is 81.5", "Temperature is 80.1"] * 12) == []


@pytest.mark.parametrize("line, want", [
    # (ts_text, level, host, component, message)
    ("2026-12-04 10:15:29.606 | WARN | line3-plc | io | input 7 stuck high",
     ("2026-12-04 10:15:29.606", "warning", "line3-plc", "io", "input 7 stuck high")),
    ("2026-12-04 10:01:02.123|警告|工位3|温控模块|加热区2 温度 81.6 ℃",
     ("2026-12-04 10:01:02.123", "warning", "工位3", "温控模块", "加热区2 温度 81.6 ℃")),
    ('2026-12-04 10:01:02,ERROR,robot-2,servo,"axis 3 following error 0.52 mm"',
     ("2026-12-04 10:01:02", "error", "robot-2", "servo", "axis 3 following error 0.52 mm")),
    ("2026-12-04 10:01:02 <ALARM> cell2 robot: gripper pressure low 3.1 bar",
     ("2026-12-04 10:01:02", "alert", "cell2", "robot", "gripper pressure low 3.1 bar")),
    ("2026-12-04 10:01:02.123 [警告] 工位3 温控模块: 加热区2 温度 81.6 ℃",
     ("2026-12-04 10:01:02.123", "warning", "工位3", "温控模块", "加热区2 温度 81.6 ℃")),
    ('{"time": "2026-12-04T10:01:02Z", "lvl": "F", "unit": "press-07", "mod": "hydraulics", "text": "drop 12 bar"}',
     ("2026-12-04T10:01:02Z", "critical", "press-07", "hydraulics", "drop 12 bar")),
    ('{"__REALTIME_TIMESTAMP": "1733306462123456", "PRIORITY": "3", "_HOSTNAME": "box", "SYSLOG_IDENTIFIER": "sshd", '
     '"MESSAGE": "Failed password", "_PID": "42"}',
     ("1733306462123456", "error", "box", "sshd", "Failed password")),
    ('time=2026-12-04T10:01:02Z level=warn host=line3 component=conveyor msg="belt slow" speed=1.2',
     ("2026-12-04T10:01:02Z", "warning", "line3", "conveyor", "belt slow speed=1.2")),
    ("20261204T100102 W line3 belt slow", ("20261204T100102", "warning", None, None, "line3 belt slow")),
    ("app.log.1.2026-12-04_13:53:08 2026-12-04 00:00:00.008 25746 INFO x.api.server [req-1] GET /v2 status: 200",
     ("2026-12-04 00:00:00.008", "info", None, "x.api.server", "GET /v2 status: 200")),
])
def test_fields_of_shapes_the_scanner_was_not_written_for(line, want):
    h = scan(line, 2026)
    ts, level, host, component, message = want
    assert (h.ts_text, h.level, h.host, h.component) == (ts, level, host, component)
    assert h.message.endswith(message) and h.ts is not None


def test_self_describing_lines_keep_their_own_time():
    h = scan('{"ts": 1733306462.5, "level": "error", "msg": "x"}')
    assert h.ts == 1733306462.5
    assert scan("1733306462123 INFO belt slow").ts == pytest.approx(1733306462.123)
    assert scan('{"a": 1}').message == "a=1"                          # no message key: the pairs
    assert scan("{not json").message == "{not json"


def test_a_header_pattern_parses_its_lines_and_falls_back():
    from gateway.ingest.source_format import HeaderPattern
    fm = SourceFormats({"odd": r"(?P<host>\S+) @ (?P<ts>\S+ \S+) (?P<level>\w+) >> (?P<message>.*)"})
    h = fm.parse("cell-1 @ 2026-12-04 10:00:01 ALARM >> gripper slip", "odd")
    assert (h.host, h.level, h.message) == ("cell-1", "alert", "gripper slip")
    h = fm.parse("2026-12-04 10:00:02 WARN other shape", "odd")      # not the pattern's: the general rules
    assert h.level == "warning" and h.message == "other shape"
    with pytest.raises(ValueError, match="named groups"):
        HeaderPattern(r"(?P<msg>.*)")


def test_a_source_whose_lines_drift_learns_its_format_again():
    from gateway.ingest import source_format as sf
    fm = SourceFormats()
    for i in range(INDUCE_LINES):
        fm.parse(f"ZX-{i % 3} {100 + i} pressure nominal", "p")
    assert fm.columns()["p"] == ["A-9", "9"]
    for i in range(sf.DRIFT_WINDOW):                                  # the unit now logs another shape
        fm.parse(f"2026-12-04 10:00:00 INFO other {i}", "p")
    assert fm.relearned == 1
    for i in range(INDUCE_LINES):
        fm.parse(f"2026-12-04 10:00:00 INFO other {i}", "p")
    assert fm.columns()["p"] == [] and fm.formats()["p"]["fields"]["level"] == 1.0


def test_syslog_priority_gives_the_level_and_record_numbers_are_no_hosts():
    assert scan("<34>1 2026-12-04T10:01:02.003Z gw-01 sshd 42 - - Failed password").level == "critical"
    assert scan("<13>Dec  4 10:01:02 gw-01 cron[7]: job done", 2026).level == "notice"
    h = scan("#082929 20261204T105551.167 press-11 <ALARM> SAFE: guard door 3 opened", 2026)
    assert (h.host, h.level, h.component) == ("press-11", "alert", "SAFE")
    h = scan("#075356 20261204T104701.716 transfer-2 <FAULT> LUBE: lubricant reservoir empty", 2026)
    assert (h.host, h.level, h.level_text, h.component) == ("transfer-2", "error", "FAULT", "LUBE")   # a PLC's level


def test_a_delimited_source_learns_its_field_count():
    # a location column with spaces, and a message that holds the separator itself
    lines = [f"1796379341{i:03d}\tWRN\tcnc-0{i % 3}\tHall B / Bay {i % 4}\ttoolmgr\ttool {i}"
             + ("\tlife low" if i % 13 == 0 else "") for i in range(40)]
    fm = SourceFormats()
    hs = [fm.parse(x, "cnc") for x in lines]
    assert fm.formats()["cnc"]["delimited"] == 5
    h = hs[-1]
    assert (h.level, h.host, h.component, h.message) == ("warning", "cnc-0" + str(39 % 3), "toolmgr", "tool 39\tlife low")
    assert hs[-2].message == "tool 38"
    h = scan('04.12.2026;10:06:33;EM-03;A;Heizung;Vorlauftemperatur 32,3 °C, Kessel 1 aus')
    assert (h.ts_text, h.host, h.component) == ("04.12.2026;10:06:33", "EM-03", "Heizung")


def test_shipper_metadata_keys_stay_out_of_the_message():
    h = scan('{"MESSAGE": "Started nginx", "__CURSOR": "s=ab;i=2", "_BOOT_ID": "x1", "@version": "1", "unit": "a"}')
    assert h.message == "Started nginx" and h.host == "a"


def test_a_proposed_layout_is_kept_only_if_it_parses_the_next_lines():
    from gateway.ingest.header_layout import layout_from_answer, layout_to_regex
    rx = layout_to_regex("{ts} [{level}] {host} - {message}")
    assert re.match(rx, "10.30 16:49:06 [W] cell-2 - gripper slip").group("host") == "cell-2"
    with pytest.raises(ValueError):
        layout_to_regex("{when} {message}")                         # a field outside the fixed set
    with pytest.raises(ValueError):
        layout_to_regex("{message} {ts}")                           # the message is the rest of the line
    assert layout_from_answer("Sure!\n`{ts} [{level}] {host} - {message}`") == "{ts} [{level}] {host} - {message}"
    units, levels = ["north-press", "south-press", "east-press"], ["WARN", "INFO"]
    lines = [f"{units[i % 3]} | {levels[i % 2]} | gripper slip {i} mm" for i in range(100)]
    fm = SourceFormats()
    for x in lines[:40]:
        fm.parse(x, "odd")
    (src, sample), = fm.unsure()                                    # no time, no columns: unsure
    assert src == "odd" and sample[0] == lines[0]
    assert not fm.adopt("odd", "{ts} | {level} | {message}")        # no time in these lines: dropped
    assert fm.unsure() == []                                        # asked once
    fm3 = SourceFormats()
    for x in lines[:40]:
        fm3.parse(x, "odd")
    assert fm3.adopt("odd", "{host} | {level} | {message}")
    h = fm3.parse(lines[60], "odd")
    assert (h.host, h.level, h.message) == ("north-press", "warning", "gripper slip 60 mm")
    assert fm3.formats()["odd"]["origin"] == "model"
    fm4 = SourceFormats()
    fm4.set_formats(fm3.formats())                                  # kept across a restart
    assert fm4.parse(lines[61], "odd").host == "south-press"


def test_match_ts_by_first_character_is_the_ordered_search():
    """match_ts tries only the patterns a token's first character can start (a speed-up): the same
    match as trying every pattern in order, on every position of varied lines."""
    from gateway.ingest.header import _TS_PATTERNS, match_ts

    def every(text, pos):
        return next((m for p in _TS_PATTERNS if (m := p.match(text, pos))), None)

    lines = ["2015-10-18 18:01:47,978 INFO [main] x", "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: y",
             "Mon Dec 05 2005 04:01:37 z", "sat jun 4 12:00:01 2005 q", "17/06/09 20:10:40 INFO a", "1117838570 b",
             "1117838570123 c", "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
             "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070", "081109 203615 148 INFO d",
             "03-17 16:13:38.811  1702  2395 D WindowManager", "12/25/2026 10:00:00 e", "30.11.2026 08:00:01 f",
             "09 Dec 2026 10:00:00 +0800 g", "2026-12-04T08:00:00Z h", "20261204T080000 i", "²3 ٣٤ k", "Août x"]
    for line in lines:
        for pos in range(len(line)):
            a, b = match_ts(line, pos), every(line, pos)
            assert (a and (a.re.pattern, a.span())) == (b and (b.re.pattern, b.span())), (line, pos)


def test_match_ts_tries_only_the_patterns_for_its_digit_run():
    # the dispatch on the leading digit run (header_time._BY_LEAD) finds what trying every pattern finds
    import random
    from gateway.ingest import header_time as hd

    def every(text, pos):
        if text[pos:pos + 1].isdigit():
            return next((m for p in hd._DIGIT_TS if (m := p.match(text, pos))), None)
        return hd.match_ts(text, pos)

    rng = random.Random(11)
    pieces = ["1", "12", "2026", "04", "1445144423", "722", "123456", "20261204", "-", "/", ".", ":", " ", "T",
              ",", "Z", "+01:00", "]", "|", "٣", "²", "Dec", "a", "\n", "081109", "203615"]
    texts = ["2026-12-04 10:01:40,075", "1445144423722 x", "20261204T100102", "081109 203615 148",
             "12-04 10:26:11.112", "04.12.2026 10:01:02", "1700000000.5"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 9))) for _ in range(30_000)]
    for t in texts:
        a, b = hd.match_ts(t, 0), every(t, 0)
        assert (a and (a.re, a.span())) == (b and (b.re, b.span())), t


def test_times_sum_as_calendar_timegm():
    # header_time._parse_groups adds up the time itself (the month's start cached): calendar.timegm's result
    import random
    from gateway.ingest.header_time import _parse_groups

    rng = random.Random(2)
    for _ in range(5_000):
        y, mon, d = rng.randint(1, 9999), rng.randint(0, 14), rng.randint(1, 31)
        hh, mm, ss = rng.randint(0, 99), rng.randint(0, 99), rng.randint(0, 99)
        g = {"Y": str(y), "m": str(mon), "d": str(d), "H": str(hh), "M": str(mm), "S": str(ss)}
        try:
            want = float(calendar.timegm((y, mon, d, hh, mm, ss, 0, 0, 0))) if 1 <= mon <= 12 else None
        except ValueError:
            want = None
        assert _parse_groups(g, None) == want, g
