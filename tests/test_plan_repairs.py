"""The plan's own repairs of a call the model wrote (plan.QueryPlan._run_grounded and finish), each on
a small store: a where the lines lack moves into the text, a field the lines lack swaps, a parameter's
value the call dropped becomes a condition, a text that matches nothing says what the rest matches, a
level word or a stats' own value as a condition goes."""
from __future__ import annotations

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import LineFields, named_params
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store
from gateway.serve.answer import evidence, grounding
from gateway.serve.answer.plan import QueryPlan
from gateway.serve.answer.render import render_result
from tests.helpers import PlanTool as _Tool


def _named_kinds(tmp_path, rows, tids, tmpls, words, kind_id):
    """A store of these lines (each its template, its parameters named), and its listed kind `kind_id`
    as the question's `words` list it."""
    store, s = _stored(tmp_path, rows, tids, [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    return store, s, [k for k in grounding.Kinds(s).kinds(words, []) if k.id == kind_id]


def _kinded(tmp_path, rows, tids, tmpls):
    """A store of these lines, line i of template tids[i] (tmpls[tids[i] - 1]), its parameters named."""
    return _stored(tmp_path, rows, tids, [LineFields(template=tmpls[t - 1], params=named_params(tmpls[t - 1], r))
                                          for r, t in zip(rows, tids)])


def _stored(tmp_path, rows, tids, fields, host="h", severity=6):
    """A store of these lines (one template id and LineFields each) and its query surface."""
    recs = [LogRecord(ts=1.7e9 + i, source="t", host=host, severity=severity, text=t) for i, t in enumerate(rows)]
    store = Store(tmp_path / "s.db")
    store.append(recs, list(tids), list(fields))
    return store, QuerySurface(store.path)


def test_a_where_the_texts_lines_lack_joins_the_text(tmp_path):
    """"Found block" lines with rdd_2_0, called with where block = rdd_2_0: the grouping wrote that kind as
    "Found block rdd_<rdd>_<number> locally" (no <block>), so the value joins the text: 2 lines, not the one
    line of another kind that has a <block>."""
    rows = ["Found block rdd_2_0 locally", "Found block rdd_2_0 locally", "Found block rdd_2_1 locally",
            "Block rdd_2_0 stored as bytes in memory"]
    tmpls = ["Found block rdd_<*>_<*> locally"] * 3 + ["Block <*> stored as bytes in memory"]
    store, s = _stored(tmp_path, rows, [1, 1, 1, 2], [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    q = '"Found block" 里带 rdd_2_0 的行数'
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=grounding.Kinds(s).kinds(["found"], []))
    plan.finish('count", "text": "Found block", "where": {"block": "rdd_2_0"}}')
    assert plan.result["count"] == 2 and "where" not in plan.call
    s.close()
    store.close()


def test_a_top_by_host_over_lines_without_one_is_by_component(tmp_path):
    rows = ["a started", "b started", "c started"]
    store, s = _stored(tmp_path, rows, [1, 1, 1], [LineFields(template="<*> started", params=named_params("<*> started", t), component=c)
                                   for t, c in zip(rows, ["executor", "executor", "driver"])], host="")
    q = "哪个模块刷日志刷得最多？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('top_k", "by": "host", "k": 1}')
    assert plan.call["by"] == "component" and plan.result["top"][0]["value"] == "executor"
    s.close()
    store.close()


def test_a_word_that_is_a_parameters_value_is_a_condition(tmp_path):
    """"the maximum port for admin": admin is the whole value of a parameter of the listed kind and no word of
    its text; a 1.5B wrote stats of port over every line, the condition is added."""
    tmpl = "Failed password for invalid user <*> from <*> port <*> ssh2"
    rows = [f"Failed password for invalid user {u} from 10.0.0.{i} port {p} ssh2"
            for i, (u, p) in enumerate([("admin", 100), ("root", 900), ("admin", 300), ("test", 50)])]
    store, s = _stored(tmp_path, [*rows, "Server listening on port 22"], [1, 1, 1, 1, 2], [*(LineFields(template=tmpl, params=named_params(tmpl, t)) for t in rows),
                                         LineFields(template="Server listening on port <*>", params=[("22", 22.0, "port")])])
    q = "What is the maximum port for admin when failed password?"
    kinds = grounding.Kinds(s).kinds(["failed", "password", "port"], [])
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    plan.finish('stats", "of": "port", "text": "port"}')
    assert plan.call["where"] == {"user": "admin"} and plan.result["max"] == 300
    plan.finish('stats", "of": "port", "text": "password"}')          # "password" is the kind's own word
    assert plan.call["where"] == {"user": "admin"}
    s.close()
    store.close()


def test_a_text_matching_nothing_with_a_component_says_what_the_component_matches(tmp_path):
    rows = ["Payment request took 12 ms", "Payment request took 30 ms", "Evicted 4 cache entries"]
    store, s = _stored(tmp_path, rows, [1, 1, 2], [LineFields(template=t, component=c) for t, c in zip(rows, ["Pay", "Pay", "Cache"])])
    q = "How many entries were written by the Pay component?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('count", "component": "Pay", "text": "entries"}')
    assert plan.result["without_text"] == {"text": '"entries"', "count": 2} and "match 2 lines" in plan.rendered
    s.close()
    store.close()


def test_a_capital_letter_that_is_a_parameters_value_is_a_condition(tmp_path):
    tmpl = "EMERGENCY STOP circuit <*> discrepancy, press locked"
    rows = [f"EMERGENCY STOP circuit {c} discrepancy, press locked" for c in "ABBA"]
    store, s = _stored(tmp_path, [*rows, "press ok"], [1, 1, 1, 1, 2], [*(LineFields(template=tmpl, params=named_params(tmpl, t)) for t in rows),
                                         LineFields(template="press ok")])
    q = 'How many "discrepancy, press locked" entries have channel B? I need it.'
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=grounding.Kinds(s).kinds(["discrepancy"], []))
    plan.finish('count", "text": "discrepancy, press locked"}')
    assert plan.call["where"] == {"circuit": "B"} and plan.result["count"] == 2
    s.close()
    store.close()


