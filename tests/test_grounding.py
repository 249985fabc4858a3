"""The kinds of line a question is about (gateway/serve/grounding.py), found from the data: ranked by
the question's words and identifiers, shown with named parameters; the call grammar takes a kind as
`template` and a parameter name as `of` / `by`; a call with no condition gets the best kind; the
query surface's top_k by a named parameter."""

from __future__ import annotations

import json

import pytest

from gateway.ingest.record import LogRecord
from gateway.llm.constrained import Grammar
from gateway.pipeline.fields import LineFields, named_params
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store
from gateway.serve.answer import grounding
from gateway.serve.answer.plan import QueryPlan
from gateway.serve.answer.call import call_grammar
from tests.helpers import PlanTool, made_store as _made

RUN = "Running task <NUM> in stage <NUM> (TID <NUM>)"
DONE = "Finished task <NUM> in stage <NUM> (TID <NUM>). <NUM> bytes result sent to driver"
FAIL = "Failed password for <*> from <IP> port <NUM> ssh2"


def _rows():
    out = []
    for i in range(6):
        out.append((f"Running task {i}.0 in stage 3.0 (TID {10 + i})", 1, RUN))
        out.append((f"Finished task {i}.0 in stage 3.0 (TID {10 + i}). {1000 + i} bytes result sent to driver", 2, DONE))
    out.append(("Running task 0.0 in stage 4.0 (TID 20)", 1, RUN))
    out.append(("Running task 3.0 in stage 4.0 (TID 21)", 1, RUN))
    for user, port in (("root", 22), ("admin", 2200), ("root", 4000)):
        out.append((f"Failed password for {user} from 10.0.0.7 port {port} ssh2", 3, FAIL))
    return out


@pytest.fixture()
def surface(tmp_path):
    rows = _rows()
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, (t, _, _) in enumerate(rows)]
    fields = [LineFields(template=tmpl, params=named_params(tmpl, text)) for text, _, tmpl in rows]
    store = Store(tmp_path / "s.db")
    store.append(recs, [tid for _, tid, _ in rows], fields)
    s = QuerySurface(store.path)
    yield s
    s.close()
    store.close()


def test_kinds_ranked_by_words_and_shown_with_names(surface):
    kinds = grounding.Kinds(surface).kinds(["finished", "task", "stage"], ["3.0"])
    assert [k.id for k in kinds][:2] == [2, 1]          # "finished" is held by one kind only
    done = kinds[0]
    assert done.count == 6 and done.params == ["task", "stage", "tid", "size"]
    assert done.template.startswith("Finished task <task> in stage <stage> (TID <tid>)")
    assert "T2 (6 lines)" in grounding.render(kinds) and "size=1005" in done.shown()
    assert grounding.Kinds(surface).kinds([], []) == []
    assert grounding.Kinds(surface).kinds(["valve"], []) == []     # nothing the store holds


def test_kinds_by_identifier_alone(surface):
    kinds = grounding.Kinds(surface).kinds([], ["10.0.0.7"])
    assert [k.id for k in kinds] == [3]


def test_a_kind_s_examples_come_from_a_line_with_the_question_s_value(surface):
    """Asked about admin, the kind is shown with admin's line as its example, not the newest line's user
    (root): an example naming someone else read as if the kind were not about admin."""
    newest = grounding.Kinds(surface).kinds(["failed", "password"], [])[0]
    assert newest.id == 3 and "root" in newest.examples.values() and "4000" in newest.shown()
    asked = grounding.Kinds(surface).kinds(["failed", "password"], ["admin"])[0]
    assert asked.id == 3 and "admin" in asked.examples.values() and "2200" in asked.shown()
    assert asked.params == newest.params


def test_grammar_takes_a_kind_and_a_parameter_name():
    g = Grammar(call_grammar(words=["task", "stage", "3.0"], templates=["2", "1"], params=["task", "size"],
                             named=True))
    for call in ('count", "template": 2, "text": "3.0"}', 'stats", "template": 2, "of": "size"}',
                 'top_k", "by": "size", "template": 1}'):
        assert g.matches(call), call
    assert not g.matches('count", "template": 9}')     # a kind not shown
    assert not g.matches('stats", "of": "bytes2"}')


