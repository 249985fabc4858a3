"""What a question names, read without the model (gateway/serve/answer/question.py): the filters the call
grammar offers for it."""

from __future__ import annotations

import pytest

from gateway.serve.answer.question import asks, ground, span_s, which_end

WORDS = ["Failed", "password", "authentication", "failure", "fault", "cleared", "operator", "torque", "JAM", "E-STOP"]
HOSTS = ["LabSZ", "line3/capper", "line3/filler"]
COMPONENTS = ["sshd", "sshd(pam_unix)", "FSNamesystem"]
LEVELS = ["info", "warning", "error", "critical"]


def g(question):
    return ground(question, HOSTS, COMPONENTS, LEVELS, WORDS)


def test_only_what_the_question_names():
    x = g("What kind of message appears most often in the OpenSSH log?")
    assert (x.words, x.hosts, x.components, x.levels, x.recent, x.phrases, x.times) == ([], [], [], [], False, [], [])
    x = g("Which operator cleared the most faults?")
    assert x.words == ["fault", "cleared", "operator"]          # "faults" ~ "fault"
    x = g("What was the lowest capper torque logged, in Nm?")
    assert (x.words, x.hosts) == (["torque"], ["line3/capper"])
    assert g("How many lines did the component sshd(pam_unix) write?").components == ["sshd", "sshd(pam_unix)"]


def test_levels_in_english_and_chinese():
    assert g("HDFS 一共有多少条 WARN 级别的日志？").levels == ["warning"]
    assert g("How many ERROR or CRITICAL lines were logged?").levels == ["error", "critical"]
    assert g("最近十分钟有什么报警？").levels == ["warning"]


def test_chinese_question_words_through_the_glossary_else_every_log_word():
    x = g("哪个工位卡瓶次数最多？")                     # 卡瓶 = jam; 工位 = station: a count by host
    assert x.words == ["JAM"] and not x.recent
    assert g("产线状况说明？").words == WORDS   # Chinese beyond the glossary: the model translates
    assert g("一共记录了多少行日志？").words == []       # nothing beyond the question's frame: no text
    assert g("press-1 那边打了多少条日志了").words == []   # 打 (日志) writes lines, 那边 is where: a frame
    assert g("最近十分钟有什么报警？").recent and g("What happened in the last 5 minutes?").recent


def test_last_time_is_not_a_recent_window():
    assert not g('When did "check pass" appear for the last time?').recent
    assert g("What failed in the past hour?").recent and g("errors in the last 10 minutes").recent


def test_grammar_keeps_to_the_ops():
    from gateway.llm.constrained import Grammar
    from gateway.serve.answer.call import call_grammar
    gr = Grammar(call_grammar([], [], [], ["x"], [], [], False, ["stats"]))
    assert gr.matches('stats", "text": "x"}') and not gr.matches('count"}')
    gr = Grammar(call_grammar([], [], [], ["x"], [], [], False, ["top_k"]))
    assert gr.matches('top_k", "by": "value"}') and not gr.matches('stats"}')


def test_a_quoted_phrase_names_no_level_or_op():
    x = g('How many lines of the form "<N> critical input interrupts, most of them" are there?')
    assert x.phrases == ["<N> critical input interrupts, most of them"]
    assert x.levels == []


def test_the_logs_name_is_not_a_filter():
    comps = ["org.apache.hadoop.hdfs.LeaseRenewer", "org.apache.hadoop.mapreduce.Task", "kernel"]
    x = ground("How many lines did Hadoop log between 2015-10-18 18:04:04 and 2015-10-18 18:04:06?", [], comps,
               LEVELS, ["hadoop-metrics2.properties", "Linux", "renew"])
    assert x.words == [] and x.components == [] and len(x.times) == 2
    assert ground("How many lines did the component kernel write in the Linux log?", [], comps, LEVELS,
                  ["Linux", "kernel"]).words == ["kernel"]
    x = ground("Linux 日志里哪个组件输出的日志最多？", [], comps, LEVELS, ["Linux"])
    assert x.words == []                                 # no Latin word left, nothing beyond the frame