def test_a_level_word_as_text_and_a_stats_condition_on_its_own_of_are_dropped(tmp_path):
    rows = [f"ANR in app: is not responding, waited {w}ms" for w in (1, 2000, 4000)]
    tmpl = "ANR in app: is not responding, waited <*>"
    store, s = _stored(tmp_path, [*rows, "boot ok"], [1, 1, 1, 2], [*(LineFields(template=tmpl, params=named_params(tmpl, t), level="warning")
                                        for t in rows), LineFields(template="boot ok", level="info")], severity=4)
    q = "“is not responding, waited”记录的耗时（毫秒）平均值是多少（保留 1 位小数）？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=grounding.Kinds(s).kinds(["responding"], []))
    plan.finish('stats", "of": "waited", "where": {"waited": "1"}, "text": "is not responding, waited"}')
    assert "where" not in plan.call and plan.result["n"] == 3
    plan.finish('count", "level": "warning", "text": "warning"}')
    assert "text" not in plan.call and plan.result["count"] == 3
    s.close()
    store.close()


def test_a_rare_token_a_field_already_says_is_not_added_to_the_text(tmp_path):
    rows = ["level=warning msg=disk slow", "level=warning msg=fan slow", "level=info msg=ok", "level=info msg=ok"]
    store, s = _stored(tmp_path, rows, [1, 1, 2, 2], [LineFields(template=t, level="warning" if "warning" in t else "info") for t in rows])
    q = "最近 10 分钟内有多少条 warning 日志？"
    ev = evidence.find(s, q)
    assert "warning" in ev.tokens                       # a rare token of the question ...
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], evidence=ev, kinds=[])
    plan.finish('count", "level": "warning", "text": "warning"}')
    assert "text" not in plan.call and plan.result["count"] == 2      # ... that the level says
    s.close()
    store.close()


def test_a_chinese_question_names_its_parameter_by_its_glossed_word(tmp_path):
    """"源端口最小是多少" with a stats of a parameter the lines do not have: the question's 端口 glosses to
    "port", so the stats reads <port> (the address is a condition)."""
    tmpl = "Failed password for root from <*> port <*> ssh2"
    rows = [f"Failed password for root from 10.0.0.{i % 2} port {p} ssh2" for i, p in enumerate([700, 300, 500, 100])]
    store, s = _stored(tmp_path, [*rows, "Accepted publickey for bob"], [1] * 4 + [2],
                       [*(LineFields(template=tmpl, params=named_params(tmpl, t)) for t in rows),
                        LineFields(template="Accepted publickey for <*>", params=[("bob", None, "user")])])
    q = "10.0.0.0 用 root 密码登录失败的那些记录里，源端口最小是多少？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [],
                     kinds=grounding.Kinds(s).kinds(["failed", "password"], []))
    plan.finish('stats", "of": "fail", "where": {"address": "10.0.0.0"}, "text": "10.0.0.0 port"}')
    assert plan.call["of"] == "port" and plan.result["min"] == 500
    s.close()
    store.close()