def test_query_by_named_parameter(surface):
    top = surface.run({"op": "top_k", "by": "task", "template": 1, "k": 2})
    assert top["of_param"] == "task" and top["count"] == 8 and top["top"][0] == {"value": "0.0", "count": 2}
    assert surface.run({"op": "count", "template": 1, "where": {"stage": "3.0"}})["count"] == 6
    assert surface.run({"op": "count", "template": 1, "text": "3.0"})["count"] == 7
    assert "error" in surface.run({"op": "count", "where": ["stage"]})
    stats = surface.run({"op": "stats", "template": 2, "text": "3.0", "of": "size"})
    assert (stats["n"], stats["min"], stats["max"], stats["sum"]) == (6, 1000, 1005, 6015)
    assert surface.run({"op": "stats", "template": 3, "text": "root", "of": "port"})["max"] == 4000


_Tool = PlanTool


def test_call_without_condition_reads_the_best_kind(surface):
    kinds = grounding.Kinds(surface).kinds(["running", "task"], [])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": "q"}], "How many running tasks?", None, [],
                     kinds=kinds)
    call, result = plan._run_grounded({"op": "count"})
    assert call["template"] == 1 and result["count"] == 8
    msgs = plan.finish('count"}')
    assert "The query read lines of kind T1 (Running task <task>" in msgs[-1]["content"]
    assert json.loads(msgs[-2]["content"])["template"] == 1


def test_an_id_after_a_parameter_name_is_that_parameter(surface):
    """"in stage 3.0": the condition stage = 3.0, not the text "3.0" (which "task 3.0" holds too)."""
    from gateway.serve.answer import evidence
    q = "How many running tasks in stage 3.0?"
    kinds = grounding.Kinds(surface).kinds(["running", "tasks", "stage"], ["3.0"])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds,
                     evidence=evidence.find(surface, q))
    call, result = plan._run_grounded({"op": "count", "template": 1, "text": "3.0"})
    assert call["where"] == {"stage": "3.0"} and "3.0" not in call.get("text", "") and result["count"] == 6
    call, result = plan._run_grounded({"op": "count", "text": "3.0"})     # no kind: the listed kinds' names,
    assert call["where"] == {"stage": "3.0"} and result["count"] == 6      # not "task 3.0 in stage 4.0"; then
    assert call["template"] == 1               # the first listed kind that has them: running, not finished
    q = "How long did the task in stage 4 take?"                         # a short number after its name too
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds,
                     evidence=evidence.find(surface, q))
    assert plan._bound({"op": "count", "template": 1})["where"] == {"stage": "4"}


def test_the_answer_reads_a_few_counted_lines_and_not_the_kinds_listed(surface):
    """A count of a few lines shows them ("how many bytes did task 4.0 send": the line says); the kinds
    listed with the call, their example values included, stay out of the answer's prompt."""
    q = "How many bytes did the failed password of admin send?"
    kinds = grounding.Kinds(surface).kinds(["failed", "password"], [])
    listed = q + "\n\n" + grounding.render(kinds) + "\nWrite the query for this question."
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": listed}], q, None, [], kinds=kinds)
    msgs = plan.finish('count", "text": "admin"}')
    assert msgs[-3] == {"role": "user", "content": q}
    assert "They are:" in msgs[-1]["content"] and "Failed password for admin from 10.0.0.7 port 2200" in msgs[-1]["content"]
    msgs = plan.finish('count", "text": "Failed password"}')     # admin, a <word> value, is a condition
    assert plan.call["where"] == {"word": "admin"} and msgs[-1]["content"].count("Failed password for admin") == 1
    q = "How many bytes did the failed passwords send?"
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    msgs = plan.finish('count", "text": "Failed password"}')            # 3 lines: the limit, shown
    assert msgs[-1]["content"].count("Failed password for") == 3
    msgs = plan.finish('count", "text": "Running"}')                    # 8: a count alone
    assert "They are:" not in msgs[-1]["content"]


