"""The answer's figures checked against its query (gateway.serve.answer.check): a rewritten time, an
invented year or count is replaced by the result said plainly, in the question's language; list
numbering and a date said in words are kept; a top-k answer that does not name the top value cites it."""

from __future__ import annotations

from gateway.serve.answer.check import check, figures, misstated, supported_figures, unsupported_figures
from gateway.serve.answer.render import _shown_time, plain_answer, render_result
from gateway.serve.answer.question import which_end

LINE = {"id": 6, "time": 1796885748.0, "time_text": "Dec 10 06:55:48", "host": "LabSZ", "component": "sshd",
        "text": "Dec 10 06:55:48 LabSZ sshd[24200]: Failed password for invalid user webmaster"}
LAST = {**LINE, "time_text": "Dec 10 23:37:46", "text": "Dec 10 23:37:46 LabSZ sshd[3312]: Failed password"}
FIRST_LAST = {"call": {"op": "first_last", "text": "Failed password"}, "count": 135, "first": LINE, "last": LAST}
TOP = {"call": {"op": "top_k", "by": "template"}, "by": "template", "count": 80,
       "top": [{"value": "Got exception while serving <BLK> to /<IP>:", "count": 80},
               {"value": "Receiving block <BLK>", "count": 20}]}


def run(answer, question, result):
    end = which_end(question)
    return check(answer, question, result, render_result(result, end), end)


def test_rewritten_time_is_replaced_by_the_stored_one():
    q = 'When did "Failed password" appear for the first time?'
    c = run("It first appeared on December 10, at 6:55:48.", q, FIRST_LAST)
    assert c.action == "replaced" and "6:55:48" in c.unsupported and c.missing == ["06:55:48"]
    assert "06:55:48" in c.text and "LabSZ" in c.text
    assert run("It first appeared on Dec 10 at 06:55:48 on LabSZ.", q, FIRST_LAST).action == "kept"


def test_twelve_hour_clock_and_invented_year_are_replaced():
    q = 'When did "Failed password" appear for the last time?'
    c = run("The last time was December 10, 2023, at 11:37:46.", q, FIRST_LAST)
    assert c.action == "replaced" and {"2023", "11:37:46"} <= set(c.unsupported)
    assert "23:37:46" in c.text and "2023" not in c.text


def test_chinese_question_gets_a_chinese_replacement():
    c = run("第一次出现是在2005年12月10日6:55:48。", "“Failed password”第一次出现是在什么时候？", FIRST_LAST)
    assert c.action == "replaced"
    assert "第一次出现在" in c.text and "06:55:48" in c.text


def test_date_in_words_and_shorter_forms_are_kept():
    line = {**LINE, "time": 1121875269.0, "time_text": "2005-07-20-16.01.09.861175"}
    r = {**FIRST_LAST, "first": line}
    q = 'When did "Failed password" first appear?'
    assert _shown_time(line) == "2005-07-20 16:01:09"
    assert run("It first appeared on July 20, 2005, at 16:01:09.", q, r).action == "kept"
    assert run("It first appeared on July 20, 2005, at 16:01.", q, r).action == "kept"


def test_count_must_be_the_stored_one():
    r = {"call": {"op": "count", "text": "E-STOP"}, "count": 1}
    q = "How many times was the E-STOP pressed?"
    c = run("The E-STOP was pressed 4 times.", q, r)
    assert c.action == "replaced" and c.unsupported == ["4"]
    assert c.text == '1 line matches (query: {"op": "count", "text": "E-STOP"}).'    # what was counted
    assert run("The E-STOP was pressed 1 time.", q, r).action == "kept"
    c = run("急停被按下了很多次。", "急停按了几次？", r)             # no figure at all: the count is missing
    assert c.action == "replaced" and c.missing == ["1"]
    assert c.text == '共有 1 行日志符合查询（查询：{"op": "count", "text": "E-STOP"}）。'


def test_count_of_few_lines_quotes_the_newest():
    line = {"id": 15, "time_text": "17/06/09 20:10:42", "component": "executor.CoarseGrainedExecutorBackend",
            "text": "17/06/09 20:10:42 INFO executor.CoarseGrainedExecutorBackend: Successfully registered with driver"}
    r = {"call": {"op": "count", "text": "driver registered"}, "count": 1, "lines": [line]}
    c = run("The driver was registered at 20:10:42.", "How was the driver registered?", r)
    assert c.action == "replaced" and c.missing == ["1"] and "Successfully registered with driver" in c.text
    assert c.text.startswith("1 line matches (query:")
    many = {**r, "count": 40, "lines": [line]}            # many lines: the count is the answer, no line quoted
    assert "Successfully" not in run("They registered.", "How many registrations?", many).text
    assert "这一行" in run("注册了。", "驱动是怎么注册的？", r).text


def test_count_of_every_line_is_noted():
    r = {"call": {"op": "count", "host": "press-1"}, "count": 7, "of_all": 7}
    c = run("There were 7 errors on press-1.", "How many errors were on press-1?", r)
    assert c.action == "noted" and c.text.startswith("There were 7 errors") and "every stored line, 7" in c.text
    assert run("7 lines.", "press-1 有几个错误？", r).text.endswith("没有筛掉任何一行。）")
    assert run("There were 6 errors.", "How many errors?", {**r, "count": 6}).action == "kept"