def test_a_where_without_a_kind_reads_the_listed_kind_that_has_its_parameters(tmp_path):
    """"Did TID 7 ever finish?": the question's words list the finished kind; a call with where tid = 7 and
    no kind matched the started line (a kind with a <tid> too). It reads the listed kind: no line there,
    so none; TID 5, which finished, keeps its finished line."""
    started, finished = "Running task <*> in stage <*> (TID <*>)", "Finished task <*> in stage <*> (TID <*>). <*> bytes result sent to driver"
    rows = ["Running task 1.0 in stage 3.0 (TID 5)", "Running task 2.0 in stage 3.0 (TID 7)",
            "Finished task 1.0 in stage 3.0 (TID 5). 2128 bytes result sent to driver"]
    tmpls = [started, started, finished]
    store, s = _stored(tmp_path, rows, [1, 1, 2], [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    kinds = grounding.Kinds(s)
    listed = [k for k in kinds.kinds(["finished", "driver"], []) if k.id == 2]
    assert listed and "tid" in listed[0].params
    q = "Did TID 7 ever finish and send its result to the driver?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('count", "text": "TID", "where": {"tid": "7"}}')
    assert plan.call["template"] == 2 and plan.result["count"] == 0
    q = "Did TID 5 ever finish and send its result to the driver?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('count", "text": "TID", "where": {"tid": "5"}}')
    assert plan.call["template"] == 2 and plan.result["count"] == 1
    # a text the listed kind's lines do not hold ("Running") is the model's own choice of kind: kept
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('count", "text": "Running", "where": {"tid": "7"}}')
    assert "template" not in plan.call and plan.result["count"] == 1
    s.close()
    store.close()


def test_stats_of_a_listed_kinds_parameter_read_that_kind_only(tmp_path):
    """"the highest progress of attempt X": the listed kind writes "Progress ... is : <number>"; a call with of
    "number" and no kind read every kind's <number> of the attempt (a port, 13562). It reads the listed kind's."""
    progress, port = "Progress of TaskAttempt <*> is : <*>", "Shuffle port returned by ContainerManager for <*> : <*>"
    rows = ["Progress of TaskAttempt attempt_9 is : 0.29", "Shuffle port returned by ContainerManager for attempt_9 : 13562",
            "Progress of TaskAttempt attempt_9 is : 0.76", "Progress of TaskAttempt attempt_8 is : 0.99"]
    tmpls = [progress, port, progress, progress]
    store, s = _stored(tmp_path, rows, [1, 2, 1, 1], [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    listed = [k for k in grounding.Kinds(s).kinds(["progress"], []) if k.id == 1]
    assert listed and "number" in listed[0].params
    q = "What's the highest progress value reported for attempt_9?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('stats", "of": "number", "want": "max", "text": "attempt_9"}')
    assert plan.call["template"] == 1 and plan.result["max"] == 0.76
    s.close()
    store.close()


def test_a_listing_of_no_kind_reads_the_listed_kind_with_the_asked_parameter(tmp_path):
    """"which driver address did the executor connect to": a listing of "executor driver" lines read the many
    result lines; the listed kind with an <address> is read, with the text's word it writes ("driver")."""
    sent, conn = "Finished task <*> in stage <*>. <*> bytes result sent to driver", "Connecting to driver: spark://S@<*>"
    rows = [f"Finished task {i}.0 in stage 3.0. 2128 bytes result sent to driver" for i in range(4)] + \
        ["Connecting to driver: spark://S@10.10.34.11:48069"]
    tmpls = [sent] * 4 + [conn]
    store, s = _stored(tmp_path, rows, [1] * 4 + [2], [LineFields(template=m, params=named_params(m, t), component="executor")
                                                      for t, m in zip(rows, tmpls)])
    listed = grounding.Kinds(s).kinds(["finished", "connecting"], [])
    assert any(k.id == 2 and "address" in k.params for k in listed)
    q = "executor 连的 driver 地址是哪个？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('lines", "text": "driver finished"}')
    assert plan.call["template"] == 2 and plan.result["count"] == 1 and "10.10.34.11" in plan.rendered
    s.close()
    store.close()


