"""Syslog parsing (RFC 5424, RFC 3164, malformed), TCP framing, live UDP/TCP servers, fuzzing."""

from __future__ import annotations

import socket
import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.ingest.record import MAX_LINE_BYTES, SourceCounters
from gateway.ingest.syslog import SyslogServer, TcpFramer, parse_syslog

NOW = 1_700_000_000.0


def test_rfc5424():
    rec, problems = parse_syslog(b"<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - "
                                 b"\xef\xbb\xbf'su root' failed for lonvick on /dev/pts/8", "10.0.0.1", NOW)
    assert problems == {}
    assert rec.severity == 2 and rec.host == "mymachine.example.com"
    assert rec.ts == 1065910455.003
    assert rec.text == "su: 'su root' failed for lonvick on /dev/pts/8"


def test_rfc5424_structured_data_and_nil_fields():
    rec, problems = parse_syslog(b'<165>1 - - - - - [exampleSDID@32473 iut="3" eventSource="Application"] hi',
                                 "peer", NOW)
    assert problems == {} and rec.host == "peer" and rec.ts == NOW and rec.severity == 5
    assert rec.text == '[exampleSDID@32473 iut="3" eventSource="Application"] hi'


def test_rfc3164():
    rec, problems = parse_syslog(b"<13>Feb  5 17:32:18 plc-3 kernel: temperature above threshold", "p", NOW)
    assert problems == {} and rec.host == "plc-3" and rec.severity == 5
    assert rec.text == "kernel: temperature above threshold"
    assert time.localtime(rec.ts)[1:6] == (2, 5, 17, 32, 18)


def test_malformed_priorities_and_bodies():
    rec, problems = parse_syslog(b"<999>1 - - - - - - body", "p", NOW)
    assert problems["bad_priority"] == 1 and "body" in rec.text
    rec, problems = parse_syslog(b"<abc> ERROR x", "p", NOW)
    assert problems["bad_priority"] == 1 and rec.severity == 3
    rec, problems = parse_syslog(b"plain line WARN pump", "p", NOW)
    assert problems == {"no_priority": 1} and rec.severity == 4 and rec.text == "plain line WARN pump"
    rec, problems = parse_syslog(b"<14>1 not-a-time h app - - - msg", "p", NOW)
    assert problems == {"bad_timestamp": 1} and rec.ts == NOW
    rec, problems = parse_syslog(b"<14>\xff\x00" + b"x" * (1 << 20), "p", NOW)
    assert problems["invalid_utf8"] == problems["binary"] == problems["truncated"] == 1
    assert len(rec.text.encode()) < MAX_LINE_BYTES + 200


def test_tcp_framing_octet_counting_newlines_and_truncation():
    f = TcpFramer(limit=100)
    frames = f.feed(b"11 <13>hello a5 <1>x\nhello\n<1>second\r\n")
    assert [x for x, _ in frames] == [b"<13>hello a", b"<1>x\n", b"hello", b"<1>second"]
    # a frame split across reads
    assert f.feed(b"10 <1>ab") == []
    assert f.feed(b"cdefg") == [(b"<1>abcdefg", {})]
    # an over-long octet-counted frame keeps `limit` bytes, skips the rest, stays in sync
    out = f.feed(b"250 " + b"a" * 120)
    assert out == [(b"a" * 100, {"truncated": 1})]
    assert f.feed(b"b" * 130 + b"3 xyz") == [(b"xyz", {})]
    # an over-long LF line: cut, the rest up to LF skipped
    assert f.feed(b"<1>" + b"c" * 150) == [(b"<1>" + b"c" * 97, {"truncated": 1})]
    assert f.feed(b"ccc\nnext\n") == [(b"next", {})]
    # the same when the whole over-long line, LF included, arrives in one read (a fuzz find)
    assert f.feed(b"d" * 130 + b"\nafter\n") == [(b"d" * 100, {"truncated": 1}), (b"after", {})]
    # a frame cut by the connection's end
    f.feed(b"50 <1>only part")
    assert f.close() == [(b"<1>only part", {"truncated_frame": 1})]


def _server(got):
    counters = SourceCounters()
    srv = SyslogServer(lambda rs: (got.extend(rs), list(range(len(rs))))[1], counters, udp_port=0, tcp_port=0)
    srv.start()
    return srv, counters