def test_no_match_answer_cannot_invent_a_figure():
    r = {"call": {"op": "stats", "text": "torque", "of": "torque"}, "no_match": True, "count": 0}
    c = run("The lowest torque logged was 2.08 Nm.", "What was the lowest torque?", r)
    assert c.action == "replaced" and "No stored line matches" in c.text and "2.08" not in c.text


def test_list_numbering_is_not_a_figure():
    r = {**TOP, "top": [{"value": "a", "count": 23}, {"value": "b", "count": 15}, {"value": "c", "count": 8}]}
    answer = "1. a (23 lines)\n2. b (15 lines)\n3) c (8 lines)"
    assert unsupported_figures(answer, supported_figures(render_result(r))) == []
    assert run("其他消息：2. b（15条）；3. c（8条）。最常见的是 a（23条）。", "最常见的消息是什么？", r).action == "kept"
    assert unsupported_figures("a 47.5 b", {"47"}) == ["47.5"]


def test_top_value_is_cited_when_the_answer_paraphrases_it():
    q = "为什么有这么多告警？"
    c = run("服务器处理数据块时遇到了问题。", q, TOP)
    assert c.action == "cited" and c.text.startswith("服务器处理数据块时遇到了问题。")
    assert "“Got exception while serving <BLK> to /<IP>:”，80 行" in c.text
    kept = run('The main cause is "Got exception while serving <BLK> to /<IP>:" (80 lines).', "Why?", TOP)
    assert kept.action == "kept"


def test_captured_value_answers_a_lookup_without_its_time():
    line = {**LINE, "captured": {"X": "webmaster"}}
    r = {**FIRST_LAST, "first": line, "last": line, "count": 1}
    assert run("X is webmaster.", "In the line 'invalid user X', what is X?", r).action == "kept"
    c = run("X is admin.", "In the line 'invalid user X', what is X?", r)
    assert c.action == "replaced" and c.missing == ["webmaster"]


def test_figures():
    assert figures("at 2005-07-20 16:01:09, 81.5 C, port 38926") == ["2005-07-20", "16:01:09", "81.5", "38926"]


def test_check_reaches_the_api_source_and_metrics():
    from gateway.server.metrics import ServerMetrics
    from gateway.server.routes.chat import _count, _query_source
    q = "How many times was the E-STOP pressed?"
    r = {"call": {"op": "count", "text": "E-STOP"}, "count": 1}
    result = {"completion_tokens": 5,
              "query": {"call": r["call"], "result": r, "check": run("4 times.", q, r).summary()}}
    src = _query_source(result)[0]
    assert src.check == {"action": "replaced", "unsupported": ["4"], "missing": ["1"]}
    m = ServerMetrics()
    _count(m, result)
    assert m.registry.get_sample_value("linegate_answer_checks_total", {"action": "replaced"}) == 1


def test_top_k_answer_names_as_many_values_as_asked():
    r = {"call": {"op": "top_k", "by": "component", "k": 3}, "by": "component", "count": 1200,
         "top": [{"value": "org.apache.hadoop.ipc.Client", "count": 622}, {"value": "RMContainerAllocator", "count": 300},
                 {"value": "LeaseRenewer", "count": 200}, {"value": "Other", "count": 10}]}
    c = run("行数最多的组件是 org.apache.hadoop.ipc.Client，出现了622次。", "行数最多的前 3 个组件是哪些？", r)
    assert c.action == "cited" and c.missing == ["RMContainerAllocator", "LeaseRenewer"]
    assert "“RMContainerAllocator”，300 行" in c.text and "Other" not in c.text
    ok = "org.apache.hadoop.ipc.Client (622), RMContainerAllocator (300) and LeaseRenewer (200)."
    assert run(ok, "Which 3 components log the most?", r).action == "kept"


def test_plain_answer_says_one_line_once():
    once = {**FIRST_LAST, "count": 1, "last": LINE}
    c = run("It was at 9:00.", 'When did "Failed password" first and last appear?', once)
    assert c.action == "replaced" and c.text.count(LINE["text"]) == 1 and c.text.startswith("One line matches")
    stats = {"call": {"op": "stats", "text": "port", "of": "port"}, "count": 3, "n": 3, "max": 22.0, "min": 22.0,
             "avg": 22.0, "max_line": LINE, "min_line": LINE}
    c = run("The lowest port is 21.", "What is the lowest port?", stats)
    assert c.action == "replaced" and c.text.count(LINE["text"]) == 1 and "All 3 values are 22" in c.text
    low = {**LINE, "id": 99, "text": LINE["text"] + " from 10.0.0.1 port 1"}     # another line of the same kind
    spread = {**stats, "min": 1.0, "avg": 15.0, "sum": 45.0, "min_line": low}
    c = run("The lowest port is 21.", "What is the lowest port?", spread)
    assert c.action == "replaced" and c.text.startswith("The sum is 45 (3 values). The maximum is 22, at ")
    assert LINE["text"] in c.text and low["text"] not in c.text and "The minimum is 1 (at " in c.text