def test_a_cut_listing_of_an_id_shows_its_lines_of_the_questions_kind(tmp_path):
    """"why did attempt_5 exit abnormally": a listing of the id's many lines (newest first: state changes)
    reads its "Diagnostics report ... Exception" line too, the kind the question's words chose."""
    diag, state = "Diagnostics report from <*>: Error: java.net.NoRouteToHostException", "<*> TaskAttempt Transitioned from <*> to <*>"
    rows = ["Diagnostics report from attempt_5: Error: java.net.NoRouteToHostException"] + \
        [f"attempt_5 TaskAttempt Transitioned from S{i} to S{i + 1}" for i in range(14)]
    tmpls = [diag] + [state] * 14
    store, s = _stored(tmp_path, rows, [1] + [2] * 14, [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    listed = sorted(grounding.Kinds(s).kinds(["diagnostics", "transitioned"], []), key=lambda k: k.id)   # best first
    assert [k.id for k in listed] == [1, 2]
    q = "attempt_5 是因为什么异常退出的？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    messages = plan.finish('lines", "text": "attempt_5"}')
    assert plan.result["count"] == 15 and "NoRouteToHostException" not in render_result(plan.result)
    assert "NoRouteToHostException" in messages[-1]["content"]
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed[1:])   # its kind not listed
    assert "NoRouteToHostException" not in plan.finish('lines", "text": "attempt_5"}')[-1]["content"]
    s.close()
    store.close()


def test_stats_that_read_numbers_keep_them_over_a_listed_kind_without_any(tmp_path):
    """Stats of "size" over an id's lines read numbers; the listed kind with a <size> holds the id's words
    but no number there: the numbers stay."""
    stored, sent = "Block <*> stored size <*>", "Block <*> sent size <*>"
    rows = ["Block b_1 stored size 12", "Block b_1 stored size 30", "Block b_2 sent size unknown"]
    store, s, listed = _named_kinds(tmp_path, rows, [1, 1, 2], [stored, stored, sent], ["sent"], 2)
    assert listed and "size" in listed[0].params
    q = "What is the largest size of block b_1?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('stats", "of": "size", "want": "max", "text": "b_1"}')
    assert plan.result["max"] == 30 and "template" not in plan.call
    s.close()
    store.close()


