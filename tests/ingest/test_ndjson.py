"""NDJSON bodies: good lines, repaired lines (counted), nothing silently dropped."""

from __future__ import annotations

import json

import pytest

from gateway.ingest import ndjson
from gateway.ingest.ndjson import parse_ndjson


def test_good_and_malformed_lines():
    body = b"\n".join([
        json.dumps({"text": "jam", "host": "line3/labeler", "severity": "error", "ts": 1700000000.5}).encode(),
        json.dumps({"message": "alt key", "ts": "2024-01-01T00:00:00+00:00"}).encode(),
        json.dumps("bare string WARN").encode(),
        b"not json at all ERROR",
        json.dumps({"host": "h", "no": "text"}).encode(),
        json.dumps({"text": "bad sev", "severity": "loud", "ts": "yesterday"}).encode(),
        b"\xff\xfe{\"text\": 1}",
        b"",
        b"   ",
    ])
    problems: dict[str, int] = {}
    recs, malformed = parse_ndjson(body, source="http", problems=problems)
    assert len(recs) == 7 and malformed == 4
    assert (recs[0].text, recs[0].host, recs[0].severity, recs[0].ts) == ("jam", "line3/labeler", 3, 1700000000.5)
    assert recs[1].text == "alt key" and recs[1].ts == 1704067200.0
    assert recs[2].text == "bare string WARN" and recs[2].severity == 4
    assert recs[3].text == "not json at all ERROR" and recs[3].severity == 3 and recs[3].source == "http"
    assert '"no": "text"' in recs[4].text
    assert recs[5].severity == 6
    assert "\ufffd" in recs[6].text
    assert problems == {"not_json": 2, "no_text": 1, "bad_field": 2, "invalid_utf8": 1}


def test_too_many_lines_is_refused_with_the_limit(monkeypatch):
    monkeypatch.setattr(ndjson, "MAX_NDJSON_LINES", 3)
    with pytest.raises(ValueError, match="limit is 3"):
        parse_ndjson(b"a\nb\nc\nd\ne\n")


def test_lone_surrogate_is_replaced_and_counted():
    """Valid JSON, not valid Unicode: "\\ud800" alone. It becomes U+FFFD (the store would refuse it)."""
    body = b'{"text": "a\\ud800b"}\n{"text": "ok", "host": "h\\udfff"}\n"\\ud83d"\n{"text": "\\ud83d\\ude00 pair"}\n'
    problems: dict[str, int] = {}
    records, malformed = parse_ndjson(body, problems=problems)
    assert [r.text for r in records] == ["a\ufffdb", "ok", "\ufffd", "\U0001F600 pair"]
    assert records[1].host == "h\ufffd"
    assert malformed == 3 and problems == {"lone_surrogate": 3}
    for r in records:
        (r.text + r.host + r.source).encode("utf-8")