def test_top_value_named_with_other_punctuation_and_a_k_nobody_asked_for():
    r = {"call": {"op": "top_k", "by": "template", "k": 5}, "by": "template", "count": 491,
         "top": [{"value": "authentication failure; logname= uid=<NUM> euid=<NUM> tty=NODEVssh ruser= <*> <*>",
                  "count": 372}, {"value": "Failure registering capabilities", "count": 1}]}
    mangled = '最频繁的是"authentication failure"；logname= uid=<NUM> euid=<NUM> tty=NODEVssh ruser= <*>（372条）。'
    assert run(mangled, "为什么有这么多失败？", r).action == "kept"        # k = 5 was the model's own choice
    c = run("Mostly authentication problems.", "Why so many failures?", r)
    assert c.action == "cited" and c.missing == [r["top"][0]["value"]]
    two = {**r, "call": {"op": "top_k", "by": "template", "k": 2}}
    assert run("Mostly authentication problems.", "Which 2 kinds of failure are most common?", two).missing == \
        [t["value"] for t in r["top"]]


def test_one_of_several_values_named_gets_the_others_cited():
    """Task 3.0 finished in four stages: an answer naming one of them gets all four cited after it; one
    naming them all, or only the count, is kept; a listing's captured values count the same way."""
    q = "What stage was task 3.0 finished in?"
    counted = {"call": {"op": "count", "where": {"task": "3.0"}}, "count": 4, "of_all": 2000,
               "param_stats": {"of_param": "stage", "n": 4, "sum": 37.0, "min": 2.0, "max": 26.0, "avg": 9.25,
                               "values": ["2.0", "7.0", "26.0"]}}
    c = run("Task 3.0 finished in stage 2.0.", q, counted)
    assert c.action == "cited" and c.text.endswith("(The stage values in these lines: 2.0, 7.0, 26.0.)")
    assert run("Task 3.0 finished in stages 2.0, 7.0 and 26.0.", q, counted).action == "kept"
    assert run("Task 3.0 finished 4 times.", q, counted).action == "kept"
    assert "（stage 在这些行中的值：2.0、7.0、26.0。）" in run("任务 3.0 在阶段 2.0 完成。", "任务 3.0 在哪个阶段完成？", counted).text
    sized = {**counted, "param_stats": {**counted["param_stats"], "of_param": "size", "values": ["2128", "2705"],
                                        "unit": "bytes"}, "count": 2}
    c = run("Task 21.0 sent 2705 bytes.", "How many bytes did task 21.0 send?", sized)
    assert c.text.endswith("(The size values in these lines: 2128 bytes, 2705 bytes.)")
    c = run("Task 21.0 sent 4833 bytes.", "How many bytes did task 21.0 send?", {**sized, "param_stats": {
        **sized["param_stats"], "sum": 4833.0}})                                  # only the total: its parts too
    assert c.action == "cited" and c.text.endswith("(The size values in these lines: 2128 bytes, 2705 bytes.)")
    assert run("Task 21.0 sent 2 times.", "How many bytes did task 21.0 send?", sized).action == "kept"
    listed = {"call": {"op": "lines", "where": {"user": "0"}}, "count": 2,
              "lines": [{**LINE, "id": 1, "captured": {"port": "52683"}}, {**LINE, "id": 2, "captured": {"port": "49811"}}]}
    c = run("User 0 failed from port 52683.", "What port did the user 0 fail from?", listed)
    assert c.action == "cited" and "52683, 49811" in c.text


def test_every_value_of_a_quantity_listed_gets_their_total():
    """An answer listing each line's bytes ("2128 and 2705 bytes") gets what they add up to after it; one
    listing the stages of a task (no unit: ids, not amounts), or stating the total, is kept."""
    q = "How many bytes did task 21.0 send?"
    sized = {"call": {"op": "count", "where": {"task": "21.0"}}, "count": 2, "of_all": 2000,
             "param_stats": {"of_param": "size", "n": 2, "sum": 4833.0, "min": 2128.0, "max": 2705.0,
                             "avg": 2416.5, "values": ["2128", "2705"], "unit": "bytes"}}
    c = run("Task 21.0 sent 2128 and 2705 bytes.", q, sized)
    assert c.action == "cited" and c.text.endswith("(In all: 4833 bytes.)")
    assert run("Task 21.0 sent 4833 bytes: 2128 and 2705.", q, sized).action == "kept"
    assert run("任务 21.0 发送了 2128 和 2705 字节。", "任务 21.0 发送了多少字节？", sized).text.endswith("（合计 4833 bytes。）")
    staged = {**sized, "param_stats": {**sized["param_stats"], "of_param": "stage", "values": ["2.0", "7.0"],
                                       "unit": None, "sum": 9.0}}
    assert run("Task 21.0 ran in stages 2.0 and 7.0.", "Which stages did task 21.0 run in?", staged).action == "kept"