def test_stats_of_another_listed_kinds_parameter_read_that_kind(tmp_path):
    """"the lowest Timeout (ms)": the call's kind ("... timeout after <duration>") has no <timeout>; the
    numbers after its word "timeout" were seconds of another thing. The listed kind that writes <timeout>
    is read, with the call's other conditions."""
    slow, health = "Read stalled Timeout <*>", "Health check failed: timeout after <*>"
    rows = ["Read stalled Timeout 753ms", "Read stalled Timeout 5ms", "Health check failed: timeout after 25s",
            "Health check failed: timeout after 56s"]
    tmpls = [slow, slow, health, health]
    store, s = _stored(tmp_path, rows, [1, 1, 2, 2], [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    listed = grounding.Kinds(s).kinds(["timeout", "stalled", "health"], [])
    assert {k.id for k in listed} == {1, 2} and "timeout" in next(k for k in listed if k.id == 1).params
    q = "“Timeout”记录中耗时（毫秒）的最低值是多少？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('stats", "of": "timeout", "want": "min", "text": "Timeout", "template": 2}')
    assert plan.call["template"] == 1 and plan.result["min"] == 5
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('stats", "of": "duration", "want": "min", "text": "Timeout"}')   # the other kind's quantity
    assert plan.call["template"] == 1 and plan.call["of"] == "timeout" and plan.result["min"] == 5
    s.close()
    store.close()


def test_stats_naming_no_quantity_over_several_kinds_count_the_lines(tmp_path):
    """"设备 press-08 总共产生了多少条日志": stats with no `of` over a host's lines of several kinds summed each
    line's first number (rpm, strokes); the lines are counted. Over one kind's lines its number stays."""
    pump, ctrl = "pump <*> started, <*> rpm", "CTRL: <*> strokes"
    rows = ["pump 1 started, 1624 rpm", "CTRL: 987858 strokes", "CTRL: 987859 strokes"]
    tmpls = [pump, ctrl, ctrl]
    store, s = _stored(tmp_path, rows, [1, 2, 2], [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    q = "设备 press-08 总共产生了多少条日志？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('stats", "want": "sum"}')
    assert plan.call["op"] == "count" and plan.result["count"] == 3
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('stats", "want": "sum", "text": "strokes"}')
    assert plan.call["op"] == "stats" and plan.result["sum"] == 987858 + 987859
    s.close()
    store.close()


def test_a_listing_of_words_its_lines_lack_the_asked_parameter_of_reads_the_listed_kind(tmp_path):
    """"which task did the speculator copy?", text "speculations": "We launched 1 speculations" has no
    <task>; the listed kind that has one, whose lines write no word of the text, is read without it. A
    text naming an id keeps to its lines."""
    spec, launched = "Scheduling a redundant attempt for task <*>", "We launched <NUM> speculations. Sleeping <NUM> milliseconds."
    rows = ["We launched 1 speculations. Sleeping 15000 milliseconds.", "Scheduling a redundant attempt for task task_7_m_000000",
            "We launched 0 speculations. Sleeping 15000 milliseconds."]
    store, s, listed = _named_kinds(tmp_path, rows, [2, 1, 2], [launched, spec, launched], ["redundant"], 1)
    assert listed and "task" in listed[0].params
    q = "which task did the speculator decide to run a speculative copy of?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=listed)
    plan.finish('lines", "text": "speculations"}')
    assert plan.call.get("template") == 1 and "text" not in plan.call and "task_7_m_000000" in plan.rendered
    plan.finish('lines", "text": "speculations 15000"}')        # a number in the text: a condition kept
    assert plan.call.get("template") is None and plan.result["count"] == 2
    s.close()
    store.close()


def test_a_level_the_store_has_no_line_at_is_a_condition_no_line_meets(tmp_path):
    """"Anything logged at WARN or ERROR?" over INFO lines: the call the model wrote without the level
    (the grammar offers only stored levels) is run at the named levels, and no line matches."""
    from gateway.serve.answer.tool import QueryTool
    rows = [f"Running task {i}.0 in stage 3.0" for i in range(3)]
    store, s = _stored(tmp_path, rows, [1] * 3, [LineFields(template="Running task <*> in stage <*>") for _ in rows])
    tool = QueryTool(s, None)
    q = "Anything logged at WARN or ERROR by this executor?"
    assert tool.grounding(q).levels == [] and tool.absent_levels(q) == ["WARN", "ERROR"]
    assert tool.absent_levels("How many lines say Running?") == []
    assert tool.absent_levels("Any stage at INFO or DEBUG?") == ["DEBUG"]      # stored at info
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], absent_levels=tool.absent_levels(q))
    plan.finish('count"}')
    assert plan.call["level"] == ["WARN", "ERROR"] and plan.result["count"] == 0
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": "Any task?"}], "Any task?", None, [])
    plan.finish('count"}')
    assert plan.result["count"] == 3
    s.close()
    store.close()


def test_a_call_of_fields_every_line_has_reads_the_kind_the_question_names(tmp_path):
    """"How many times did sshd warn about a POSSIBLE BREAK-IN ATTEMPT?" called as a count of component
    sshd, which every line has: the listed kind whose words the question writes is counted; "how many
    lines did sshd write" (one word of a kind) keeps every line."""
    brk = "reverse mapping checking getaddrinfo for <*> failed - POSSIBLE BREAK-IN ATTEMPT!"
    rows = ["reverse mapping checking getaddrinfo for a.example failed - POSSIBLE BREAK-IN ATTEMPT!",
            "Write failed: Connection reset by peer", "Invalid user bob from 10.0.0.1"]
    tmpls = [brk, "Write failed: Connection reset by peer", "Invalid user <*> from <*>"]
    store, s = _stored(tmp_path, rows, [1, 2, 3], [LineFields(template=m, params=named_params(m, t), component="sshd")
                                                   for t, m in zip(rows, tmpls)])
    q = "How many times did sshd warn about a POSSIBLE BREAK-IN ATTEMPT?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=grounding.Kinds(s).kinds(["possible", "attempt"], []))
    plan.finish('count", "component": "sshd"}')
    assert plan.call["template"] == 1 and plan.result["count"] == 1
    q = "How many lines did sshd write?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=grounding.Kinds(s).kinds(["write"], []))
    plan.finish('count", "component": "sshd"}')
    assert plan.call.get("template") is None and plan.result["count"] == 3
    s.close()
    store.close()