def test_a_count_gives_the_sum_of_the_parameter_the_question_names(surface):
    from gateway.serve.answer import evidence
    """"How many bytes did stage 3.0 send": the count of lines, and the sum of <size> bytes over them
    (the parameter named by the word after it); a parameter bound to a value is not the one asked."""
    q = "How many bytes did the tasks of stage 3.0 send?"
    kinds = grounding.Kinds(surface).kinds(["bytes", "tasks", "stage"], ["3.0"])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    msgs = plan.finish('count", "template": 2, "where": {"stage": "3.0"}}')
    name = next(p for p in kinds[0].params if "bytes" in kinds[0].template.split(f"<{p}>", 1)[-1][:7])
    assert f"Their {name} values add up to {sum(1000 + i for i in range(6))} bytes in all" in msgs[-1]["content"]
    assert "Finished task" not in msgs[-1]["content"].split("in all", 1)[1]   # the summed lines not quoted
    assert plan.check("The tasks of stage 3.0 sent 6015 bytes.").text.startswith("The tasks")   # the total passes
    assert grounding.named_param(kinds[0], "How many tasks ran?") is None
    q = "Which port did root fail from?"               # no unit after <port>: an id, its values first, the sum last
    kinds = grounding.Kinds(surface).kinds(["port", "failed"], ["root"])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds,
                     evidence=evidence.find(surface, q))
    msgs = plan.finish('count", "text": "root"}')
    assert "Their port values: 22, 4000 (minimum 22, maximum 4000; over the 2 lines they sum to 4022)." \
        in msgs[-1]["content"]
    assert plan.check("Root failed from port 4000.").text.startswith("Root")


def test_word_values_with_numbers_among_them_are_listed_not_summed(tmp_path):
    """Users named 0 and 1234 among admin and ubnt: a count's user values are listed; the numbers among
    them are no quantity (their "sum" was read out as an answer)."""
    m = "Failed password for invalid user <*> from <IP> port <NUM> ssh2"
    rows = [f"Failed password for invalid user {u} from 10.0.0.7 port {4000 + i} ssh2"
            for i, u in enumerate(("0", "admin", "1234", "ubnt"))]
    store, s = _made(tmp_path, rows, [LineFields(template=m, params=named_params(m, t)) for t in rows])
    q = "Which user failed from 10.0.0.7?"
    kinds = grounding.Kinds(s).kinds(["user", "failed"], ["10.0.0.7"])
    assert "user" in kinds[0].params
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    said = plan.finish('count", "text": "10.0.0.7"}')[-1]["content"]
    assert "Their user values: 0, admin, 1234, ubnt." in said and "sum" not in said
    assert plan.check("The users were 0, admin, 1234 and ubnt.").text.startswith("The users")
    s.close()
    store.close()


def test_stats_of_a_value_the_question_writes_read_the_other_quantity(tmp_path):
    """"How high did the pressure go in the "below limit 0.5 MPa" lines": <limit> is 0.5 on every line,
    a number the question writes (a condition); the lines' other number, the pressure, is read."""
    m = "Air pressure <NUM> MPa below limit <NUM> MPa"
    rows = [f"Air pressure 0.{40 + i} MPa below limit 0.5 MPa" for i in range(5)]
    store, s = _made(tmp_path, rows, [LineFields(template=m, params=named_params(m, t)) for t in rows])
    q = 'How high did it go in the "below limit 0.5 MPa" lines?'
    kinds = grounding.Kinds(s).kinds(["below", "limit"], ["0.5"])
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    name = kinds[0].params[1]
    plan.finish(f'stats", "of": "{name}", "text": "below limit 0.5 MPa"}}')
    assert plan.call["of"] == kinds[0].params[0] and plan.result["max"] == 0.44
    q = "What is the highest limit?"                  # not written by the question: kept
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    plan.finish(f'stats", "of": "{name}"}}')
    assert plan.call["of"] == name and plan.result["max"] == 0.5
    s.close()
    store.close()


def test_words_the_model_added_that_match_nothing_are_dropped(surface):
    """The model's text holds a word the question does not ("svc_backup"): nothing matches with it, the
    question's own words do; a text wholly invented is dropped only when another condition remains."""
    q = "How many failed password lines were there?"
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [])
    plan.finish('count", "text": "svc_backup Failed password"}')
    assert plan.call["text"] == "Failed password" and plan.result["count"] == 3
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [])
    plan.finish('count", "text": "svc_backup"}')
    assert plan.result.get("count", 0) == 0 or plan.call.get("text")     # never every line for an invented word