def test_an_ask_that_says_an_earlier_answer_again_is_dropped():
    """"What is the average? give it to 1 decimal": the remark is an ask of its own (question.asks) and
    its answer says the first again; a second ask with words of its own is kept."""
    from gateway.serve.query_job import _not_said_again
    same = ['平均下来，设备 pack-2 "returning to charger" 的百分比是 2.324。',
            '设备 pack-2 "returning to charger" 的百分比平均下来是 2.324。']
    assert _not_said_again(same) == same[:1]
    two = ["There were 135 lines that said jam.", "The machine with the most was line1."]
    assert _not_said_again(two) == two
    again = ["日志中出现了85次Warning级别的消息。", "日志中出现了85次Warning级别的消息。最多的组件是 CBS（317 行）。"]
    assert _not_said_again(again) == [again[0], "最多的组件是 CBS（317 行）。"]     # the sentence said once
    assert _not_said_again(["The sum is 3.5 (2 values).", "The sum is 3.5 (2 values). Line1 had 2."]) == \
        ["The sum is 3.5 (2 values).", "Line1 had 2."]


def test_the_plain_count_says_where_most_of_its_lines_are():
    from gateway.serve.answer.render import plain_answer
    r = {"call": {"op": "count", "text": "jam"}, "count": 135, "most": {"host": {"value": "line1", "count": 60}}}
    assert plain_answer(r, "How many jams, and which machine had the most?", None).endswith(
        'Most of them: host "line1" (60).')
    assert "其中最多的主机是“line1”（60 行）。" in plain_answer(r, "堵了几次？哪台设备最多？", None)


def test_a_lookup_answer_must_give_the_asked_value_read_off_the_line():
    """The line's asked parameter (captured: <port>) is what a lookup answers; an answer with another
    value of the line (the address as "port") is replaced, and the plain answer says the value first."""
    line = {**LINE, "text": "Dec 10 06:55:48 LabSZ sshd[24200]: Failed password for root from 5.188.10.180 port 49811 ssh2",
            "captured": {"port": "49811"}}
    result = {"call": {"op": "lines", "text": "root"}, "count": 1, "lines": [line]}
    q = "Which port did root fail from?"
    c = run("Root failed from port 5.188.10.180.", q, result)
    assert c.action == "replaced" and c.missing == ["49811"]
    assert c.text.startswith("port: 49811. 1 lines match")
    assert run("Root failed from 5.188.10.180 port 49811.", q, result).action == "kept"
    zh = run("端口是 5.188.10.180。", "root 从哪个端口登录失败？", result)
    assert zh.action == "replaced" and zh.text.startswith("port：49811。共 1 行符合")


def test_a_replaced_lookup_quotes_the_line_of_what_the_question_names():
    """A lookup whose lines are not the line the question's identifier is in: the fallback quotes that line
    too (a lookup is never answered by lines that miss what it names)."""
    from gateway.serve.answer.evidence import Evidence
    named = {"id": 9, "time": 1796885748.0, "text": "Dec 10 09:20:00 LabSZ sshd[24673]: Invalid user cyrus from 187.141.143.180"}
    result = {"call": {"op": "lines", "text": "cyrus"}, "count": 1, "lines": [{**LINE, "id": 8}]}
    q = "Where is user cyrus from?"
    end = which_end(q)
    c = check("He is from 1.2.3.4.", q, result, render_result(result, end), end, Evidence(["cyrus"], [named]))
    assert c.action == "replaced" and "187.141.143.180" in c.text
    c = check("He is from 1.2.3.4.", q, {**result, "lines": [named]}, render_result(result, end), end,
              Evidence(["cyrus"], [named]))
    assert c.text.count("187.141.143.180") == 1                       # shown once


def test_a_figure_with_another_unit_than_its_line_is_replaced():
    """"809.3 bytes" where the line writes "809.3 KB" is another quantity; "809.3 kilobytes" is the same."""
    line = {**LINE, "text": "Block rdd_42_5 stored as values in memory (estimated size 16.0 B, free 809.3 KB)"}
    result = {"call": {"op": "stats", "of": "free"}, "count": 1, "n": 1, "min": 809.3, "max": 809.3, "avg": 809.3,
              "sum": 809.3, "min_line": line, "max_line": line}
    q = "How many bytes is Block rdd_42_5 free?"
    c = run("The block rdd_42_5 has 809.3 bytes free.", q, result)
    assert c.action == "replaced" and c.unsupported == ["809.3 bytes"] and "809.3 KB" in c.text
    assert run("It has 809.3 kilobytes free.", q, result).action == "kept"
    assert run("It has 809.3 KB free (size 16.0 B).", q, result).action == "kept"


def test_a_figure_inside_an_identifier_does_not_say_the_count():
    """"有两条记录 ... vcs2": the 2 of vcs2 is a name, not the count; the count is added."""
    r = {"call": {"op": "count", "text": "vcs2 removing device node"}, "count": 2}
    c = run('有两条记录，都与 "vcs2 removing device node" 相关。', "vcs2 相关的“removing device node”记录有几条？", r)
    assert c.missing == ["2"] and "共有 2 行日志符合查询" in c.text
    assert run("有 2 条记录与 vcs2 相关。", "vcs2 相关的记录有几条？", r).action == "kept"


