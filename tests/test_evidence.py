"""The lines a question's rare tokens point at (gateway/serve/answer/evidence.py), and the answer check that
keeps a lookup answer only when it reads one of them."""

from __future__ import annotations

from gateway.ingest.record import LogRecord
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store
from gateway.serve.answer import check as answer_check
from gateway.serve.answer import evidence, render

LINES = [f"Failed password for invalid user u{i} from 10.0.0.{i % 5} port {4000 + i} ssh2" for i in range(60)] + [
    "Invalid user chen from 187.141.143.180", "input_userauth_request: invalid user chen [preauth]",
    "PacketResponder 1 for block blk_-6369730 terminating", "Received block blk_6369730 of size 67108864"]


def _grounded(tmp_path, lines, question, call):
    """A store of these lines; the question's evidence; the call run through the plan's grounding."""
    from types import SimpleNamespace

    from gateway.serve.answer.plan import QueryPlan
    s = Store(tmp_path / "g.db")
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)])
    q = QuerySurface(s.path)
    ev = evidence.find(q, question)
    plan = QueryPlan(SimpleNamespace(surface=q), [], question, None, [], evidence=ev)
    return (s, ev, *plan._run_grounded(call))


def _surface(tmp_path):
    s = Store(tmp_path / "e.db")
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(LINES)])
    return s, QuerySurface(s.path)


def test_rare_tokens_find_their_lines_and_common_ones_do_not(tmp_path):
    s, q = _surface(tmp_path)
    ev = evidence.find(q, "What is the status of the user chen?")
    assert ev.tokens == ["chen"] and [x["text"] for x in ev.lines] == LINES[60:62]
    ev = evidence.find(q, "What is the status of block blk_-6369730?")          # the whole id, sign and all
    assert [x["text"] for x in ev.lines] == [LINES[62]]
    assert evidence.find(q, "How many failed password lines are there?").lines == []   # held by 60 lines
    assert evidence.find(q, "Which port did user u7 use?").tokens == ["u7"]
    # in any case, as the operator types it: the log writes "PacketResponder"
    assert [x["text"] for x in evidence.find(q, "which packetresponder terminated?").lines] == [LINES[62]]
    s.close()


def test_a_lookup_answer_must_read_its_line(tmp_path):
    s, q = _surface(tmp_path)
    question = "What is the status of the user chen?"
    ev = evidence.find(q, question)
    result = {"call": {"op": "count", "text": "chen"}, "count": 2}
    read = answer_check.check("The user chen is an invalid user.", question, result, "2 lines match.", None, ev)
    assert read.action == "cited" and "invalid user" in read.text                 # kept, the count after it
    guess = answer_check.check("The user chen is fine.", question, result, "2 lines match.", None, ev)
    assert guess.action == "replaced" and LINES[60] in guess.text                 # the fallback quotes the line
    s.close()


def test_the_word_before_a_token_and_id_prefixes(tmp_path):
    s = Store(tmp_path / "p.db")
    lines = ["Running task 0.0 in stage 21.0 (TID 853)", "Finished task 21.0 in stage 7.0 (TID 1221). 2128 bytes",
             "Block rdd_26_0 stored, free 400.0 KB", "Block rdd_26_1 stored, free 380.2 KB", "Block rdd_260_1 stored"]
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)])
    q = QuerySurface(s.path)
    assert [x["text"] for x in evidence.find(q, "How many bytes did task 21.0 send?").lines] == [lines[1]]
    assert [x["text"] for x in evidence.find(q, "How much is free of rdd_26?").lines] == lines[2:4]
    s.close()


def test_an_id_of_parts_names_the_longer_id_it_ends(tmp_path):
    """"m_000003_0" names attempt_1445_0020_m_000003_0 (the part that tells the attempts apart); a part
    with no "_" of its own ("000003") is no such name, nor is a tail inside another word."""
    s = Store(tmp_path / "t.db")
    lines = ["Assigned container container_1445_01_000005 to attempt_1445_0020_m_000003_0",
             "Assigned container container_1445_01_000006 to attempt_1445_0020_m_000004_0",
             "Progress of TaskAttempt xm_000003_0 is : 0.5"]
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)])
    q = QuerySurface(s.path)
    ev = evidence.find(q, "m_000003_0 这个 attempt 分到的是哪个 container？")
    assert "m_000003_0" in ev.ids and [x["text"] for x in ev.lines] == lines[:1]
    assert evidence.find(q, "What is 000003?").lines == []
    s.close()


