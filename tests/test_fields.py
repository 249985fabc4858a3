"""Template parameters of a line and their numeric values; triage hands them to the store."""

from __future__ import annotations

import pytest

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import extract_params, fill, named_params, named_template, number_of
from gateway.pipeline.triage import Triage


@pytest.mark.parametrize("text, value", [
    ("81.5", 81.5), ("92.4C", 92.4), ("-3", -3.0), ("250ms", 250.0), ("50%", 50.0), ("3200,", 3200.0),
    ("(12)", 12.0), ("1e3", 1000.0), ("21.5°C", 21.5),
    ("10.0.0.1", None), ("1.2.3", None), ("0x1f", None), ("blk_42", None), ("12:00", None), ("abc", None), ("", None),
])
def test_number_of(text, value):
    assert number_of(text) == value


def test_extract_params_aligns_tokens():
    assert extract_params("heater zone <NUM> at <NUM>C", "heater zone 2 at 92.4C") == [("2", 2.0), ("92.4", 92.4)]
    assert extract_params("user <*> from rhost=<IP>", "user bob from rhost=10.1.2.3") == [
        ("bob", None), ("10.1.2.3", None)]
    assert extract_params("a <*> b", "a x y b") == []                     # lengths differ: nothing
    assert extract_params("no params here", "no params here") == []


def test_triage_fields_on_raw_lines():
    t = Triage(None)
    lines = ["2024-05-01 10:00:00,001 WARN [plc] line3.heater: zone 2 temperature 81.5C",
             "2024-05-01 10:00:05,001 WARN [plc] line3.heater: zone 2 temperature 92.4C"]
    out = t.classify([LogRecord(1.7e9, "s", "", 6, x) for x in lines])
    assert out[0].template_id == out[1].template_id
    f = out[1].fields
    assert f.component == "line3.heater" and f.level == "warn" and f.time_text == "2024-05-01 10:00:05,001"
    assert f.template == "zone <NUM> temperature <*>"
    assert f.params == [("2", 2.0, "zone"), ("92.4C", 92.4, "temperature")]


def test_triage_without_headers_mines_the_whole_text():
    t = Triage(None, find_headers=False)
    c = t.classify([LogRecord(0, "s", "", 6, "2024-05-01 10:00:00 INFO pump 3 started")])[0]
    assert c.fields.time is None and c.fields.component is None
    assert c.template.endswith("INFO pump <NUM> started")


def test_parameters_are_named_by_the_template_words_and_typed_by_value():
    from gateway.pipeline.fields import named_params, param_names
    assert param_names("Received block <BLK> of size <NUM> from /<IP>",
                       "Received block blk_12 of size 67108864 from /10.1.2.3") == [
        ("block", "id"), ("size", "number"), ("address", "address")]
    assert param_names("Failed password for invalid user <*> from <IP> port <NUM> ssh2",
                       "Failed password for invalid user admin from 1.2.3.4 port 22 ssh2") == [
        ("user", "word"), ("address", "address"), ("port", "number")]
    assert param_names("logname= uid=<NUM> euid=<NUM> rhost=<IP>", "logname= uid=0 euid=0 rhost=1.2.3.4") == [
        ("uid", "number"), ("euid", "number"), ("rhost", "address")]
    # after a preposition the value's type names it, not the word before the preposition
    assert param_names("Failed password for root from <IP> port <NUM> ssh2",
                       "Failed password for root from 1.2.3.4 port 22 ssh2") == [("address", "address"), ("port", "number")]
    assert param_names("Served block <*> to <*>", "Served block blk_1 to /10.0.0.1")[1] == ("address", "address")
    # a number with its unit, in the token or the next one, keeps the unit as its type
    assert param_names("stored (estimated size <NUM> KB, free <*>)", "stored (estimated size 16.0 KB, free 2.1MB)") == [
        ("size", "size"), ("free", "size")]
    assert param_names("took <NUM> ms to read <*>", "took 35 ms to read /var/x")[0] == ("took", "duration")
    assert param_names("took <NUM> ms to read <*>", "took 35 ms to read /var/x")[1] == ("read", "path")
    # the same name twice: numbered; a Chinese word names its number
    assert [n for n, _ in param_names("<*> to <*>", "a1 to b2")] == ["id", "id_2"]
    assert param_names("加热区<NUM> 温度 <NUM> ℃", "加热区2 温度 81.6 ℃")[0][0] == "加热区"
    assert named_params("port <NUM>", "port 22") == [("22", 22.0, "port")]