def test_a_lookup_reads_the_kind_that_has_the_value_asked(tmp_path):
    """"What port did user bob come from?": the model's kind (Invalid user <user> from <address>) has no
    port; the listed kind that has one is read, and its port said first. A count the model wrote for it
    reads that kind too."""
    inv, failed = "Invalid user <*> from <IP>", "Failed password for invalid user <*> from <IP> port <NUM> ssh2"
    rows = [("Invalid user bob from 10.0.0.9", 1, inv), ("Failed password for invalid user bob from 10.0.0.9 port 4242 ssh2", 2, failed),
            ("Invalid user amy from 10.0.0.8", 1, inv), ("Failed password for invalid user amy from 10.0.0.8 port 5151 ssh2", 2, failed)]
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, (t, _, _) in enumerate(rows)]
    store = Store(tmp_path / "l.db")
    store.append(recs, [tid for _, tid, _ in rows], [LineFields(template=m, params=named_params(m, t)) for t, _, m in rows])
    s = QuerySurface(store.path)
    q = "What port did the user bob come from?"
    kinds = grounding.Kinds(s).kinds(["user"], ["bob"])
    assert {k.id for k in kinds} == {1, 2}
    from gateway.serve.answer import evidence
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds,
                     evidence=evidence.find(s, q))          # "bob" a value the store holds: user is given
    msgs = plan.finish('lines", "template": 1, "text": "bob"}')
    assert plan.call["template"] == 2 and "port is 4242." in msgs[-1]["content"]
    plan.question = "What is the port number of the invalid user bob?"      # a count the model wrote: the same
    plan.finish('count", "template": 1, "text": "bob"}')
    assert plan.call["template"] == 2 and "4242" in plan.rendered
    plan.question = "Where did the user bob come from?"                     # no parameter asked: the kind stays
    plan.evidence = evidence.find(s, plan.question)
    plan.finish('lines", "template": 1, "text": "bob"}')
    assert plan.call["template"] == 1
    s.close()
    store.close()


def test_stats_of_a_word_without_a_number_reads_the_asked_parameter(surface):
    q = "What is the biggest port for root from 10.0.0.7?"
    kinds = grounding.Kinds(surface).kinds(["port", "root"], ["10.0.0.7"])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    plan.finish('stats", "text": "root 10.0.0.7", "of": "root"}')
    assert plan.call["of"] == "port" and plan.result["max"] == 4000


def test_stats_read_the_parameter_the_question_names_not_the_models(tmp_path):
    """"the values after "retries"": the kind's <retries>, not the <number> the model wrote as `of`
    (a parameter the question does not name); a word after a name is no value given for it."""
    tmpl = "PAM service(sshd) ignoring max retries; <NUM> > <NUM>"
    other = "Connection closed by <IP> [preauth]"                        # a second kind: words tell kinds apart
    rows = [(f"PAM service(sshd) ignoring max retries; {n} > 3", 1, tmpl) for n in (6, 5, 6)]
    rows.append(("Connection closed by 10.0.0.1 [preauth]", 2, other))
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, (t, _, _) in enumerate(rows)]
    store = Store(tmp_path / "p.db")
    store.append(recs, [i for _, i, _ in rows], [LineFields(template=m, params=named_params(m, t)) for t, _, m in rows])
    s = QuerySurface(store.path)
    from gateway.serve.answer import evidence
    q = 'What is the total of the values after "retries" over all "ignoring max retries" lines?'
    kinds = grounding.Kinds(s).kinds(["retries", "ignoring"], [])
    assert kinds and "retries" in kinds[0].params and "number" in kinds[0].params
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds, evidence=evidence.find(s, q))
    plan.finish('stats", "of": "number", "text": "ignoring max retries"}')
    assert plan.call["of"] == "retries" and plan.result["sum"] == 17
    plan.question = 'What is the total of the number over all "ignoring max retries" lines?'   # named: kept
    plan.finish('stats", "of": "number", "text": "ignoring max retries"}')
    assert plan.call["of"] == "number" and plan.result["sum"] == 9
    s.close()
    store.close()