def test_a_call_that_drops_the_question_s_ids_gets_them_back(tmp_path):
    from types import SimpleNamespace

    from gateway.serve.answer.plan import QueryPlan
    s, q = _surface(tmp_path)
    question = "What is the lowest port of failed passwords from 10.0.0.3 for user u13?"
    plan = QueryPlan(SimpleNamespace(surface=q), [], question, None, [], evidence=evidence.find(q, question))
    call, result = plan._run_grounded({"op": "count", "text": "Failed password"})
    assert call["text"] == "10.0.0.3 u13 Failed password" and result["count"] == 1
    # a token that would leave nothing to count is not forced: the model's call stands
    plan.evidence = evidence.Evidence(["chen"], [])
    call, result = plan._run_grounded({"op": "count", "text": "Failed password"})
    assert call["text"] == "Failed password" and result["count"] == 60
    s.close()


def test_identifiers_are_conditions_however_common_and_counts_are_not(tmp_path):
    lines = [f"Progress of TaskAttempt attempt_{i % 2}_m_000001_0 is : 0.{i}" for i in range(120)]
    question = 'How many "Progress of TaskAttempt" lines mention attempt_1_m_000001_0 in the top 3?'
    s, ev, call, result = _grounded(tmp_path, lines, question, {"op": "count", "text": "Progress of TaskAttempt"})
    assert ev.ids == ["attempt_1_m_000001_0"] and ev.lines == []          # 60 lines: no evidence, a condition
    assert result["count"] == 60
    assert [evidence.is_id(t) for t in ("3", "10:01", "2026-12-04", "1566", "blk_-12", "r1.2", "org.x.Y")] == [
        False, False, False, True, True, True, True]
    s.close()


def test_a_kind_that_holds_none_of_the_text_goes_before_the_text_does(tmp_path):
    """The model's kind of line is its guess, the text the question's: a call whose kind holds none of
    the text's lines keeps the text, with the question's id, and drops the kind."""
    from types import SimpleNamespace

    from gateway.serve.answer.plan import QueryPlan
    s = Store(tmp_path / "k.db")
    lines = [f"Found block rdd_{i % 3}_0 locally" for i in range(30)] + [
        f"Partition rdd_{i}_0 not found, computing it" for i in range(10)]
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)],
             [1] * 30 + [2] * 10)
    q = QuerySurface(s.path)
    question = 'How many "Found block" lines mention rdd_2_0?'
    plan = QueryPlan(SimpleNamespace(surface=q), [], question, None, [], evidence=evidence.find(q, question))
    call, result = plan._run_grounded({"op": "count", "template": 2, "text": "Found block"})
    assert "template" not in call and call["text"] == "rdd_2_0 Found block" and result["count"] == 10
    call, result = plan._run_grounded({"op": "count", "template": 1, "text": "Found block"})
    assert call["template"] == 1 and result["count"] == 10          # a kind that holds it is kept
    s.close()


def test_a_named_host_or_component_is_a_field_not_evidence(tmp_path):
    s, q = _surface(tmp_path)
    question = "How many lines did the component sshd(pam_unix) write for user chen?"
    assert evidence.find(q, question, ["sshd(pam_unix)"]).tokens == ["chen"]
    assert evidence.part_of("pam_unix", ["sshd(pam_unix)"]) and evidence.part_of("capper", ["line3/capper"])
    assert not evidence.part_of("pam", ["sshd(pam_unix)"]) and not evidence.part_of("line", ["line3/capper"])
    s.close()


def test_a_quoted_phrase_keeps_its_repeated_words():
    from gateway.serve.answer.call import _tidy
    assert _tidy({"op": "count", "text": "Bye Bye [preauth]"}, ["Bye Bye [preauth]"])["text"] == "Bye Bye [preauth]"
    assert _tidy({"op": "count", "text": "zone zone temperature"})["text"] == "zone temperature"