def test_a_value_is_named_as_a_whole_word():
    x = ground("How many lines contain the word checkpoint?", ["h", "check"], ["c"], LEVELS, [])
    assert x.hosts == [] and x.components == []
    assert ground("What did host h report?", ["h"], [], LEVELS, []).hosts == ["h"]


def test_levels_as_the_log_writes_them():
    stored = ["info", "warn", "error", "severe", "fatal"]
    x = ground("How many SEVERE level lines did BGL log?", [], [], stored, ["level", "SEVERE", "severed"])
    assert x.levels == ["severe"] and x.words == []         # a level, not a text; "level" names nothing
    assert ground("How many warnings?", [], [], stored, []).levels == ["warn"]     # by its canonical name
    assert ground("ERROR lines?", [], [], stored, ["ERROR"]).levels == ["error"]
    x = ground("How many errors did the pump report?", [], [], ["info"], ["errors", "pump"])
    assert x.levels == [] and x.words == ["errors", "pump"]   # no such level stored: the word is text


def test_a_numbered_name_is_not_the_measured_word():
    words = ["heater", "zone", "temperature"]
    x = ground("What was the highest heater zone 2 temperature?", [], [], LEVELS, words)
    assert x.words == words and x.of_words == ["temperature"]
    assert ground("加热区 2 号的最高温度是多少？", [], [], LEVELS, words).of_words == ["temperature"]


def test_a_host_named_before_log_is_still_named():
    assert g("How many warnings did the filler log?").hosts == ["line3/filler"]


def test_a_chinese_questions_latin_subject_is_the_logs_name():
    words = ["hadoop-metrics2.properties", "JAM"]
    x = ground("Hadoop 在 2015-10-18 18:04:04 到 2015-10-18 18:04:06 之间一共记录了多少行日志？", [], [], LEVELS, words)
    assert x.words == [] and len(x.times) == 2
    assert ground("JAM 一共检测到多少次？", [], [], LEVELS, words).words == ["JAM"]      # a word of the log: kept
    x = ground("为什么 HDFS 日志里有这么多错误和告警？主要原因是什么？", [], [], ["info", "warn"], words)
    assert x.levels == ["warn"] and x.words == []        # 错误: no such level here, and not a text either


def test_grammar_offers_named_levels_as_one_list_and_by_words():
    from gateway.llm.constrained import Grammar
    from gateway.serve.answer.call import call_grammar
    gr = Grammar(call_grammar([], [], ["error", "critical"], [], [], [], False, ["count"], named=True))
    assert gr.matches('count", "level": ["error", "critical"]}') and not gr.matches('count", "level": "error"}')
    gr = Grammar(call_grammar([], [], [], ["operator", "cleared"], [], [], False, ["top_k"], by_words=["operator"]))
    assert gr.matches('top_k", "by": "operator", "text": "cleared"}') and not gr.matches('top_k", "by": "cleared"}')
    gr = Grammar(call_grammar([], [], [], ["zone", "temperature"], [], [], False, ["stats"], of_words=["temperature"]))
    assert gr.matches('stats", "text": "zone temperature", "of": "temperature"}')
    assert not gr.matches('stats", "text": "zone", "of": "zone"}')
    assert not gr.matches('stats", "text": "zone temperature"}')      # a numbered name: `of` is required


def test_named_levels_and_a_pair_of_times_are_required():
    from gateway.llm.constrained import Grammar
    from gateway.serve.answer.call import call_grammar
    gr = Grammar(call_grammar([], [], ["warn"], [], [], ["08:05", "08:10"], False, ["count"], named=True))
    assert gr.matches('count", "level": "warn", "since": "08:05", "until": "08:10"}')
    assert not gr.matches('count", "since": "08:05", "until": "08:10"}')       # the level left out
    assert not gr.matches('count", "level": "warn", "since": "08:10", "until": "08:05"}')
    assert Grammar(call_grammar([], [], ["warn"], [], [], [], False, ["count"])).matches('count"}')   # unnamed


