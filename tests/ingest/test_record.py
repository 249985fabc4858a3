"""LogRecord helpers: severity parsing, clipping at MAX_LINE_BYTES, decoding hostile bytes."""

from __future__ import annotations

import pytest

from gateway.ingest.record import (MAX_LINE_BYTES, LogRecord, Severity, clip_text, decode_line,
                                   parse_severity, parse_severity_strict, severity_from_text)


def test_severity_names_numbers_and_text():
    assert parse_severity("WARN") == Severity.WARNING
    assert parse_severity("err") == Severity.ERROR
    assert parse_severity(2) == Severity.CRITICAL
    assert parse_severity("9") == Severity.INFO            # out of range -> default
    assert parse_severity("bogus", default=Severity.NOTICE) == Severity.NOTICE
    with pytest.raises(ValueError, match="unknown severity 'bogus'"):
        parse_severity_strict("bogus")
    assert severity_from_text("2024-01-01 12:00:00 ERROR pump 3 tripped") == Severity.ERROR
    assert severity_from_text("no error here, all fine") == Severity.INFO   # lower-case word is prose
    assert severity_from_text("x" * 500 + " FATAL") == Severity.INFO       # level words sit near the start


def test_clip_keeps_whole_characters_and_marks():
    text, cut = clip_text("é" * MAX_LINE_BYTES)
    assert cut and "[truncated" in text
    kept = text.split(" …[truncated")[0]
    assert len(kept.encode()) <= MAX_LINE_BYTES and set(kept) == {"é"}
    assert clip_text("short") == ("short", False)


def test_decode_hostile_bytes():
    text, problems = decode_line(b"ok \xff\xfe \x00\x07 bell")
    assert problems == {"invalid_utf8": 1, "binary": 1}
    assert "\ufffd" in text and "\\x00" in text and "\x00" not in text
    text, problems = decode_line(b"A" * (1 << 20))        # a 1 MB line
    assert problems == {"truncated": 1}
    assert len(text.encode()) < MAX_LINE_BYTES + 100 and text.endswith(f"[truncated {(1 << 20) - MAX_LINE_BYTES} bytes]")
    # a multi-byte character split by the cut is not counted as invalid UTF-8
    text, problems = decode_line("é".encode() * MAX_LINE_BYTES)
    assert problems == {"truncated": 1}


def test_make_parses_severity_and_dict_names_it():
    r = LogRecord.make("WARNING filler hot", source="x", host="line3/filler", ts=5.0)
    assert r.severity == Severity.WARNING
    assert r.to_dict() == {"ts": 5.0, "source": "x", "host": "line3/filler", "severity": "warning",
                           "text": "WARNING filler hot"}