def test_a_field_s_own_words_are_no_text_and_ids_end_in_digits(tmp_path):
    from types import SimpleNamespace

    from gateway.serve.answer.plan import QueryPlan
    s, q = _surface(tmp_path)
    plan = QueryPlan(SimpleNamespace(surface=q), [], "How many lines did station 工位3 write?", None, [])
    assert plan._without_field_words({"op": "count", "text": "3", "host": "工位3"}) == {"op": "count", "host": "工位3"}
    kept = plan._without_field_words({"op": "count", "text": "pump 3", "host": "工位3"})
    assert kept["text"] == "pump"
    assert [evidence.is_id(t) for t in ("ES2", "zone2", "V17", "ES", "2x")] == [True, True, True, False, False]
    s.close()


def test_the_lines_of_the_most_identifying_token_come_first(tmp_path):
    """"What did nagios fail to send?": "nagios" and "fail" are held by different lines; nagios's lines
    are shown before the older ones that only say "fail"."""
    s = Store(tmp_path / "n.db")
    lines = ["Received disconnect: Auth fail [preauth]", "Received disconnect: Auth fail [preauth]",
             "Auth fail for guest", "Invalid user nagios from 187.141.143.180",
             "Failed password for invalid user nagios from 187.141.143.180 port 55761 ssh2"]
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)])
    q = QuerySurface(s.path)
    ev = evidence.find(q, "What did nagios fail to send to the server?")
    shown = [x["text"] for x in ev.lines]
    assert ev.tokens[:1] == ["nagios"] and lines[3] in shown and lines[4] in shown
    s.close()


def test_one_line_of_each_kind_before_a_second_of_any(tmp_path):
    """"What user is closed for?": three "Connection closed by" lines are older than the one "session closed
    for user fztu"; one line of each kind is shown first, so that line is among them. The time is not said
    twice where the line's text begins with it."""
    from gateway.pipeline.fields import LineFields
    s = Store(tmp_path / "k.db")
    lines = [f"Dec 10 06:5{i}:48 Connection closed by 10.0.0.{i} [preauth]" for i in range(5)] + \
        ["Dec 10 09:45:06 pam_unix(sshd:session): session closed for user fztu"] + \
        [f"Dec 10 10:{i:02d}:00 Invalid user u{i}" for i in range(45)]         # "user": no identifier
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)],
             [1] * 5 + [2] + [3] * 45, [LineFields(time_text=x[:15]) for x in lines])
    ev = evidence.find(QuerySurface(s.path), "What user is closed for?")
    assert lines[5] in [x["text"] for x in ev.lines] and len(ev.lines) == evidence.MAX_EVIDENCE
    assert "- Dec 10 09:45:06 pam_unix" in evidence.render(ev)
    s.close()


def test_a_word_before_a_token_is_only_next_to_it():
    from gateway.serve.answer.evidence import words_before
    got = words_before("“is not responding, waited”记录的耗时平均值是多少（保留 1 位小数）？ task 21.0, stage: 3.0")
    assert "1" not in got and got["21.0"] == "task" and got["3.0"] == "stage"


def test_in_log_holds_a_token_only_whole(tmp_path):
    """The answer check's store lookup: an address or id a stored line holds whole, not a part of a longer
    one, nor another number written with the same digits."""
    s, q = _surface(tmp_path)
    logged = evidence.in_log(q)
    assert logged("187.141.143.180") and logged("blk_-6369730") and logged("67108864")
    assert not logged("187.141.143.18") and not logged("141.143.180") and not logged("blk_63697")
    assert not logged("6710886") and not logged("10.0.0.9")
    c = answer_check.check("He came from 187.141.143.180.", "Where is user chen from?",
                           {"call": {"op": "lines", "text": "chen"}, "count": 1, "lines": []}, "1 line.", None,
                           logged=logged)
    assert c.action == "kept"
    s.close()