def test_a_no_match_says_what_the_other_conditions_match():
    r = {"call": {"op": "count", "component": "PaymentClient", "text": "entries"}, "count": 0, "no_match": True,
         "without_text": {"text": '"entries"', "count": 320}}
    c = run("There were 320 entries.", "How many entries did PaymentClient write?", r)
    assert c.action == "kept"                                  # 320 is the result's figure
    from gateway.serve.answer.render import plain_answer, render_result
    assert 'Without the text "entries", the other conditions match 320 lines.' in render_result(r)
    assert "去掉 \"entries\" 后，其他条件符合 320 行" in plain_answer(r, "PaymentClient 写了多少条？", None)


def test_a_no_match_answer_must_say_what_the_rest_matches():
    r = {"call": {"op": "count", "level": "warn", "text": "entries"}, "count": 0, "no_match": True,
         "without_text": {"text": '"entries"', "count": 152}}
    c = run("There are no WARN entries.", "How many WARN entries?", r)
    assert c.action == "replaced" and c.missing == ["152"] and "match 152 lines" in c.text
    assert run("None hold it; 152 WARN lines in all.", "How many WARN entries?", r).action == "kept"


def test_a_cited_count_does_not_quote_a_line_the_answer_quotes():
    line = {"id": 9, "time_text": "Jul  7 08:09:11", "text": "Jul  7 08:09:11 combo udev[1]: removing device node '/udev/vcs2'"}
    r = {"call": {"op": "count", "text": "vcs2 removing device node"}, "count": 2, "lines": [line]}
    from gateway.serve.answer.render import plain_answer
    assert plain_answer(r, "How many?", None).endswith("The newest: " + line["text"])    # its time said once
    assert "udev[1]" not in plain_answer(r, "How many?", None, said="the line: " + line["text"])


PORTS = {"call": {"op": "count", "text": "183.62.140.253 root"}, "count": 553, "of_all": 2000,
         "param_stats": {"of_param": "port", "n": 276, "sum": 12814927.0, "min": 32826.0, "max": 60948.0,
                         "avg": 46430.8949, "values": ["52762", "53245", "56423"]}}
SIZES = {"call": {"op": "stats", "of": "size", "text": "bytes result sent"}, "of_param": "size", "n": 300,
         "count": 300, "max": 2882.0, "min": 2076.0, "avg": 2342.69, "sum": 702807.0,
         "max_line": {**LINE, "text": "Finished task 38.0. 2882 bytes result sent to driver"},
         "min_line": {**LINE, "text": "Finished task 4.0. 2076 bytes result sent to driver"}}


def test_a_figure_named_by_the_answer_must_be_the_results():
    """The answer names the maximum (or sum, ...) and writes another of the result's numbers after it:
    the result's figure is cited after the answer; a right one, or a count called a total, is kept."""
    c = run("The maximum port for root when failed password from 183.62.140.253 was 56423.",
            "the maximum port for root from 183.62.140.253?", PORTS)
    assert c.action == "corrected" and c.missing == ["56423"]
    assert c.text == "The maximum port for root when failed password from 183.62.140.253 was 60948."
    assert run("The maximum port is 60948; the minimum 32826.", "ports?", PORTS).action == "kept"
    assert run("A total of 553 lines match.", "how many?", PORTS).action == "kept"
    c = run("这些行的总和是 2882 字节。", "一共多少字节？", SIZES)
    assert c.action == "corrected" and c.text == "这些行的总和是 702807 字节。"
    assert run("The sum is 702807; the largest, 2882, was at 06:55:48.", "sizes?", SIZES).action == "kept"
    assert run("The average is 2342.7 bytes.", "average size?", SIZES).action == "kept"
    assert run("The average of the 300 values is 2342.7.", "average size?", SIZES).action == "kept"
    assert run("The maximum was on Dec 10 at 06:55:48, 2882 bytes.", "largest?", SIZES).action == "kept"
    assert misstated("最大值出现在 6月9日 20时，是 2882 字节。", SIZES) == []     # a date is no figure
    assert misstated("最大值是 6月9日的 2076 字节。", SIZES) == [("max", "2076")]


def test_a_reading_of_every_counted_line_keeps_its_no_and_cites_the_count():
    """A count whose every line the answer was shown, answered with no figure beyond the question's (a
    yes or a no read off the lines): kept, the count cited after it; a count of more lines than were shown
    still needs its figure."""
    line = {"id": 4, "time_text": "17/06/09 20:11:11",
            "text": "17/06/09 20:11:11 INFO executor.Executor: Running task 32.0 in stage 29.0 (TID 1352)"}
    r = {"call": {"op": "count", "text": "TID", "where": {"tid": "1352"}}, "count": 1, "lines": [line]}
    q = "Did TID 1352 ever finish?"
    c = run("No. TID 1352 started running but no line says it finished.", q, r)
    assert c.action == "cited" and c.text.startswith("No. TID 1352 started") and "1 line matches" in c.text
    assert run("没有，TID 1352 只开始运行。", "TID 1352 跑完了吗？", r).action == "cited"
    assert run("No, it ran 3 times.", q, r).action == "replaced"               # a figure of its own: checked
    assert run("No.", q, {**r, "count": 40}).action == "replaced"              # 39 lines it did not see


