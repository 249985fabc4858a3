"""What a query's result adds to the answer's prompt (gateway/serve/answer/detail.py): a count's total of
the parameter the question names and the lines of its extremes, a partial listing's extremes over every
matched line and the lines that hold them."""

from __future__ import annotations

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import LineFields, named_params
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store
from gateway.serve.answer import grounding
from gateway.serve.answer.plan import QueryPlan
from tests.helpers import PlanTool as _Tool
from tests.helpers import kinded_store as _kinded
from tests.helpers import made_store as _made

FAIL = "Failed password for <*> from <IP> port <NUM> ssh2"


def test_a_counts_quantity_shows_the_lines_of_its_extremes(tmp_path):
    """"Which partition of rdd_2 has the most free?" counted: the free values add up, and the lines of the
    minimum and maximum say which block each is."""
    tmpl = "Block <*> stored as values in memory (estimated size <NUM> KB, free <NUM> KB)"
    rows = [f"Block rdd_2_{i} stored as values in memory (estimated size 1.0 KB, free {b} KB)"
            for i, b in enumerate(("403.0", "403.8", "403.2"))]
    store, s = _made(tmp_path, rows, [LineFields(template=tmpl, params=named_params(tmpl, t)) for t in rows])
    kinds = grounding.Kinds(s).kinds(["free", "partition"], ["rdd_2"])
    q = "Which partition of rdd_2 has the maximum free?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    plan.finish('count", "text": "rdd_2"}')
    assert "add up to 1210 KB" in plan.rendered
    assert "the minimum (403) is on the line with " in plan.rendered and "rdd_2_0" in plan.rendered
    assert "the maximum (403.8) is on the line with " in plan.rendered and "rdd_2_1" in plan.rendered
    s.close()
    store.close()


def test_a_number_named_by_the_words_before_it_shows_its_extremes_lines(tmp_path):
    """"Which partition of rdd_4 has min memory estimated?": no parameter is named by its name or unit, but
    "estimated" is written right before <size>; the unit is a parameter of its own (B or KB), so the size
    is listed as values, and the lines of its minimum and maximum still say which block each is."""
    tmpl = "Block <*> stored as bytes in memory (estimated size <NUM> <*>, free <NUM> KB)"
    rows = [f"Block rdd_4_{i} stored as bytes in memory (estimated size {b} B, free 80{i}.0 KB)"
            for i, b in enumerate(("913.0", "559.0", "935.0"))]
    other = "Partition <*> not found, computing it"
    rows, tmpls = [*rows, "Partition rdd_4_0 not found, computing it"], [tmpl] * 3 + [other]
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, t in enumerate(rows)]
    store = Store(tmp_path / "rdd.db")
    store.append(recs, [1, 1, 1, 2], [LineFields(template=m, params=named_params(m, t)) for t, m in zip(rows, tmpls)])
    s = QuerySurface(store.path)
    kinds = [k for k in grounding.Kinds(s).kinds(["memory", "estimated"], ["rdd_4"]) if "size" in k.params]
    q = "What partition of rdd_4 has min memory estimated?"
    assert grounding.named_param(kinds[0], q) == "size"
    assert grounding.named_param(kinds[0], "Which rdd_4 size was written?") == "size"    # by its name first
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=kinds)   # a word, no number
    plan.finish(f'count", "template": {kinds[0].id}, "text": "rdd_4"}}')
    assert "the minimum (559) is on the line with block rdd_4_1" in plan.rendered
    assert "the maximum (935) is on the line with block rdd_4_2" in plan.rendered
    assert plan.check("The partition with the least is rdd_4_1.").action == "kept"
    s.close()
    store.close()


def test_a_partial_listing_gives_its_parameter_s_ends_over_every_line(tmp_path):
    """A listing of the newest lines read for their port (captured) says the smallest and largest port
    over every matched line, and the check corrects an answer's "maximum" taken from the shown lines."""
    texts = [f"Failed password for root from 10.0.0.7 port {p} ssh2" for p in [60948, *range(30000, 30020)]]
    fields = [LineFields(template=FAIL, params=named_params(FAIL, t)) for t in texts]
    store, surface = _made(tmp_path, texts, fields)
    q = "What is the maximum port for root from 10.0.0.7?"
    kinds = grounding.Kinds(surface).kinds(["port", "failed"], ["root", "10.0.0.7"])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    prompt = plan.finish('lines", "text": "10.0.0.7 root"}')[-1]["content"]
    shown = [x for x in plan.result["lines"] if x.get("captured")]
    assert plan.result["truncated"] and shown and all("60948" not in x["text"] for x in plan.result["lines"])
    assert "Over all 21 matched lines with a port: minimum 30000, maximum 60948." in prompt
    assert plan.check("The maximum port was 30019.").text == "The maximum port was 60948."
    assert plan.check("The maximum port was 60948.").text == "The maximum port was 60948."
    surface.close()
    store.close()