def test_of_an_ids_lines_those_saying_the_questions_words_come_first(tmp_path):
    """A pid held by many lines of several kinds: the lines shown are those that also say the question's
    other words (a Chinese question's by the English its terms gloss to), not the oldest."""
    rows = [f"sshd[24833]: Failed password for invalid user admin port {p}" for p in range(8)] + [
        "sshd[24833]: pam_unix(sshd:auth): check pass; user unknown",
        "sshd[24833]: Invalid user admin from 10.1.2.3", "sshd[24833]: Received disconnect from 10.1.2.3: Bye",
        "sshd[24833]: Disconnecting: Too many authentication failures for admin [preauth]",
        "sshd[777]: Disconnecting: Too many authentication failures for root [preauth]"]
    s = Store(tmp_path / "w.db")
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(rows)])
    q = QuerySurface(s.path)
    for question in ("Which user did sshd[24833] disconnect after too many authentication failures?",
                     "sshd[24833] 那个进程因为认证失败次数太多被踢掉了，是哪个用户？"):
        ev = evidence.find(q, question)
        assert ev.tokens[0] == "24833" and rows[11] in [x["text"] for x in ev.lines], question
    s.close()


def test_a_latin_name_in_a_chinese_question_is_a_condition_however_common(tmp_path):
    """A Chinese question writes a name in the log's own script ("u7 ...", "password ..."): each Latin
    token the store holds is a condition of the call, as an id is; an English question's plain words are
    conditions only when rare."""
    lines = [f"Failed password for {'root' if i % 2 else 'guest'} from 10.0.0.{i % 7} port {4000 + i} ssh2"
             for i in range(120)]
    s, ev, call, result = _grounded(tmp_path, lines, "root 最后一次密码输错是几点几分？",
                                    {"op": "first_last", "text": "password"})
    assert ev.ids == ["root"] and ev.lines == []                  # 60 lines: a condition, not evidence
    assert call["text"] == "root password" and result["count"] == 60
    q = QuerySurface(s.path)
    assert result["last"]["text"] == lines[119]
    assert evidence.find(q, "When did root last fail its password?").ids == []    # English: too common
    assert evidence.find(q, "nobody 最后一次密码输错是几点几分？").ids == []          # a name no line holds
    s.close()


def test_the_log_s_own_name_is_no_condition(tmp_path):
    """"spark日志里 ...": the log is named by what it is, not by a word its lines hold ("spark" of the
    component spark.CacheManager); taken as a condition it became the call's text filter. A level named so
    ("ERROR 日志") is a level, not the log's name."""
    from gateway.serve.answer.question import log_names
    lines = [f"17/06/09 20:11:{i % 60:02d} INFO spark.CacheManager: Partition rdd_42_{i} not found, computing it"
             for i in range(30)]
    s = Store(tmp_path / "n.db")
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)])
    q = QuerySurface(s.path)
    question = "spark日志里 哪个rdd编号出现最多"
    assert "spark" in evidence.find(q, question).ids          # held by every line: a Chinese question's name
    names = log_names(question, ["INFO", "ERROR"])
    assert names == ["spark"] and "spark" not in evidence.find(q, question, names).ids
    assert log_names("ERROR 日志有几条", ["INFO", "ERROR"]) == []
    assert log_names("In the whole linux syslog, which hour is busiest?", []) == ["linux"]
    assert log_names("How many lines does the HDFS log hold?", []) == ["HDFS"]
    assert log_names('How many "disk full" log lines?', []) == []
    s.close()


HADOOP = ("2015-10-18 18:04:05,127 INFO [AsyncDispatcher event handler] org.apache.hadoop.mapreduce.v2.app.job.impl."
          "TaskAttemptImpl: TaskAttempt: [attempt_1445144423722_0020_m_000007_0] using containerId: "
          "[container_1445144423722_0020_01_000009 on NM: [MSRA-SA-41.fareast.corp.microsoft.com:7109]")