def test_stats_over_one_kind_of_a_family_the_question_does_not_single_out_reads_them_all(tmp_path):
    """"The failed password lines from A": the model's kind ("... for root ...") is one of three that have
    <address> and <port>; no word of the question is that kind's alone, so the stats reads all three by
    the words they share that the question says; a question that says "root" keeps the model's kind."""
    tmpls = ["Failed password for root from <*> port <*> ssh2", "Failed password for invalid user <*> from <*> port <*> ssh2",
             "Accepted password for <*> from <*> port <*> ssh2"]
    rows = ["Failed password for root from 10.0.0.5 port 4100 ssh2", "Failed password for invalid user pi from 10.0.0.5 port 6500 ssh2",
            "Accepted password for fztu from 10.0.0.5 port 9000 ssh2", "Failed password for root from 10.0.0.6 port 7000 ssh2"]
    store, s = _kinded(tmp_path, rows, [1, 2, 3, 1], tmpls)
    for q, want in (("What is the highest port among the failed password lines from 10.0.0.5?", 6500),
                    ("What is the highest port of the failed password for root lines from 10.0.0.5?", 4100)):
        kinds = grounding.Kinds(s).kinds(["failed", "password", "port", "root"], ["10.0.0.5"])
        plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
        root = next(k.id for k in kinds if "root" in k.template)
        plan.finish(f'stats", "of": "port", "where": {{"address": "10.0.0.5"}}, "template": {root}}}')
        assert plan.result["max"] == want, (q, plan.call)
    s.close()
    store.close()


def test_a_call_over_one_kind_reads_the_kin_kind_the_question_singles_out(tmp_path):
    """"Did TID 2 finish?" called over "Running task ... (TID <tid>)": "finish" is a word of the kin kind
    "Finished task ... (TID <tid>)" alone, so the call reads that kind, where no line has TID 2 (the
    answer is "no"); a question that says "running" keeps the model's kind."""
    tmpls = ["Running task <*> in stage <*> (TID <*>)", "Finished task <*> in stage <*> (TID <*>) in <*> ms"]
    rows = ["Running task 1.0 in stage 3.0 (TID 1)", "Running task 2.0 in stage 3.0 (TID 2)",
            "Finished task 1.0 in stage 3.0 (TID 1) in 40 ms"]
    store, s = _kinded(tmp_path, rows, [1, 1, 2], tmpls)
    for q, tid, want in (("Did TID 2 ever finish?", 2, 0), ("Did TID 1 ever finish?", 1, 1),
                         ("When did TID 2 start running?", 2, 1), ("TID 2 那个 task 最后跑完了没有？", 2, 0)):
        kinds = grounding.Kinds(s).kinds(["task", "tid", "finished", "running"], [])
        plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
        running = next(k.id for k in kinds if k.template.startswith("Running"))
        plan.finish(f'first_last", "template": {running}, "where": {{"tid": "{tid}"}}}}')
        assert plan.result["count"] == want, (q, plan.call)
    s.close()
    store.close()


def test_a_call_naming_only_a_thing_reads_it_in_the_one_kind_the_question_names(tmp_path):
    """"Was oracle ever kicked off for too many authentication failures?" called as a count of "oracle":
    its lines of other kinds are not the answer; the one listed kind the question names ("Too many
    authentication failures") has none of them: 0. A question naming no kind keeps every line of it."""
    tmpls = ["Invalid user <*> from <*>", "Failed password for invalid user <*> from <*> port <*> ssh2",
             "Disconnecting: Too many authentication failures for <*> [preauth]"]
    rows = ["Invalid user oracle from 10.0.0.1", "Failed password for invalid user oracle from 10.0.0.1 port 22 ssh2",
            "Disconnecting: Too many authentication failures for admin [preauth]"]
    store, s = _kinded(tmp_path, rows, [1, 2, 3], tmpls)
    for q, who, want in (("Was the oracle account ever kicked off for too many authentication failures?", "oracle", 0),
                         ("Was admin ever kicked off for too many authentication failures?", "admin", 1),
                         ("How many lines are about oracle?", "oracle", 2)):
        kinds = grounding.Kinds(s).kinds([w for w in q.lower().strip("?").split() if w != who], [who])
        ev = evidence.Evidence(tokens=[who])
        plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], evidence=ev, kinds=kinds)
        plan.finish(f'count", "text": "{who}"}}')
        assert plan.result["count"] == want, (q, plan.call)
    s.close()
    store.close()


