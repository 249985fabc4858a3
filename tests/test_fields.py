"""Template parameters of a line and their numeric values; triage hands them to the store."""

from __future__ import annotations

import pytest

from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import extract_params, number_of
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
    assert f.params == [("2", 2.0), ("92.4C", 92.4)]


def test_triage_without_headers_mines_the_whole_text():
    t = Triage(None, find_headers=False)
    c = t.classify([LogRecord(0, "s", "", 6, "2024-05-01 10:00:00 INFO pump 3 started")])[0]
    assert c.fields.time is None and c.fields.component is None
    assert c.template.endswith("INFO pump <NUM> started")