def test_logcat_letter_levels():
    stored = ["debug", "info", "warning", "error"]
    assert ground("How many W level lines did Android log?", [], [], stored, []).levels == ["warning"]
    assert ground("Android 一共有多少条 E 级别的日志？", [], [], stored, []).levels == ["error"]
    assert ground("How many lines mention a Type A fault?", [], [], stored, []).levels == []
    assert ground('What is the total number of level "E" entries?', [], [], stored, []).levels == ["error"]
    assert ground('日志中共有多少条 "E" 级别的记录？', [], [], stored, []).levels == ["error"]
    letters = ["V", "I", "W", "E", "F"]                      # a store that keeps the letters as written
    assert ground('How many level "F" entries?', [], [], letters, []).levels == ["F"]
    assert ground("How many errors?", [], [], letters, []).levels == ["E", "F"]


def test_problem_words_take_every_level_of_their_kind():
    bgl = ["info", "fatal", "error", "warning", "severe", "failure"]
    x = ground("Why are there so many errors and warnings in the log?", [], [], bgl, [])
    assert x.levels == ["fatal", "error", "severe", "failure", "warning"]     # error or worse, and warnings
    assert ground("How many ERROR level lines?", [], [], bgl, []).levels == ["error"]   # as the log writes it
    assert ground("How many fatal level lines?", [], [], bgl, []).levels == ["fatal"]


def test_a_named_host_is_not_what_stats_measures():
    x = ground("What was the lowest capper torque logged, in Nm?", ["line3/capper"], [], LEVELS, ["capper", "torque", "Nm"])
    assert x.hosts == ["line3/capper"] and x.of_words == ["torque", "Nm"]


@pytest.mark.parametrize("question, parts", [
    ("过去几分钟里急停按了几次？哪个区的温度最高？", ["过去几分钟里急停按了几次？", "哪个区的温度最高？"]),
    ("How many E-STOPs? Which zone was hottest", ["How many E-STOPs?", "Which zone was hottest"]),
    ("When did it stop? (in UTC)", ["When did it stop? (in UTC)"]),
    ('What does "ready? go" mean?', ['What does "ready? go" mean?']),
    ("How many errors?", ["How many errors?"]),
    ("a? b? c? d?", ["a?", "b?", "c? d?"]),
])
def test_asks(question, parts):
    assert asks(question) == parts


@pytest.mark.parametrize("question, seconds", [
    ("How many alarms in the last 10 minutes?", 600), ("最近十分钟有哪些告警？", 600), ("过去2小时报错几次", 7200),
    ("errors in the past 30s", 30), ("最近二十五分钟", 1500), ("过去几分钟里急停按了几次？", None),
    ('what does "last 5 minutes" mean', None), ("When was the last error?", None),
    ("WARN entries in the final 10 minutes, measured back from the latest line", 600),
    ("从最后一条日志往前推 10 分钟，警告日志出了几条", 600), ("最后一条日志是什么", None), ("接近10秒的任务", None)])
def test_span(question, seconds):
    assert span_s(question) == seconds


def test_written_window_is_the_calls():
    from gateway.llm.constrained import Grammar
    from gateway.serve.answer.call import call_grammar
    g = ground("How many errors in the last 10 minutes?", [], [], ["error"], ["pump"])
    assert g.minutes == 10
    gr = Grammar(call_grammar(levels=g.levels, words=g.words, recent=g.recent, ops=g.ops, minutes=g.minutes,
                              named=True))
    assert gr.matches('count", "level": "error", "last_minutes": 10}')
    assert not gr.matches('count", "level": "error", "last_minutes": 5}')
    assert not gr.matches('count", "level": "error"}')


def test_a_window_s_number_is_no_text_word():
    """"最近 10 分钟": 10 is the window's length, never the text filter a line is searched for."""
    from gateway.serve.answer.evidence import candidates
    for q in ("以最新一条日志为准，最近 10 分钟内有多少条 WARN 日志？", "从最后一条日志往前推 10 分钟，警告日志出了几条",
              "How many WARN lines in the last 10 minutes?"):
        g = ground(q, [], [], ["warn"], ["10", "CRC", "frame"])
        assert g.minutes == 10 and "10" not in g.words and "10" not in candidates(q), q   # nor a token to look up
    assert "10" in ground("帧校验出错了几条？", [], [], [], ["10", "CRC", "frame"]).words   # no window: any log word
    assert "10" in candidates("how many WARN in the last 10 minutes on pump 10?")


