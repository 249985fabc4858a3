"""File tail: partial lines, restart from the persisted offset, rotation, truncation, huge lines."""

from __future__ import annotations

import os

from gateway.ingest.record import MAX_LINE_BYTES, SourceCounters
from gateway.ingest.tail import TailSource


def _tail(path, state, got, counters=None):
    return TailSource(path, state, lambda rs: (got.extend(r.text for r in rs), list(range(len(rs))))[1],
                      counters or SourceCounters())


def test_follow_partial_restart_rotate_truncate(tmp_path):
    log, state = tmp_path / "line.log", tmp_path / "state"
    got: list[str] = []
    counters = SourceCounters()
    log.write_text("one\ntwo\npart")
    t = _tail(log, state, got, counters)
    t.poll_once()
    assert got == ["one", "two"]                     # an unfinished line waits for its LF
    with open(log, "a") as f:
        f.write("ial\nthree\n")
    t.poll_once()
    assert got == ["one", "two", "partial", "three"]
    t.stop()
    # restart: a new tail resumes at the saved offset, no line twice
    with open(log, "a") as f:
        f.write("four\n")
    t = _tail(log, state, got, counters)
    t.poll_once()
    assert got[-2:] == ["three", "four"] and got.count("three") == 1
    # rotation: the old file's last lines, then the new file from its start
    os.rename(log, tmp_path / "line.log.1")
    with open(tmp_path / "line.log.1", "a") as f:
        f.write("old-last\n")
    log.write_text("new-1\n")
    t.poll_once()
    assert got[-2:] == ["old-last", "new-1"]
    # truncation in place
    log.write_text("x\n")
    t.poll_once()
    assert got[-1] == "x"
    t.stop()
    c = counters.snapshot()["tail"]
    assert c["rotations"] == 1 and c["truncations"] == 1 and c["lines"] == len(got)


def test_huge_line_and_binary(tmp_path):
    log = tmp_path / "b.log"
    got: list[str] = []
    counters = SourceCounters()
    t = _tail(log, tmp_path / "s", got, counters)
    with open(log, "wb") as f:
        f.write(b"y" * (3 * MAX_LINE_BYTES))            # no LF yet: cut once over the limit
    t.poll_once()
    with open(log, "ab") as f:
        f.write(b"yyy\n\x00\xffbin\nafter\n")
    t.poll_once()
    assert len(got) == 3
    assert got[0].startswith("y" * 100) and "truncated" in got[0] and len(got[0]) < MAX_LINE_BYTES + 100
    assert got[1] == "\\x00\ufffdbin" and got[2] == "after"
    c = counters.snapshot()["tail"]
    assert c["truncated"] == 1 and c["invalid_utf8"] == 1 and c["binary"] == 1
    assert t.offset == os.path.getsize(log)
    t.stop()


def test_rotation_while_down_resumes_the_rotated_file_by_inode(tmp_path):
    log, state = tmp_path / "line.log", tmp_path / "state"
    got: list[str] = []
    counters = SourceCounters()
    log.write_text("a\nb\n")
    t = _tail(log, state, got, counters)
    t.poll_once()
    t.stop()
    with open(log, "a") as f:                        # written after the stop, then rotated away
        f.write("c\nd-no-lf")
    os.rename(log, tmp_path / "line.log.1")
    (tmp_path / "line.log.2").write_text("an older rotation, not ours\n")
    log.write_text("new-1\nnew-2\n")
    t = _tail(log, state, got, counters)
    t.poll_once()
    t.stop()
    assert got == ["a", "b", "c", "d-no-lf", "new-1", "new-2"]
    c = counters.snapshot()["tail"]
    assert c["rotations_while_down"] == 1 and "truncations" not in c
    t = _tail(log, state, got, counters)             # and the state now names the new file
    t.poll_once()
    t.stop()
    assert got[-1] == "new-2" and got.count("new-1") == 1


def test_truncation_then_growth_past_the_offset_is_found_by_the_head(tmp_path):
    log, state = tmp_path / "line.log", tmp_path / "state"
    got: list[str] = []
    counters = SourceCounters()
    log.write_text("first run 1\nfirst run 2\n")
    t = _tail(log, state, got, counters)
    t.poll_once()
    t.stop()
    # while down: truncated in place (same inode) and rewritten longer than the saved offset
    with open(log, "r+") as f:
        f.truncate(0)
        f.write("rewritten 1\nrewritten 2\nrewritten 3\n")
    t = _tail(log, state, got, counters)
    t.poll_once()
    assert got == ["first run 1", "first run 2", "rewritten 1", "rewritten 2", "rewritten 3"]
    # while running: truncated and regrown past the offset between two polls
    with open(log, "r+") as f:
        f.truncate(0)
        f.write("again 1\nagain 2\nagain 3\nagain 4\nagain 5\n")
    t.poll_once()
    t.stop()
    assert got[5:] == ["again 1", "again 2", "again 3", "again 4", "again 5"]
    assert counters.snapshot()["tail"]["truncations"] == 2