def test_a_long_line_is_shown_from_its_message():
    """A line longer than the prompt shows of it, or with a long header: its header's fields said short
    before its message, so the clip takes the header and not the message's end (the node asked for)."""
    line = {"id": 1, "time": 1445162645.127, "time_text": "2015-10-18 18:04:05,127", "text": HADOOP,
            "component": "org.apache.hadoop.mapreduce.v2.app.job.impl.TaskAttemptImpl", "level": "info"}
    assert render.message_of(line).startswith("TaskAttempt: [attempt_") and "MSRA-SA-41" in render.message_of(line)
    shown = render.render_result({"call": {"op": "lines"}, "count": 1, "lines": [line]})
    assert "(component TaskAttemptImpl)" in shown and "MSRA-SA-41" in shown and "INFO [AsyncDispatcher" not in shown
    ev = evidence.render(evidence.Evidence(["attempt_1445144423722_0020_m_000007_0"], [line]))
    assert "- 2015-10-18 18:04:05,127 (TaskAttemptImpl): TaskAttempt: [attempt_" in ev and "7109]" in ev
    short = {**line, "text": "2015-10-18 18:04:05,127 INFO [main] a.b.C: done", "component": "a.b.C"}
    assert render.message_of(short) is None and short["text"] in evidence.render(evidence.Evidence(["x"], [short]))
    # a short line whose header is long (a thread and a logger's dotted class) is said short too
    got = {**line, "text": HADOOP.split(": TaskAttempt:")[0] + ": Got allocated containers 1"}
    assert render.message_of(got) == "Got allocated containers 1"
    assert "(TaskAttemptImpl): Got allocated" in evidence.render(evidence.Evidence(["x"], [got]))
    # a component not in the line's header leaves the line as it is
    assert render.message_of({**line, "component": "nowhere"}) is None


def test_a_json_line_is_shown_by_its_message_not_its_metadata():
    """A journald JSON line opens with a cursor and boot ids: shown clipped from its start, its message
    was never in the prompt. It is shown by its message pair (the rest as key=value), its fields said."""
    text = ('{"__CURSOR":"s=66eb06e466eb06e466eb06e466eb06e4;i=125f6;b=4e60be664e60be664e60be664e60be66",'
            '"__REALTIME_TIMESTAMP":"1796379525895155","_BOOT_ID":"4e60be664e60be664e60be664e60be66","PRIORITY":"4",'
            '"SYSLOG_IDENTIFIER":"dockerd","_HOSTNAME":"edge-03","MESSAGE":"Health check for container 6534 failed: '
            'timeout after 21s"}')
    line = {"id": 1, "time": 1796379525.9, "time_text": "1796379525895155", "text": text, "host": "edge-03",
            "component": "dockerd", "level": "warning"}
    assert render.message_of(line) == "Health check for container 6534 failed: timeout after 21s"
    shown = render.render_result({"call": {"op": "lines"}, "count": 1, "lines": [line]})
    assert "component dockerd" in shown and "timeout after 21s" in shown and "__CURSOR" not in shown


def _sshd(i: int, user: str = "guest", host: str = "LabSZ") -> dict:
    t = f"Dec 10 11:04:{38 - i:02d}"
    return {"id": 100 - i, "time": 1000.0 - i, "time_text": t, "host": host, "component": "sshd",
            "text": f"{t} {host} sshd[{25534 + i}]: input_userauth_request: invalid user {user} [preauth]"}


def test_a_message_written_again_is_shown_once_with_its_count():
    """Lines that differ only in their header's time and process id are one message: shown once with how
    many and since when, in the prompt, the fallback and the evidence (listed one by one, a 1.5B model
    copied the same text into its answer once per line)."""
    lines = [_sshd(0), _sshd(1), _sshd(2), _sshd(3, user="ingrid"), _sshd(4, host="other")]
    r = {"call": {"op": "lines", "text": "invalid"}, "count": 5, "lines": lines}
    shown = render.render_result(r)
    assert shown.count("invalid user guest") == 2 and "(x3, the first at Dec 10 11:04:36)" in shown
    assert "sshd[25534]" in shown and "sshd[25535]" not in shown        # the newest of them stands for them
    assert "invalid user ingrid" in shown and "the newest 5, newest first" in shown
    plain = render.plain_answer(r, "which users?", None)
    assert plain.count("invalid user guest [preauth] (x3") == 1 and "ingrid" in plain   # one of each message
    assert "（x3，最早在 Dec 10 11:04:36）" in render.plain_answer(r, "哪些用户？", None)
    ev = evidence.render(evidence.Evidence(["guest"], lines[:3]))
    assert ev.count("invalid user guest") == 1 and "(x3, the first at Dec 10 11:04:36)" in ev
    oldest_first = evidence.render(evidence.Evidence(["guest"], lines[2::-1]))   # evidence's own order
    assert "sshd[25536]" in oldest_first and oldest_first.rstrip().endswith("[preauth] (x3)")
    # numbers of the message itself keep lines apart
    sent = [{**_sshd(i), "text": f"Dec 10 11:04:{38 - i:02d} LabSZ sshd[1]: sent {i} bytes"} for i in range(3)]
    assert [n for _, n, _ in render.fold(sent)] == [1, 1, 1]