def test_a_value_written_out_is_a_required_filter():
    from gateway.llm.constrained import Grammar
    from gateway.serve.answer.call import call_grammar
    comps = ["org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator", "org.apache.hadoop.ipc.Server", "main"]
    g = ground("组件org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator一共输出了多少行日志？", ["h1"], comps,
               ["info"], ["Allocator"])
    assert g.whole == {"component": comps[0]}
    gr = Grammar(call_grammar(g.hosts, g.components, g.levels, g.words, ops=g.ops, named=True, whole=g.whole))
    assert gr.matches(f'count", "component": "{comps[0]}"}}') and not gr.matches('count"}')
    assert ground("What is the main cause of the failures?", [], comps, [], []).whole == {}   # a word, not a name
    assert ground("How did the capper do?", ["line3/capper"], [], [], []).whole == {}       # a part: optional


@pytest.mark.parametrize("question", ["How many times did the pump trip?", "Which station logged the most errors?",
                                      "Why did the press stop?", "哪个工位卡瓶次数最多？", "What was the highest temperature?",
                                      "When did the E-STOP first appear?"])
def test_no_op_or_field_is_read_from_the_wording(question):
    """The op and what to count by are the model's to choose (issue 41: no wording cues)."""
    x = g(question)
    assert x.ops == [] and x.by == [] and x.by_words == []


def test_a_value_inside_a_longer_named_one_is_not_named():
    comps = ["net.Worker", "net.Worker$Reader", "kernel"]
    assert ground("How many lines did net.Worker$Reader write?", [], comps, [], []).whole == {"component": "net.Worker$Reader"}
    assert ground("How many lines did net.Worker write?", [], comps, [], []).whole == {"component": "net.Worker"}


def test_the_most_recent_one_is_no_window():
    assert not ground("最近一次“库存不足”记录中的数量是多少？", [], [], [], []).recent
    assert not ground("When was the most recent error?", [], [], [], []).recent
    assert ground("最近有什么告警？", [], [], [], []).recent and ground("Any errors recently?", [], [], [], []).recent


def test_the_longest_quote_names_the_lines_and_a_quoted_word_the_value():
    g = ground('Among the "pump tripped in error state" lines, what is the largest value after "state"?',
               [], [], [], ["pump", "tripped", "error", "state", "ok"])
    assert g.phrases == ["pump tripped in error state"] and g.of_words[0] == "state"


def test_a_dotted_name_is_near_only_itself():
    g = ground("How many lines did org.acme.plc.RMAllocator write?", [], [], [],
               ["org.acme.plc.ContainerAllocator", "allocated"])
    assert "org.acme.plc.ContainerAllocator" not in g.words


def test_a_chinese_question_s_words_glossed_for_the_call():
    from gateway.serve.answer.glossary import gloss
    assert gloss("哪个组件输出的日志行数最多？") == ("哪个=which, 组件=component, 输出=write, 日志=log lines, "
                                             "行数=number of lines, 最多=the most")
    assert gloss("How many lines?") == ""
    assert gloss("哪个模块刷日志刷得最多？") == "哪个=which, 模块=component, 日志=log lines, 最多=the most"
    # its frame and a field name, nothing a line says: no text filter to choose
    assert ground("哪个模块刷日志刷得最多？", [], ["executor.Executor"], [], ["broadcast", "task"]).words == []
    assert ground("哪个模块的广播最多？", [], [], [], ["broadcast", "task"]).words == ["broadcast"]


def test_a_level_word_before_log_is_a_level_not_the_logs_name():
    stored = ["info", "warning", "error"]
    assert ground("以最新一条日志为准，最近 10 分钟内有多少条 warning 日志？", [], [], stored, []).levels == ["warning"]
    assert ground("error 日志有几条？", [], [], stored, []).levels == ["error"]
    assert ground("Hadoop 日志里有几条？", [], [], stored, ["Hadoop"]).levels == []