def test_a_long_token_the_log_holds_whole_is_no_invented_figure():
    """The model reads the stream too: an address or an id it names that the stored log holds whole is
    supported though the query's result does not hold it; a short figure (a quantity) is not."""
    r = {"call": {"op": "lines", "text": "executor"}, "count": 914, "lines": [{**LINE, "id": 1}]}
    q = "Which driver address did the executor connect to?"
    end = which_end(q)
    logged = {"10.10.34.11:48069", "container_1445144423722_0020_01_000012"}.__contains__
    c = check("It connected to 10.10.34.11:48069.", q, r, render_result(r, end), end, logged=logged)
    assert c.action == "kept"
    assert check("It connected to 10.10.34.12:48069.", q, r, render_result(r, end), end,
                 logged=logged).action == "replaced"                        # not in the log
    assert check("It connected to 10.10.34.11:48069.", q, r, render_result(r, end), end).action == "replaced"
    assert check("It connected 7 times.", q, r, render_result(r, end), end,
                 logged=lambda t: True).action == "replaced"                # a count is the result's


def test_a_relaxed_text_s_fallback_says_first_that_no_line_holds_every_word():
    """A text no line holds whole is matched on its first words (query.py's relaxation): an answer that
    leaves out the count is replaced, and the fallback says first that no line holds every word asked."""
    relaxed = {"call": {"op": "count", "text": "broadcast variable 35"}, "count": 74,
               "text_relaxed_to": "broadcast variable"}
    c = run("Yes, it was read 2 times.", "Was broadcast variable 35 ever read?", relaxed)
    assert c.action == "replaced"
    assert c.text.startswith('No line holds all of "broadcast variable 35"; on "broadcast variable" alone: 74 lines')
    zh = run("没有。", "broadcast variable 35 有没有被读过？", relaxed)
    assert zh.action == "replaced" and zh.missing == ["74"] and zh.text.startswith("没有一行同时含有“broadcast variable 35”")
    exact = {**relaxed, "text_relaxed_to": None}      # no relaxation: the plain count alone
    assert run("没有。", "broadcast variable 35 有没有被读过？", exact).text.startswith("共有 74 行")


def test_an_answer_stating_a_relaxed_text_s_count_is_noted_with_what_the_lines_hold():
    """An answer that states the count of a relaxed text claims it for the words asked; it is kept and
    followed by what the lines hold and what none holds. The same answer over the text whole is kept."""
    relaxed = {"call": {"op": "count", "text": "broadcast variable 35"}, "count": 74,
               "text_relaxed_to": "broadcast variable"}
    q = "broadcast variable 35 有没有被读过？"
    c = run("有74条日志消息包含“broadcast variable 35”。", q, relaxed)
    assert c.action == "noted" and c.text.startswith("有74条日志消息")
    assert "没有一行同时含有“broadcast variable 35”" in c.text and "只含“broadcast variable”" in c.text
    en = run("74 lines mention broadcast variable 35.", "How often was broadcast variable 35 read?", relaxed)
    assert en.action == "noted" and 'no line holds all of "broadcast variable 35"' in en.text
    exact = {**relaxed, "text_relaxed_to": None}
    assert run("有74条日志消息包含“broadcast variable 35”。", q, exact).action == "kept"


def test_a_lookup_answer_that_reads_no_line_gets_its_line_cited():
    """A lookup (no figure asked) answered by a paraphrase of its line ("logged in" for "Invalid user")
    gets the line cited after it; an answer that writes a span of the line is kept as it is. A count of a
    few lines that the question's rare tokens point at is a lookup too ("What is the status of the user
    cheng?" counted cheng's 3 lines): one of them is cited after it; a count of more is not."""
    from gateway.serve.answer.evidence import Evidence
    named = {"id": 9, "time": 1796885748.0, "time_text": "Dec 10 09:17:26",
             "text": "Dec 10 09:17:26 LabSZ sshd[24496]: Invalid user postgres from 187.141.143.180"}
    result = {"call": {"op": "lines", "template": 3, "where": {"user": "postgres"}}, "count": 1, "lines": [named]}
    q = "What is the status of the user postgres?"
    end = which_end(q)
    ev = Evidence(["postgres"], [named])
    c = check("The user postgres logged in from 187.141.143.180 on Dec 10 09:17:26.", q, result,
              render_result(result, end), end, ev)
    assert c.action == "cited" and c.text.endswith(named["text"])
    kept = check("The line says: Invalid user postgres from 187.141.143.180.", q, result, render_result(result, end), end, ev)
    assert kept.action == "kept"
    zh = check("用户 postgres 从 187.141.143.180 登录了。", "用户 postgres 的状态是什么？", result,
               render_result(result, end), end, ev)
    assert zh.action == "cited" and "回答依据的日志行" in zh.text
    counted = {"call": {"op": "count", "text": "postgres"}, "count": 1, "lines": [named]}
    c = check("There is 1 line where user = postgres.", q, counted, render_result(counted, None), None, ev)
    assert c.action == "cited" and c.text.endswith("One of the lines counted:\n- " + named["text"])
    more = {**counted, "count": 4}
    assert "Invalid user" not in check("4 lines mention postgres.", "How many lines mention postgres?", more,
                                       render_result(more, None), None, ev).text
    many = {**result, "count": 40, "lines": [named] * 10}
    assert check("He logged in.", "What did postgres do?", many, render_result(many, None), None).action == "kept"