def test_an_id_the_question_names_keeps_other_entities_lines_out(tmp_path):
    """"Which container got assigned to attempt X?": the assignment lines of other attempts hold the
    question's rare words but not its id; shown beside the result, they are another attempt's answer."""
    lines = [f"Assigned container container_{i:02d} to attempt_{i:02d}_m_0" for i in range(5)]
    lines += [f"Progress of TaskAttempt attempt_03_m_0 is : 0.{i}" for i in range(50)]   # the id: 51 lines
    question = "Which container got assigned to attempt_03_m_0?"
    s, ev, call, result = _grounded(tmp_path, lines, question, {"op": "count", "text": "assigned"})
    assert ev.ids == ["attempt_03_m_0"] and "assigned" in ev.tokens
    assert [x["text"] for x in ev.lines] == [lines[3]]              # not the first three attempts' lines
    without = evidence.find(QuerySurface(s.path), "Which container got assigned to a task?")
    assert [x["text"] for x in without.lines] == lines[:3]          # no id named: the oldest of them
    s.close()


def test_a_few_lines_listing_does_not_repeat_what_the_count_matched_on(tmp_path):
    """A count whose text was relaxed to the words the lines hold says so once, not again after its
    listing (20 tokens of the answer's prompt said twice)."""
    from types import SimpleNamespace

    from gateway.serve.answer.plan import QueryPlan
    s = Store(tmp_path / "r.db")
    lines = [f"Assigned container container_{i:02d} to attempt_{i:02d}_m_0" for i in range(2)]
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)])
    question = "Which container got assigned?"
    plan = QueryPlan(SimpleNamespace(surface=QuerySurface(s.path)), [{"role": "user", "content": question}],
                     question, None, [])
    prompt = plan.finish('count", "text": "container got assigned"}')[-1]["content"]
    assert plan.result.get("text_relaxed_to") and prompt.count("Matched on the words") == 1
    assert lines[0].split()[-1] in prompt and lines[1].split()[-1] in prompt      # the lines listed
    s.close()


def test_the_fallback_says_a_line_s_time_once():
    """A line that begins with its time in its own form ("17/06/09", a year of two digits) is listed in the
    plain answer after the time's ISO form (the form answers give) from past its written time: said twice,
    a line's time made three lines' listing hold a 10-word run three times (the benchmark's loop)."""
    t0 = 1497038458.0
    lines = [{"id": 9 - i, "time": t0 + i, "time_text": f"17/06/09 20:00:{58 - i}", "component": "executor.Executor",
              "text": f"17/06/09 20:00:{58 - i} INFO executor.Executor: Finished task {i}.0 in stage 2.0"}
             for i in range(3)]
    plain = render.plain_answer({"call": {"op": "lines", "text": "Finished"}, "count": 3, "lines": lines},
                                "which tasks finished?", None)
    iso = str(render._shown_time(lines[0]))
    assert iso.startswith("2017-06-") and "17/06/09" not in plain
    assert f"\n- {iso}: INFO executor.Executor: Finished task 0.0 in stage 2.0" in plain
    # a line whose time the answer gives as written is listed whole
    sshd = {"id": 1, "time": t0, "time_text": "Dec 10 06:55:46", "text": "Dec 10 06:55:46 LabSZ sshd[24200]: x"}
    assert "\n- Dec 10 06:55:46 LabSZ sshd[24200]: x" in render.plain_answer(
        {"call": {"op": "lines"}, "count": 1, "lines": [sshd]}, "what?", None)