def test_a_listing_for_one_end_reads_that_end(surface):
    """"the last port root failed from" written as a listing (newest first, misread as the first) is read
    as first_last's last line, its port said; a window ("in the last 10 minutes") is no end."""
    from gateway.serve.answer import evidence
    q = "What was the last port that root failed from?"
    kinds = grounding.Kinds(surface).kinds(["port", "failed"], ["root"])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds,
                     evidence=evidence.find(surface, q))
    msgs = plan.finish('lines", "text": "root"}')
    assert plan.call["op"] == "first_last" and plan.result["last"]["text"].endswith("port 4000 ssh2")
    assert "The last of them" in msgs[-1]["content"] and "port is 4000" in msgs[-1]["content"]
    plan.question = "Which lines failed in the last 10 minutes?"
    plan.finish('lines", "text": "Failed"}')
    assert plan.call["op"] == "lines"
    q = "What was the latest value root failed from?"       # stats for one end: that end's value of its `of`
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    msgs = plan.finish('stats", "of": "port", "text": "root"}')
    assert plan.call == {"op": "first_last", "text": "root"} and "port is 4000" in msgs[-1]["content"]
    plan.question = "What's the latest port count we got for root?"          # a count for one end, the same
    plan.finish('count", "text": "root"}')
    assert plan.call["op"] == "first_last"
    plan.question = "How many root lines in the final 10 minutes, back from the latest line?"   # a window
    plan.finish('count", "text": "root"}')
    assert plan.call["op"] == "count"


def test_a_count_of_every_line_says_how_they_split(tmp_path):
    """A count with no condition (the 1.5B's call for "哪个组件输出的日志最多") says the top components and
    hosts with it, and an answer naming the top one's count passes the check; a filtered count does not."""
    comps = ["ftpd"] * 5 + ["sshd"] * 3 + ["su"]
    store, s = _made(tmp_path, [f"{c} line {i}" for i, c in enumerate(comps)],
                     [LineFields(component=c, template="<*> line <NUM>") for c in comps])
    q = "哪个组件输出的日志行数最多？"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    msgs = plan.finish('count"}')
    assert "The most lines by component ftpd 5, sshd 3, su 1." in msgs[-1]["content"] and "by host" not in msgs[-1]["content"]
    assert plan.check("ftpd 输出的日志最多，有 5 条。").text.startswith("ftpd")
    msgs = plan.finish('count", "component": "sshd"}')
    assert "The most lines" not in msgs[-1]["content"] and plan.result["count"] == 3
    s.close()
    store.close()


def test_a_filtered_count_says_where_most_of_its_lines_are(tmp_path):
    """"How many jams, and which machine had the most": a filtered count says the top host (and
    component) of its lines when they have more than one; a field the call names is not split."""
    hosts = ["line1"] * 3 + ["line3"] * 3
    store, s = _made(tmp_path, [f"jam detected at photo eye {i}" for i in range(5)] + ["ok"],
                     [LineFields(component="conveyor", host=h) for h in hosts], hosts)
    q = "How many jam lines did we get, and which machine had the most?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    said = plan.finish('count", "text": "jam detected"}')[-1]["content"]
    assert plan.result["count"] == 5 and "Most of them by host line1 (3 of them)." in said
    said = plan.finish('count", "text": "jam detected", "host": "line3"}')[-1]["content"]
    assert "Most of them" not in said
    s.close()
    store.close()