def test_fault_is_a_level_only_as_the_log_writes_it():
    stored = ["info", "warning", "fault"]
    assert ground("哪个设备记录的 FAULT 日志最多？", [], [], stored, []).levels == ["fault"]
    assert ground("How many lines mention a pump fault?", [], [], stored, []).levels == []
    assert ground("How many errors?", [], [], stored, []).levels == ["fault"]      # an error-class level


def test_failure_is_a_level_only_as_the_log_writes_it():
    stored = ["info", "alert", "FAILURE"]
    assert ground("how many ssh auth failures came from 218.188.2.4?", [], [], stored, []).levels == []
    assert ground("How many FAILURE lines are there?", [], [], stored, []).levels == ["FAILURE"]
    assert ground("How many errors?", [], [], stored, []).levels == ["alert", "FAILURE"]


def test_most_recently_asks_the_last():
    assert which_end('At what time was "below threshold, temp" most recently logged?') == "last"


def test_the_first_one_in_chinese_asks_the_first():
    assert which_end("第一个 map 任务是什么时候成功完成的？") == "first"      # 第一个 as 第一次: the first end
    assert which_end("第一条告警是几点？") == "first" and which_end("最后一条告警是几点？") == "last"


def test_a_level_written_as_logs_write_it_that_no_line_is_at_is_absent():
    from gateway.serve.answer.question import absent_levels
    q = "Anything logged at WARN or ERROR by this executor?"
    assert absent_levels(q, ["INFO"]) == ["WARN", "ERROR"] and absent_levels(q, ["INFO", "WARN"]) == ["ERROR"]
    assert absent_levels("How many ERROR-level lines?", ["info", "error"]) == []      # "ERROR-level": error
    assert g("How many ERROR-level lines did the AM write?").levels == ["error"]
    assert absent_levels("any errors today?", ["INFO"]) == []       # a kind of problem, not a level as written


def test_a_pair_of_written_times_is_the_window_not_a_recent_one():
    assert not g("18:03:00 到 18:03:59 这一分钟里，progress 一共报了几次？").recent
    assert g("最近十分钟有什么报警？").recent and g("18:03 之后最近十分钟有几条？").recent


def test_a_start_asks_the_first_only_of_a_when_question():
    assert which_end("When did stage 29.0 kick off on this box?") == "first"
    assert which_end("stage 29.0 是什么时候开始的？") == "first" and which_end("When did the job begin?") == "first"
    assert which_end("stage 29.0 里有几个 task 开始跑了但日志里一直没看到 Finished？") is None     # starts counted
    assert which_end("stage 24.0: number of tasks started, and the highest TID among them?") is None
    assert which_end("Which task started first?") == "first"


def test_words_are_one_word_by_a_stem_not_by_a_shared_start():
    from gateway.serve.answer.question import near
    for a, b in [("failures", "failed"), ("stop", "stopped"), ("retry", "retries"), ("connect", "connection"),
                 ("allocate", "allocated"), ("finish", "finished"), ("allocated", "allocateblock"),
                 ("packet", "packetresponder")]:          # a name made of words: "NameSystem.allocateBlock"
        assert near(a, b) and near(b, a), (a, b)
    # the same first letters, other words: "couldn't contact the RM" is not about containers
    for a, b in [("contact", "container"), ("contact", "contains"), ("run", "running")]:
        assert not near(a, b), (a, b)
    g = ground("When did the AM first fail to contact the RM?", [], [], [], ["contacting", "container", "failed"])
    assert set(g.words) == {"contacting", "failed"}


def test_a_glossary_stem_offers_every_log_word_it_begins():
    """认证 glosses to "auth": a stem, not a word of its own; it offers "authorized"."""
    from gateway.serve.answer.question import near
    assert near("authorized", "auth")
    assert near("recover", "recovery") and near("retry", "retries")
    assert "authorized" in ground("认证失败了几次？", [], [], [], ["authorized", "failed", "memo"]).words