def test_the_fallback_lists_lines_of_one_second_under_their_time():
    """Three lines of one second are listed under their time once, each from past the time it writes:
    each said whole, the time and the header made a 10-word run three times (the benchmark's loop)."""
    from tools.bench import qa_judge
    lines = [{"id": 9 - i, "time": 1497038471.0, "time_text": "17/06/09 20:01:11", "component": "executor.Executor",
              "text": f"17/06/09 20:01:11 INFO executor.Executor: Finished task {i}.0 in stage 29.0 (TID {i}). "
                      "2128 bytes result sent to driver"} for i in range(3)]
    r = {"call": {"op": "lines", "text": "driver"}, "count": 3, "lines": lines}
    iso = str(render._shown_time(lines[0]))
    for question in ("which tasks sent results to the driver?", "哪些任务把结果发给了 driver？"):
        plain = render.plain_answer(r, question, None)
        assert plain.count(iso) == 1 and "\n  - INFO executor.Executor: Finished task 2.0 in stage 29.0" in plain
        assert not qa_judge.looped(plain, "stop")
    apart = [{**x, "time": 1497038471.0 - i} for i, x in enumerate(lines)]    # seconds apart: one a line
    assert "\n- " + str(render._shown_time(apart[2])) + ": INFO" in render.plain_answer(
        {**r, "lines": apart}, "which?", None)


def test_a_token_rare_in_the_first_hits_but_common_in_the_store_is_not_rare(tmp_path):
    """The token-search scan reads a sample (its first SCAN_LINES hits); rarity is judged on the store:
    "3" is a whole token in few of the first hits ("0.3", "3.0" are not whole) but in many lines past them."""
    lines = [f"valve open {i % 97} pressure {(i % 500) / 10:.1f} bar" for i in range(6000)]
    lines += ["probe x9 failed"] * 3 + [f"probe at node.x9.lan {i} ok" for i in range(600)]
    s = Store(tmp_path / "r.db")
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(lines)])
    q = QuerySurface(s.path)
    first = [r for r in q.execute("SELECT l.text FROM logs l WHERE l.id IN (SELECT rowid FROM logs_fts "
                                  "WHERE logs_fts MATCH '\"3\"' LIMIT ?)", [evidence.SCAN_LINES])[0]]
    held = sum(1 for (t,) in first if evidence._whole("3").search(t))
    assert 0 < held <= evidence.RARE_MAX_LINES and len(first) == evidence.SCAN_LINES   # the sample says rare
    assert "3" not in evidence.find(q, "Were there any faults on line 3?").tokens
    # a token most of whose hits are parts of an address, and whole in a few lines only, stays rare
    ev = evidence.find(q, "what failed at probe x9?")
    assert ev.tokens[0] == "x9" and [x["text"] for x in ev.lines] == ["probe x9 failed"] * 3
    s.close()


def test_a_written_windows_times_are_no_tokens_and_one_time_is():
    assert evidence.candidates("20:10:50 到 20:10:59 这十秒里，Finished task 一共有几条？") == ["Finished", "task"]
    assert "18:04:04" not in evidence.candidates("How many lines between 2015-10-18 18:04:04 and 2015-10-18 18:04:06?")
    assert evidence.candidates("What happened at 10:55:49?")[0] == "10:55:49"     # a point in time: its line


def test_a_cut_listing_shows_its_newest_error_lines(tmp_path):
    """"Why did attempt A die?": of A's many lines the newest are state changes; its one FATAL line says
    why and is shown after the listing. A listing whose lines are all errors gets none (they tell nothing
    apart), nor does one with no error line."""
    s = Store(tmp_path / "w.db")
    rows = [(6, f"Progress of attempt_7 is : 0.{i}") for i in range(30)] + [
        (2, "Task: attempt_7 - exited : java.net.NoRouteToHostException"), (6, "attempt_7 Transitioned to FAILED")]
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", sev, x) for i, (sev, x) in enumerate(rows)])
    q = QuerySurface(s.path)
    call = {"op": "lines", "text": "attempt_7"}
    assert [x["text"] for x in evidence.worst(q, call, 32)] == [rows[30][1]]
    assert evidence.worst(q, {**call, "text": "NoRouteToHostException"}, 1) == []
    assert evidence.worst(q, {**call, "text": "Progress"}, 30) == []
    s.close()