def test_a_text_count_over_several_kinds_says_the_kind_most_of_them_are(tmp_path):
    """A word filter ("rdd_2") holds lines of several kinds: the count says which kind most of them
    are; an answer giving that kind's count alone is replaced by the count with it; a call naming a kind
    is not split."""
    from gateway.serve.answer.check import check
    found, missing = "Found block <*> locally", "Partition <*> not found, computing it"
    rows = [(f"Found block rdd_2_{i} locally", 1, found) for i in range(5)] + \
        [(f"Partition rdd_2_{i} not found, computing it", 2, missing) for i in range(2)] + \
        [("Starting executor ID 1", 3, "Starting executor ID <NUM>")]
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, (t, _, _) in enumerate(rows)]
    store = Store(tmp_path / "k.db")
    store.append(recs, [tid for _, tid, _ in rows], [LineFields(template=tm, params=named_params(tm, t)) for t, _, tm in rows])
    s = QuerySurface(store.path)
    q = "rdd_2 blocks found locally - how many times?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    said = plan.finish('count", "text": "rdd_2"}')[-1]["content"]
    assert plan.result["count"] == 7 and f'By kind of message: "{found}" (5), "{missing}" (2).' in said
    c = check("Found locally 5 times.", q, plan.result, plan.rendered, None)
    assert c.action == "replaced" and "7 lines match" in c.text and f'kind of message "{found}" (5)' in c.text
    said = plan.finish('count", "text": "rdd_2", "template": 1}')[-1]["content"]
    assert "kind of message" not in said
    s.close()
    store.close()


def test_a_level_word_given_to_the_component_too_is_the_level(tmp_path):
    """"How many Warning entries": the model wrote Warning as the level and as a component (one line's
    header parsed that way): the component condition goes, the level stays."""
    comps = ["CBS"] * 4 + ["CSI"] * 2 + ["Warning"]
    store, s = _made(tmp_path, [f"{c} thing {i}" for i, c in enumerate(comps)],
                     [LineFields(component=c, level="warning") for c in comps], severity=4)
    q = "How many Warning entries did we get?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('count", "component": "Warning", "level": "warning"}')
    assert "component" not in plan.call and plan.result["count"] == 7
    s.close()
    store.close()


def test_a_top_value_that_is_empty_is_no_value(tmp_path):
    """Lines without a host are not a host called "": the top host is the first one written."""
    hosts = ["", "", "", "press-1", "press-1", "press-2"]
    store, s = _made(tmp_path, [f"E-STOP pressed {i}" for i in range(6)], [LineFields(host=h) for h in hosts], hosts)
    q = "Which host pressed E-STOP most?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('top_k", "by": "host", "text": "E-STOP"}')
    assert [t["value"] for t in plan.result["top"]][:1] == ["press-1"]
    s.close()
    store.close()


def test_a_parameter_is_named_outside_the_lines_text_or_by_its_unit():
    """"average percentage for 'returning to charger'": "charger" picks the lines, the percentage is
    <battery>%; "attempt" inside an id names no parameter; a name only the lines' text writes still
    counts when nothing else names one."""
    kind = grounding.Kind(1, "battery <battery>% - returning to charger <charger>", 9, ["battery", "charger"])
    q = "what's the average percentage for \"returning to charger\" on machine pack-2?"
    assert grounding.named_param(kind, q, (), ["returning to charger"]) == "battery"
    assert grounding.named_param(kind, "充电时 \"returning to charger\" 的百分比平均多少", (), ["returning to charger"]) == "battery"
    assert grounding.named_param(kind, "which charger did they return to?", (), ["returning to"]) == "charger"
    assert grounding.named_param(kind, "the largest value in \"returning to charger\" lines") == "charger"
    done = grounding.Kind(3, "Finished task <task> in stage <stage> (TID <tid>)", 9, ["task", "stage", "tid"])
    q = "What running task min TID value in stage 25.0?"        # the call's text "task" picks the lines
    assert grounding.named_param(done, q, ["stage"], (), "task") == "tid"
    assert grounding.named_param(done, q, ["stage"]) == "task"
    attempt = grounding.Kind(2, "Progress of TaskAttempt <attempt> is : <progress>", 9, ["attempt", "progress"])
    assert grounding.named_param(attempt, "How many lines mention attempt_1445_0020_m_000001_0?") is None
    modbus = grounding.Kind(4, "<address> unit <unit> read holding registers timed out after <duration> ms", 9,
                            ["address", "unit", "duration"], {"address": "10.0.0.1:502", "unit": "208", "duration": "96"})
    phrase = "read holding registers timed out after"      # its "read" is no unit of <unit>: it picks the lines
    assert grounding.named_param(modbus, f"所有“{phrase}”记录的耗时（毫秒）合计是多少？", (), [phrase]) == "duration"
    # "unit" after <address> labels <unit>: no unit of <address> ("which host ... with unit 103")
    assert grounding.named_param(modbus, f'Which host reported the "{phrase}" entry with unit 103?', ["unit"], [phrase]) is None
    health = grounding.Kind(5, "Health check failed: timeout after <duration>", 9, ["duration"], {"duration": "56s"})
    assert grounding.named_param(health, "耗时（毫秒）的最低值是多少？") is None      # 秒 inside 毫秒 names no seconds
    assert grounding.named_param(health, "耗时（秒）的最低值是多少？") == "duration"