def test_a_when_question_needs_the_time_even_when_the_pattern_captured_values():
    """"When did <pattern> first appear": the values the pattern captured are not when; an answer that
    gives them without the time is replaced by the plain answer, which says the time."""
    line = {**LINE, "text": "Dec 10 06:55:48 LabSZ sshd[24200]: Address change detected. Old: 10.0.0.1 New: 10.0.0.2",
            "captured": {"old": "10.0.0.1"}}
    result = {"call": {"op": "first_last", "text": "Address change detected. Old"}, "count": 3, "first": line, "last": line}
    c = run("旧地址：10.0.0.1。", '"Address change detected. Old" 首次出现时间', result)
    assert c.action == "replaced" and "06:55:48" in c.text
    assert run("Old is 10.0.0.1.", 'What was the old address the first "Address change detected" line gave?',
               result).action == "kept"


def test_a_stats_call_names_its_asked_figure_and_the_answer_must_give_it():
    """`want` in a stats call (the figure the question asks for) parses under the grammar, is said first
    in the answer's prompt and the plain answer, and is the one figure the answer must give: the maximum
    given for "the total" is replaced."""
    from gateway.llm.constrained import Grammar
    from gateway.serve.answer.call import call_grammar, parse_call
    from gateway.serve.answer.render import plain_answer
    gr = Grammar(call_grammar([], [], [], ["memory"], [], [], False, ["stats"]))
    text = 'stats", "text": "memory", "of": "memory", "want": "sum"}'
    assert gr.matches(text) and parse_call(text)["want"] == "sum" and not gr.matches(text.replace("sum", "median"))
    low = {**LINE, "id": 2, "text": "Dec 10 06:55:48 LabSZ yarn: getResources() for app: memory 0"}
    high = {**LINE, "id": 3, "text": "Dec 10 06:55:49 LabSZ yarn: getResources() for app: memory 10240"}
    result = {"call": {"op": "stats", "of": "memory", "text": "getResources() for", "want": "sum"}, "count": 5,
              "n": 5, "min": 0, "max": 10240, "avg": 4710.4, "sum": 23552, "min_line": low, "max_line": high}
    assert render_result(result).startswith("Asked for: sum (the total, in all) = 23552.")
    q = 'sum of values after "memory" in "getResources() for" lines?'
    c = run("The maximum memory was 10240.", q, result)
    assert c.action == "replaced" and c.missing == ["23552"] and c.text.startswith("The sum is 23552")
    assert run("They add up to 23552.", q, result).action == "kept"
    mx = {**result, "call": {**result["call"], "want": "max"}}
    assert plain_answer(mx, "largest memory?", None).startswith("The maximum 10240.")
    assert run("The memory values add up to 23552.", "largest memory?", mx).action == "replaced"
    free = {**result, "call": {k: v for k, v in result["call"].items() if k != "want"}}     # no want: any figure
    assert run("The maximum memory was 10240.", q, free).action == "kept"


def test_the_asked_extreme_is_said_with_the_unit_its_line_writes():
    """"Asked for: max = 5.2 KB": the unit written right after the figure in its line goes with it (a
    size, a duration, a percentage); a word after it that is no unit does not."""
    line = {**LINE, "text": "17/06/09 20:10:48 INFO storage.MemoryStore: Block broadcast_9_piece0 stored as bytes "
                            "in memory (estimated size 5.2 KB, free 317.6 KB)"}
    result = {"call": {"op": "stats", "of": "size", "want": "max"}, "count": 1, "n": 1, "min": 5.2, "max": 5.2,
              "avg": 5.2, "sum": 5.2, "min_line": line, "max_line": line}
    assert render_result(result).startswith("Asked for: max (the largest, highest) = 5.2 KB.")
    assert run("最大值是 5.2 KB。", "broadcast_9_piece0 的 size 是多少？", result).action == "kept"
    plain = {**line, "text": "Reading broadcast variable 39 took 716 for the read"}
    took = {**result, "max": 716, "min": 716, "avg": 716, "sum": 716, "max_line": plain, "min_line": plain}
    assert render_result(took).startswith("Asked for: max (the largest, highest) = 716.")
    one = {**result, "call": {"op": "stats", "of": "free", "want": "sum"}, "sum": 317.6, "max": 317.6, "min": 317.6}
    one["max_line"] = one["min_line"] = {**line, "text": line["text"].replace("size 5.2", "size 317.6")}
    assert render_result(one).startswith("Asked for: sum (the total, in all) = 317.6 KB.")   # one number: as written


def test_an_answer_that_repeats_the_question_s_words_reads_no_line():
    """"invalid user boot" is in the line and in the question: an answer that says only that and the host
    reads no line, so the line is cited after it."""
    from gateway.serve.answer.evidence import Evidence
    named = {"id": 9, "time": 1796885748.0, "time_text": "Dec 10 09:17:26",
             "text": "Dec 10 09:17:26 LabSZ sshd[24496]: Invalid user boot from 183.62.140.253"}
    result = {"call": {"op": "lines", "template": 3, "where": {"user": "boot"}}, "count": 1,
              "lines": [{**named, "id": 8, "text": "Dec 10 09:17:26 LabSZ sshd[24496]: input_userauth_request: invalid user boot [preauth]"}]}
    q = "What is the name of the device that caused an invalid user boot?"
    c = check("The device that caused an invalid user boot is LabSZ.", q, result, render_result(result, None), None,
              Evidence(["boot"], [named]))
    assert c.action == "cited" and "183.62.140.253" in c.text