@pytest.mark.parametrize("template, message, want", [
    # an id's digit runs, masked apart, are one value: the whole id, named by its own prefix
    ("Assigned container container_<NUM>_<NUM>_<NUM>_<NUM> to attempt_<NUM>_<NUM>_m_<NUM>_<NUM>",
     "Assigned container container_1445_0020_01_000009 to attempt_1445_0020_m_000007_0",
     [("container_1445_0020_01_000009", None, "container"), ("attempt_1445_0020_m_000007_0", None, "attempt")]),
    ("TaskAttempt: [attempt_<NUM>_<NUM>_m_<NUM>_<NUM>] on NM: <*>", "TaskAttempt: [attempt_1_2_m_3_4] on NM: n41",
     [("attempt_1_2_m_3_4", None, "attempt"), ("n41", None, "nm")]),     # the brackets are not the id's
    ("Found block rdd_<NUM>_<NUM> locally", "Found block rdd_2_0 locally", [("rdd_2_0", None, "rdd")]),
    # a number with its unit, key=value, a range and a bare number keep their parts
    ("took <NUM>ms", "took 250ms", [("250", 250.0, "took")]),
    ("from rhost=<IP>", "from rhost=10.1.2.3", [("10.1.2.3", None, "rhost")]),
    ("range <NUM>-<NUM>", "range 10-20", [("10", 10.0, "range"), ("20", 20.0, "number")]),
])
def test_an_ids_masked_digits_are_one_value(template, message, want):
    assert named_params(template, message) == want


def test_a_template_written_with_names_and_filled_with_values():
    t = "TaskAttempt: [attempt_<NUM>_<NUM>_m_<NUM>] using [container_<NUM>_<NUM> on NM: <*> after <NUM>ms"
    assert named_template(t, ["attempt", "container", "nm", "took"]) == \
        "TaskAttempt: [<attempt>] using [<container> on NM: <nm> after <took>ms"
    assert fill("[attempt_<NUM>_<NUM>_m_<NUM>]", ["attempt_1_2_m_3"]) == "[attempt_1_2_m_3]"
    assert fill("<NUM>ms", ["250"]) == "250ms" and fill("<*>", ["n41"]) == "n41"
    assert fill("<NUM>-<NUM>", ["10", "20"]) == "10-20"


def test_a_where_on_a_whole_id_reads_its_lines(tmp_path):
    """Triage, the store and a call's `where`: the id the question writes is the value stored."""
    from gateway.pipeline.query import QuerySurface
    from gateway.pipeline.store import Store
    t = Triage(None)
    lines = [f"Assigned container container_1445_0020_01_{n:06d} to attempt_1445_0020_m_{n:06d}_0" for n in range(2, 9)]
    out = t.classify([LogRecord(1.7e9 + i, "s", "", 6, x) for i, x in enumerate(lines)])
    store = Store(tmp_path / "s.db")
    store.append([LogRecord(1.7e9 + i, "s", "h", 6, x) for i, x in enumerate(lines)], [o.template_id for o in out],
                 [o.fields for o in out])
    s = QuerySurface(store.path)
    got = s.run({"op": "lines", "where": {"container": "container_1445_0020_01_000005"}})
    assert got["count"] == 1 and "attempt_1445_0020_m_000005_0" in got["lines"][0]["text"]
    assert s.run({"op": "count", "where": {"attempt": "attempt_1445_0020_m_000009_0"}}).get("count", 0) == 0
    s.close()
    store.close()