def test_stats_say_numbers_as_written_and_a_unit_word_gives_way_to_the_named_parameter(tmp_path):
    """"How many kb is broadcast_17 free?": the model's `of` "KB" is the unit beside two numbers, not a
    parameter: the named <free> is read. An extreme is said as its line writes it ("448.6", "993.0")."""
    tmpl = "Block <*> stored as values in memory (estimated size <NUM> KB, free <NUM> KB)"
    rows = [f"Block broadcast_17 stored as values in memory (estimated size {a} KB, free {b} KB)"
            for a, b in (("15.8", "448.6"), ("16.0", "432.0"))]
    store, s = _made(tmp_path, rows, [LineFields(template=tmpl, params=named_params(tmpl, t)) for t in rows])
    kinds = grounding.Kinds(s).kinds(["free"], ["broadcast_17"])
    assert kinds and "free" in kinds[0].params
    q = "How many kb is broadcast_17 free?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    plan.finish('stats", "text": "broadcast_17 free", "of": "KB"}')
    assert plan.call["of"] == "free" and plan.result["max"] == 448.6
    assert "maximum (the largest, highest) 448.6, minimum (the smallest, lowest) 432.0," in plan.rendered
    s.close()
    store.close()


def test_a_count_s_one_value_is_said_as_written(surface):
    """"What stage was task 5.0 finished in?": the one stage value is 3.0, as the line writes it (a 1.5B
    model copies the figure it is given: "stage 3" is not the line's)."""
    kinds = grounding.Kinds(surface).kinds(["finished", "task", "stage"], ["5.0"])
    q = "What stage was task 5.0 finished in?"
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    plan.finish('count", "template": 2, "where": {"task": "5.0"}}')
    assert plan.result["count"] == 1 and "The one stage value among them: 3.0." in plan.rendered


def test_a_number_is_not_a_piece_of_an_address(surface):
    """The full-text index splits "10.0.0.7" at its dots; a text filter "7" or "10" is not in it."""
    assert surface.run({"op": "count", "text": "7"})["count"] == 0
    assert surface.run({"op": "count", "text": "10"})["count"] == 2          # TID 10 twice, not the address
    assert surface.run({"op": "count", "text": "10.0.0.7"})["count"] == 3
    assert surface.run({"op": "count", "text": "port 22"})["count"] == 1


def test_of_two_parameters_named_the_rarer_name(tmp_path):
    """"running task min TID": both <task> and <tid> are named; "task" is written by most kinds of the log,
    "TID" by one: the question asks for <tid>."""
    rows = [(f"Running task {i}.0 in stage 3.0 (TID {10 + i})", 1, RUN) for i in range(4)] + \
        [(f"Got assigned task {i}", 2, "Got assigned task <NUM>") for i in range(4)] + \
        [(f"Killed task {i} by driver", 3, "Killed task <NUM> by driver") for i in range(4)]
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, (t, _, _) in enumerate(rows)]
    store = Store(tmp_path / "three.db")
    store.append(recs, [tid for _, tid, _ in rows], [LineFields(template=m, params=named_params(m, t)) for t, _, m in rows])
    s = QuerySurface(store.path)
    kinds = grounding.Kinds(s)
    run = next(k for k in kinds.kinds(["running", "tid"], []) if "tid" in k.params)
    q = "What running task min TID value in stage 3.0?"
    assert grounding.named_param(run, q, ["stage"]) == "task"          # without the store: the kind's order
    assert grounding.named_param(run, q, ["stage"], spread=kinds.spread) == "tid"
    assert kinds.spread("task") == 3 and kinds.spread("TID") == 1
    s.close()
    store.close()