def test_the_cited_line_is_the_one_the_answer_shares_most_with_and_a_min_answer_reads_its_line():
    """Of the lines a lookup was shown, the one citing its answer shares the most tokens with it (the
    listing's "Successfully registered with driver" at the answer's time, not an evidence line that only
    says "Registered"); a stats answer that names what the asked minimum's line holds, without the figure,
    keeps its words and gets the figure cited, and the plain answer quotes the minimum's line."""
    from gateway.serve.answer.evidence import Evidence
    other = {"id": 1, "time": 1497039040.0, "time_text": "17/06/09 20:10:40",
             "text": "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers for [TERM]"}
    line = {"id": 15, "time": 1497039042.0, "time_text": "17/06/09 20:10:42",
            "text": "17/06/09 20:10:42 INFO executor.CoarseGrainedExecutorBackend: Successfully registered with driver"}
    result = {"call": {"op": "lines", "text": "registered driver"}, "count": 1, "lines": [line]}
    q = "How was the driver registered?"
    c = check("The driver was registered at 2017-06-09 20:10:42.", q, result, render_result(result, None), None,
              Evidence(["registered"], [other]))
    assert c.action == "cited" and c.text.endswith(line["text"])
    low = {**LINE, "id": 2, "text": "17/06/09 20:11:08 INFO storage.MemoryStore: Block rdd_42_6 stored as bytes in memory (estimated size 559.0 B)"}
    high = {**LINE, "id": 3, "text": "17/06/09 20:11:08 INFO storage.MemoryStore: Block rdd_42_32 stored as bytes in memory (estimated size 993.0 B)"}
    st = {"call": {"op": "stats", "of": "size", "want": "min", "text": "rdd_42 memory"}, "count": 40, "n": 40,
          "min": 559.0, "max": 993.0, "avg": 878.0, "sum": 35122.0, "min_line": low, "max_line": high}
    q = "What partition of rdd_42 has min memory estimated?"
    c = run("The partition is rdd_42_6.", q, st)
    assert c.action == "cited" and c.text.startswith("The partition is rdd_42_6.\nThe minimum 559.0 B.")
    c = run("The partition is rdd_42_3.", q, st)
    assert c.action == "replaced" and "rdd_42_6" in c.text and "rdd_42_32" not in c.text


def test_a_count_in_han_numerals_gets_the_figure_in_digits():
    r = {"call": {"op": "count", "text": "vcs2 removing device node"}, "count": 2, "of_all": 2000,
         "param_stats": {"of_param": "node", "values": ["'/udev/vcs2'"]}}
    c = run("有两条记录，其中一条的节点值是 '/udev/vcs2'。", "vcs2 相关的“removing device node”记录有几条？", r)
    assert c.action == "cited" and c.text.startswith("有两条记录") and "2 行" in c.text
    assert run("有2条记录，节点值是 '/udev/vcs2'。", "vcs2 相关的“removing device node”记录有几条？", r).action == "kept"
    assert "12" in run("有十二条记录。", "记录有几条？", {**r, "count": 12}).text        # replaced: nothing else said


def test_a_plain_count_says_its_figures_over_the_asked_parameter():
    """The fallback for "how many bytes did task 22.0 send" was "4 lines match": it now says what the
    lines' sizes add up to, names as they are, and numbers without a unit with their sum (the prompt's
    figures: "把 memory 后面的值都加起来" fell back to the values alone)."""
    sized = {"call": {"op": "count", "where": {"task": "22.0"}}, "count": 2,
             "param_stats": {"of_param": "size", "n": 2, "sum": 4833.0, "values": ["2128", "2705"], "unit": "bytes"}}
    assert "Their size values add up to 4833 bytes (2128, 2705 bytes)." in plain_answer(sized, "How many bytes?", None)
    assert "size 值合计 4833 bytes（2128、2705 bytes）。" in plain_answer(sized, "发送了多少字节？", None)
    many = {**sized, "count": 30, "param_stats": {"of_param": "size", "n": 30, "sum": 83480.0, "unit": "bytes"}}
    assert "add up to 83480 bytes." in plain_answer(many, "How many bytes?", None)
    named = {**sized, "param_stats": {"of_param": "user", "n": 2, "values": ["root", "admin"]}}
    assert "Their user values: root, admin." in plain_answer(named, "Which users?", None)
    memory = {**sized, "count": 12, "param_stats": {"of_param": "memory", "n": 12, "sum": 23552.0,
                                                    "values": ["10240", "7168", "4096", "1024", "0"]}}
    assert "memory 值：10240、7168、4096、1024、0（12 行合计 23552）。" in plain_answer(memory, "memory 的值加起来一共多少？", None)
