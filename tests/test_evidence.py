"""The lines a question's rare tokens point at (gateway/serve/evidence.py), and the answer check that
keeps a lookup answer only when it reads one of them."""

from __future__ import annotations

from gateway.ingest.record import LogRecord
from gateway.pipeline.query import QuerySurface
from gateway.pipeline.store import Store
from gateway.serve import answer_check, evidence

LINES = [f"Failed password for invalid user u{i} from 10.0.0.{i % 5} port {4000 + i} ssh2" for i in range(60)] + [
    "Invalid user chen from 187.141.143.180", "input_userauth_request: invalid user chen [preauth]",
    "PacketResponder 1 for block blk_-6369730 terminating", "Received block blk_6369730 of size 67108864"]


def _surface(tmp_path):
    s = Store(tmp_path / "e.db")
    s.append([LogRecord(1_700_000_000.0 + i, "t", "h", 6, x) for i, x in enumerate(LINES)])
    return s, QuerySurface(s.path)


def test_rare_tokens_find_their_lines_and_common_ones_do_not(tmp_path):
    s, q = _surface(tmp_path)
    ev = evidence.find(q, "What is the status of the user chen?")
    assert ev.tokens == ["chen"] and [x["text"] for x in ev.lines] == LINES[60:62]
    ev = evidence.find(q, "What is the status of block blk_-6369730?")          # the whole id, sign and all
    assert [x["text"] for x in ev.lines] == [LINES[62]]
    assert evidence.find(q, "How many failed password lines are there?").lines == []   # held by 60 lines
    assert evidence.find(q, "Which port did user u7 use?").tokens == ["u7"]
    s.close()


def test_a_lookup_answer_must_read_its_line(tmp_path):
    s, q = _surface(tmp_path)
    question = "What is the status of the user chen?"
    ev = evidence.find(q, question)
    result = {"call": {"op": "count", "text": "chen"}, "count": 2}
    fmt = (lambda line: line.get("time_text"), str)
    read = answer_check.check("The user chen is an invalid user.", question, result, "2 lines match.", None, *fmt, ev)
    assert read.action == "cited" and "invalid user" in read.text                 # kept, the count after it
    guess = answer_check.check("The user chen is fine.", question, result, "2 lines match.", None, *fmt, ev)
    assert guess.action == "replaced" and LINES[60] in guess.text                 # the fallback quotes the line
    s.close()