def test_a_count_adds_up_a_parameter_written_before_times(tmp_path):
    """"message repeated <n> times" counts occurrences: a count of such lines says what they add up to,
    each line's value said (two lines of 5 are 10, not "5"); "how many times" still names no parameter."""
    rep, other = "message repeated <*> times: [ Failed password for root]", "Accepted password for <*>"
    rows = [("message repeated 5 times: [ Failed password for root]", 1, rep),
            ("message repeated 5 times: [ Failed password for root]", 1, rep), ("Accepted password for fztu", 2, other)]
    store, surface = _kinded(tmp_path, rows)
    q = "How many repeated failed passwords were folded in all?"
    kinds = grounding.Kinds(surface).kinds(["repeated", "failed", "folded"], [])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    prompt = plan.finish('count", "text": "message repeated"}')[-1]["content"]
    assert "add up to 10 times in all (2 values: 5 times, 5 times;" in prompt
    assert grounding.named_param(kinds[0], "How many times did root fail?") is None
    surface.close()
    store.close()


def test_a_count_adds_up_only_a_parameter_with_numbers(tmp_path):
    """"How many Address change lines ...": <address> is named by the question, but its values
    ("10.190.173.170:9000") are no numbers; the number after the word "Address" in the line ("-41" of
    msra-sa-41) is not its value: no total is said, the lines' addresses are."""
    tmpl = "Address change detected. Old: msra-sa-<*>/<*> New: msra-sa-<*>:<*>"
    rows = [(f"Address change detected. Old: msra-sa-41/10.190.173.170:{p} New: msra-sa-41:{p}", 1, tmpl)
            for p in (9000, 9000, 8030)]
    store, surface = _kinded(tmp_path, rows)
    q = "How many Address change lines for 10.190.173.170?"
    kinds = grounding.Kinds(surface).kinds(["address", "change"], ["10.190.173.170"])
    assert "address" in kinds[0].params
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    prompt = plan.finish('count", "template": 1, "text": "10.190.173.170"}')[-1]["content"]
    assert "3 lines match" in prompt and "values add up" not in prompt and "minimum -41" not in prompt
    assert "param_stats" not in plan.result
    surface.close()
    store.close()


def test_a_partial_listing_names_the_lines_of_its_ends(tmp_path):
    """A listing read for a quantity (took) names the lines of its smallest and largest by their other
    parameter, a bare number too ("the slowest variable"), and does not say the first line's took as if
    it were the answer."""
    took, started = "Reading broadcast variable <*> took <*> ms", "Started reading broadcast variable <*>"
    rows = [(f"Reading broadcast variable {v} took {t} ms", 1, took) for v, t in [(39, 716), *((v, 10 + v) for v in range(20))]]
    rows.append(("Started reading broadcast variable 7", 2, started))
    store, surface = _kinded(tmp_path, rows)
    q = "Which broadcast variable was slowest to read, and how many ms did it take?"
    kinds = grounding.Kinds(surface).kinds(["broadcast", "variable", "took"], [])
    plan = QueryPlan(_Tool(surface), [{"role": "user", "content": q}], q, None, [], kinds=kinds)
    prompt = plan.finish(f'lines", "template": {kinds[0].id}}}')[-1]["content"]
    assert plan.result["truncated"] and all("716" not in x["text"] for x in plan.result["lines"])
    assert "the maximum (716) is on the line with variable 39" in prompt
    assert "took is" not in prompt
    surface.close()
    store.close()