def test_udp_and_tcp_servers_survive_garbage():
    got = []
    srv, counters = _server(got)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.sendto(b"<11>1 2024-01-01T00:00:00Z plc app - - - UDP ERROR jam", ("127.0.0.1", srv.udp_port))
            u.sendto(b"\x00\xff\xfe garbage", ("127.0.0.1", srv.udp_port))
        with socket.create_connection(("127.0.0.1", srv.tcp_port)) as t:
            t.sendall(b"<12>Jan  1 00:00:00 hostA tcp newline framed\n")
            t.sendall(b"27 <12>1 - hostB - - - - octet")
            t.sendall(b"40 <12>1 - hostC - - - - cut by close")    # truncated frame
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        srv.stop()
    texts = sorted(r.text for r in got)
    assert len(got) == 5, texts
    assert any(t.startswith("app: UDP ERROR jam") for t in texts)
    assert any(t.endswith("octet") for t in texts)
    assert any("cut by close" in t and "connection closed mid-frame" in t for t in texts)
    c = counters.snapshot()["syslog"]
    assert c["lines"] == 5 and c["no_priority"] == 1 and c["truncated_frame"] == 1 and c["invalid_utf8"] == 1


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.binary(max_size=600),
    st.builds(lambda pri, rest: b"<" + pri.encode() + b">" + rest,
              st.text(alphabet="0123456789-x", max_size=5), st.binary(max_size=300)),
    st.builds(lambda body: b"<14>1 " + body.encode("utf-8", "surrogatepass"),
              st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300)),
))
def test_fuzz_parse_never_raises(data):
    rec, problems = parse_syslog(data, "peer", NOW)
    assert isinstance(rec.text, str) and 0 <= rec.severity <= 7
    assert len(rec.text.encode("utf-8")) <= MAX_LINE_BYTES + 200


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_fuzz_framer_never_raises_and_bounds_frames(chunks):
    f = TcpFramer(limit=64)
    for c in chunks:
        for frame, _ in f.feed(c):
            assert len(frame) <= 64
        assert len(f.buf) <= 64 + 16      # memory stays bounded whatever the peer sends
    for frame, _ in f.close():
        assert len(frame) <= 64 + 16


class _GatedSink:
    """A sink that holds every call until opened: the store stalled (disk, a long commit)."""

    def __init__(self) -> None:
        self.got: list = []
        self.open = threading.Event()

    def __call__(self, records):
        self.open.wait(30)
        self.got.extend(records)
        return list(range(len(records)))


def test_tcp_full_queue_stops_reading_and_drops_nothing():
    sink, counters = _GatedSink(), SourceCounters()
    srv = SyslogServer(sink, counters, tcp_port=0, max_pending=100)
    srv.start()
    n = 100_000                                              # 7 MB: more than loopback buffers hold
    payload = b"".join(b"<14>Jan  1 00:00:00 h tcp line %d padding-padding-padding-padding\n" % i for i in range(n))
    sent = threading.Event()

    def send():
        with socket.socket() as t:
            t.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65_536)
            t.connect(("127.0.0.1", srv.tcp_port))
            t.sendall(payload)
        sent.set()

    sender = threading.Thread(target=send, daemon=True)
    try:
        sender.start()
        deadline = time.monotonic() + 30                     # a starved core (a loaded host) reads late
        while srv.stats()["queue"]["depth"] < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert srv.stats()["queue"]["depth"] == 100          # full, and the reader waits on it ...
        assert not sent.is_set()                             # ... so the sender is held by TCP
        sink.open.set()
        assert sent.wait(30)
        deadline = time.monotonic() + 30
        while len(sink.got) < n and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        sink.open.set()
        srv.stop()
    assert [r.text for r in sink.got] == [f"tcp line {i} padding-padding-padding-padding" for i in range(n)]
    assert counters.get("syslog", "overflow") == 0 and srv.stats()["queue"]["dropped"] == 0


def test_udp_drops_are_counted_queue_full_and_kernel():
    """Every datagram sent is stored, or counted as dropped: queue full (overflow) or by the kernel."""
    sink, counters = _GatedSink(), SourceCounters()
    srv = SyslogServer(sink, counters, udp_port=0, max_pending=10)
    srv.start()
    n = 3_000
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            for i in range(n):                     # the first batch and the 10 queued wait on the sink
                u.sendto(b"<14>udp %d" % i, ("127.0.0.1", srv.udp_port))
                if i % 100 == 99:
                    time.sleep(0.01)               # let the reader keep up: these drops are the queue's
            deadline = time.monotonic() + 10
            while srv.stats()["queue"]["dropped"] == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)
            # then the reader stalls: the kernel's receive buffer fills and drops; the next read says so
            gate = threading.Event()
            accept = srv._accept
            srv._accept = lambda *a, **k: (gate.wait(30), accept(*a, **k))
            u.sendto(b"<14>stall", ("127.0.0.1", srv.udp_port))
            time.sleep(0.1)
            big = b"<14>" + b"x" * 8000
            for _ in range(2_000):                 # 16 MB: more than any default rmem
                u.sendto(big, ("127.0.0.1", srv.udp_port))
            srv._accept = accept
            sink.open.set()
            gate.set()
            u.sendto(b"<14>after", ("127.0.0.1", srv.udp_port))
            deadline = time.monotonic() + 10
            while srv.stats()["udp_dropped_kernel"] == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            srv.batcher.flush(10)
    finally:
        sink.open.set()
        srv.stop()
    st = srv.stats()
    small = [r for r in sink.got if r.text.startswith("udp ")]
    assert st["queue"]["dropped"] > 0 and counters.get("syslog", "overflow") == st["queue"]["dropped"]
    assert st["udp_dropped_kernel"] > 0
    assert counters.get("syslog", "udp_dropped_kernel") == st["udp_dropped_kernel"]
    # nothing vanished uncounted: stored + dropped (queue or kernel) = sent
    assert len(sink.got) + st["queue"]["dropped"] + st["udp_dropped_kernel"] == n + 1 + 2_000 + 1
    assert len(small) > 0