def test_a_text_one_listed_kind_holds_reads_that_kind_when_the_question_says_more_of_it(tmp_path):
    """"How many failed password lines were for invalid users?" called as a count of "Failed password"
    (every kind of failed password): the one listed kind holding those words whose other words the
    question says ("invalid") is counted; a question that says no more than the text keeps every line."""
    tmpls = ["Failed password for invalid user <*> from <*> port <*> ssh2", "Failed password for root from <*> port <*> ssh2"]
    rows = ["Failed password for invalid user pi from 10.0.0.5 port 22 ssh2",
            "Failed password for root from 10.0.0.5 port 23 ssh2", "Failed password for root from 10.0.0.6 port 24 ssh2"]
    store, s = _kinded(tmp_path, rows, [1, 2, 2], tmpls)
    for q, words, want in (("How many failed password lines were for invalid users?", ["failed", "password", "invalid"], 1),
                           ("How many failed password lines are there?", ["failed", "password"], 3)):
        kinds = [k for k in grounding.Kinds(s).kinds(words, []) if "invalid" in k.template]   # as if only it listed
        plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
        plan.finish('count", "text": "Failed password"}')
        assert plan.result["count"] == want, (q, plan.call)
    s.close()
    store.close()


def test_a_word_of_one_listed_kind_with_an_id_the_kind_lacks_is_none(tmp_path):
    """"TID 1354 那个 task 最后跑完了没有？" called as first_last of "finish" (375 lines of any kind writing
    it): the one listed kind writing "finished" is read with the question's id, and has no line of it:
    the answer is none; an id it has gives its line."""
    tmpls = ["Running task <*> in stage <*> (TID <*>)", "Finished task <*> in stage <*> (TID <*>) in <*> ms",
             "Times: total = <*>, boot = <*>, finish = <*>"]
    rows = ["Running task 1.0 in stage 3.0 (TID 1221)", "Running task 2.0 in stage 3.0 (TID 1354)",
            "Finished task 1.0 in stage 3.0 (TID 1221) in 40 ms", "Times: total = 40, boot = 3, finish = 1"]
    store, s = _kinded(tmp_path, rows, [1, 1, 2, 3], tmpls)
    for tid, want in (("1354", 0), ("1221", 1)):
        q = f"TID {tid} 那个 task 最后跑完了没有？"
        kinds = [k for k in grounding.Kinds(s).kinds(["task", "tid", "finish", "finished"], []) if k.id in (1, 2)]
        plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds,
                         evidence=evidence.find(s, q))
        plan.finish('first_last", "text": "finish"}')
        assert plan.result["count"] == want and plan.call.get("template") == 2, (q, plan.call)
    s.close()
    store.close()


def test_a_lookup_of_a_thing_the_named_kind_lacks_keeps_the_things_lines(tmp_path):
    """"What size was blk_9 received with?" listed as the lines of "blk_9": the kind the question
    names ("Received block ... of size") has no line of it; the listing of none would hide the block's
    other lines, so the model's listing stands (a count would be 0: "no")."""
    tmpls = ["Received block <*> of size <*> from <*>", "Deleting block <*> file <*>"]
    rows = ["Received block blk_1 of size 512 from 10.0.0.1", "Deleting block blk_9 file /data/blk_9"]
    store, s = _stored(tmp_path, rows, [1, 2], [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    q = "What size was blk_9 received with?"
    kinds = [k for k in grounding.Kinds(s).kinds(["size", "received"], ["blk_9"]) if k.id == 1]
    for op, want in (("lines", 1), ("count", 0)):
        plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], evidence=evidence.Evidence(tokens=["blk_9"]),
                         kinds=kinds)
        plan.finish(f'{op}", "text": "blk_9"}}')
        assert plan.result["count"] == want, (op, plan.call)
    s.close()
    store.close()