def test_a_text_count_lists_its_kinds_and_a_kind_of_one_line_by_its_line(tmp_path):
    """"Which account logged in with a password?" called as a count over "password": the count lists the
    kinds it counted, the one "Accepted password" line among the failures by its text; an answer naming
    its user without a figure reads that line (the count cited after it), and a count stated wrong is
    still replaced."""
    accepted = "Accepted password for <*> from <IP> port <NUM> ssh2"
    rows = [(f"Failed password for root from 10.0.0.{i} port 22 ssh2", 1, FAIL) for i in range(4)] + \
        [("Accepted password for fztu from 10.0.0.9 port 22 ssh2", 2, accepted),
         ("Received disconnect from 10.0.0.1: 11: Bye Bye", 3, "Received disconnect from <IP>: <NUM>: Bye Bye")]
    store, s = _kinded(tmp_path, rows)
    q = "Which account actually managed to log in with a password?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('count", "text": "password"}')
    assert f'By kind of message: "{FAIL}" (4), the line "Accepted password for fztu from 10.0.0.9' in plan.rendered
    c = plan.check("The account fztu logged in with a password.")
    assert c.action == "cited" and c.text.startswith("The account fztu") and "5 lines match" in c.text
    assert plan.check("fztu logged in from 10.0.0.9.").action == "cited"     # the line's own figures
    c = plan.check("4 accounts logged in.")
    assert c.action == "replaced" and "A kind of one line among them:" in c.text and "for fztu from" in c.text
    plan.finish('count", "text": "password", "template": 1}')      # one kind: nothing to list
    assert "By kind of message" not in plan.rendered
    s.close()
    store.close()


def test_a_listing_of_a_few_lines_shows_them_whole():
    """A long line among a few (a pipeline's bad datanode named at its end) is shown whole; a listing of
    many clips each line to LINE_SHOWN."""
    from gateway.serve.answer.render import LINE_SHOWN, render_result
    tail = "Bad datanode 10.190.173.170:50010"
    text = "2015-10-18 18:05:57,001 WARN [DataStreamer] org.apache.hadoop.hdfs.DFSClient: " + "x" * 200 + " " + tail
    line = {"id": 1, "time_text": "2015-10-18 18:05:57,001", "text": text, "component": "org.apache.hadoop.hdfs.DFSClient"}
    assert tail in render_result({"call": {"op": "lines"}, "count": 1, "lines": [line]})
    many = [{**line, "id": i, "text": text.replace("xxx", f"x{i}y", 1)} for i in range(5)]
    said = render_result({"call": {"op": "lines"}, "count": 5, "lines": many})
    assert tail not in said and all(len(x) < LINE_SHOWN + 80 for x in said.splitlines())


def test_a_filtered_count_says_its_lines_by_the_values_that_name_things(tmp_path):
    """"Which address failed the most?" called as a count over "Failed password": the count says its lines
    by address (the most frequent first, with their counts) and not by port (a number: a measure); an
    answer naming the address reads that (the count cited after it), and a count stated wrong is still
    replaced."""
    ips = ["10.0.0.7"] * 3 + ["10.0.0.2", "10.0.0.3"]
    rows = [(f"Failed password for root from {ip} port {40000 + i} ssh2", 1, FAIL) for i, ip in enumerate(ips)]
    rows.append(("Received disconnect from 10.0.0.1: 11: Bye Bye", 2, "Received disconnect from <IP>: <NUM>: Bye Bye"))
    store, s = _kinded(tmp_path, rows)
    q = "Which address had the most failed passwords?"
    plan = QueryPlan(_Tool(s), [{"role": "user", "content": q}], q, None, [], kinds=[])
    plan.finish('count", "text": "Failed password"}')
    said = plan.rendered.split("Among them ", 1)[-1]
    assert said.startswith("by address (in 5 lines): 10.0.0.7 (3), 10.0.0.2 (1), and 1 other values")
    assert "port" not in said and "10.0.0.1" not in said
    c = plan.check("10.0.0.7 failed the most.")
    assert c.action == "cited" and c.text.startswith("10.0.0.7 failed") and "5 lines match" in c.text
    assert plan.check("9 addresses failed.").action == "replaced"
    c = plan.check("10.0.0.7 failed 3 times.")      # a value's count is no reading: the plain answer says it
    assert c.action == "replaced" and 'address "10.0.0.7" (3)' in c.text
    plan.finish('count", "text": "Failed password", "where": {"address": "10.0.0.7"}}')    # its own condition
    assert "by address" not in plan.rendered and "by word (in 3 lines): root (3)" in plan.rendered
    s.close()
    store.close()