def test_a_unit_named_beside_a_name_without_one_asks_for_the_quantity():
    """"How long did it take to read the broadcast variable in ms?": "variable" is the line's own word
    before <variable>; "ms" is written after <took>: the quantity asked. "port" after <address> is the
    next parameter's name, no unit: "what port" stays <port>."""
    read = grounding.Kind(20, "Reading broadcast variable <variable> took <took> ms", 37, ["variable", "took"],
                          {"variable": "40", "took": "10"})
    assert grounding.named_param(read, "How long did it take to read the broadcast variable in ms?") == "took"
    assert grounding.named_param(read, "Which broadcast variable was read?") == "variable"
    fail = grounding.Kind(3, "Failed password for <user> from <address> port <port> ssh2", 9, ["user", "address", "port"],
                          {"user": "root", "address": "10.0.0.7", "port": "22"})
    assert grounding.named_param(fail, "What port did root fail from?", ["user"]) == "port"
    assert not grounding.a_quantity(fail, "address") and grounding.a_quantity(read, "took")


def test_a_kind_with_ids_shows_each_id_as_one_parameter(tmp_path):
    """The digit runs of an id are masked apart by the grouping; the kind is shown with the whole id as
    one parameter, its long example value marked cut (not a value to copy)."""
    tmpl = "Assigned container container_<NUM>_<NUM>_<NUM>_<NUM> to attempt_<NUM>_<NUM>_m_<NUM>_<NUM>"
    texts = [f"Assigned container container_1445144423722_0020_01_{n:06d} to attempt_1445144423722_0020_m_{n:06d}_0"
             for n in range(2, 6)]
    store, s = _made(tmp_path, texts, [LineFields(template=tmpl, params=named_params(tmpl, t)) for t in texts])
    k = grounding.Kinds(s).kinds([], ["container_1445144423722_0020_01_000003"])[0]
    assert k.template == "Assigned container <container> to <attempt>" and k.params == ["container", "attempt"]
    assert k.examples["container"] == "container_1445144423722_…"
    s.close()
    store.close()


def test_the_glosses_of_one_chinese_term_are_one_word(tmp_path):
    """成功 glosses to success, succeeded, successful: one word of the question. Scored apart, the one kind
    writing the rare "successful" ("Auth successful") outranked "Task <*> succeeded" for 任务成功."""
    from tests.helpers import kinded_store
    tmpls = ["Auth successful for <*>", "Task <*> succeeded", "Stage <*> succeeded", "Job <*> succeeded",
             "Task <*> started", "Task <*> running", "Task <*> queued", "Task <*> killed", "Disk full", "Fan slow",
             "Belt slow"]
    store, s = kinded_store(tmp_path, [(t.replace("<*>", "7"), i + 1, t) for i, t in enumerate(tmpls)])
    words, alike = ["success", "succeeded", "successful", "task"], [("success", "succeeded", "successful"), ("task", "job")]
    assert grounding.Kinds(s).kinds(words, [])[0].id == 1                # apart: the rare gloss wins
    assert grounding.Kinds(s).kinds(words, [], alike)[0].id == 2          # one word: the kind saying both
    s.close()
    store.close()


def test_a_kind_s_words_are_not_the_parts_of_a_name_joined_by_underscores(tmp_path):
    """"How many log entries did host X produce?": "entries" is "entry", but the "entry" of
    "ext4_find_entry" is a part of a function's name, not a word the kind's lines say."""
    from tests.helpers import kinded_store
    tmpls = ["EXT4-fs error (device <*>): ext4_find_entry:<*>: inode reading directory", "Started session <*>"]
    store, s = kinded_store(tmp_path, [("EXT4-fs error (device sda1): ext4_find_entry:1455: inode reading directory", 1,
                                        tmpls[0]), ("Started session 4", 2, tmpls[1])])
    assert grounding.Kinds(s).kinds(["entries", "log"], []) == []
    kind = grounding.Kinds(s).kinds(["error", "directory"], [])[0]
    assert "entry" not in kind.words() and {"error", "directory", "inode"} <= kind.words()
    s.close()
    store.close()
