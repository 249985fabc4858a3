"""What a question names, read without the model (gateway/serve/question.py): the filters the call
grammar offers for it."""

from __future__ import annotations

from gateway.serve.question import ground

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


def test_chinese_question_may_use_every_log_word_and_recent_time():
    x = g("哪个工位卡瓶次数最多？")
    assert x.words == WORDS and not x.recent
    assert g("最近十分钟有什么报警？").recent and g("What happened in the last 5 minutes?").recent


def test_last_time_is_not_a_recent_window():
    assert not g('When did "check pass" appear for the last time?').recent
    assert g("What failed in the past hour?").recent and g("errors in the last 10 minutes").recent


def test_the_wording_narrows_the_op():
    assert g("How many lines did the component sshd write?").ops == ["buckets", "count", "top_k"]
    assert g("Which operator cleared the most faults?").ops == ["top_k"]
    assert g("封盖机记录到的最低扭矩是多少 Nm？").ops == ["stats"]
    assert g('When did "check pass" appear for the last time?').ops == ["first_last", "lines"]
    assert g("What was the bottle total after the last completed cycle?").ops == []


def test_grammar_keeps_to_the_ops():
    from gateway.llm.constrained import Grammar
    from gateway.serve.query_call import call_grammar
    gr = Grammar(call_grammar([], [], [], ["x"], [], [], False, ["stats"]))
    assert gr.matches('stats", "text": "x"}') and not gr.matches('count"}')
    gr = Grammar(call_grammar([], [], [], ["x"], [], [], False, ["top_k"]))
    assert gr.matches('top_k", "by": "value"}') and not gr.matches('stats"}')


def test_a_quoted_phrase_names_no_level_or_op():
    x = g('How many lines of the form "<N> critical input interrupts, most of them" are there?')
    assert x.phrases == ["<N> critical input interrupts, most of them"]
    assert x.levels == [] and x.ops == ["buckets", "count", "top_k"]


def test_why_asks_for_kinds_of_message():
    x = g("Why are there so many errors and warnings in the log? What is the main cause?")
    assert x.ops == ["lines", "top_k"] and x.by == ["template"]
    assert g("Which host logged the most errors, and why?").by == []


def test_the_logs_name_is_not_a_filter():
    comps = ["org.apache.hadoop.hdfs.LeaseRenewer", "org.apache.hadoop.mapreduce.Task", "kernel"]
    x = ground("How many lines did Hadoop log between 2015-10-18 18:04:04 and 2015-10-18 18:04:06?", [], comps,
               LEVELS, ["hadoop-metrics2.properties", "Linux", "renew"])
    assert x.words == [] and x.components == [] and len(x.times) == 2
    assert ground("How many lines did the component kernel write in the Linux log?", [], comps, LEVELS,
                  ["Linux", "kernel"]).words == ["kernel"]
    assert ground("Linux 日志里哪个组件输出的日志最多？", [], comps, LEVELS, ["Linux"]).words == ["Linux"]   # no Latin word left
    x = g('The log has one line of the form "Created <X> for app". What is X in that line?')
    assert x.ops == ["first_last", "lines"]


def test_a_value_is_named_as_a_whole_word():
    x = ground("How many lines contain the word checkpoint?", ["h", "check"], ["c"], LEVELS, [])
    assert x.hosts == [] and x.components == []
    assert ground("What did host h report?", ["h"], [], LEVELS, []).hosts == ["h"]
