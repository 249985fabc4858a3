"""Syslog over UDP, TCP and RELP (gateway/ingest/relp.py): RFC 5424 and RFC 3164 (BSD) messages; TCP
frames by octet counting (RFC 6587 §3.4.1) or by newline. parse_syslog never raises: what it cannot
read it counts.

Knows nothing about what happens to records after the Batcher takes them.
"""

from __future__ import annotations

import calendar
import logging
import re
import socket
import socketserver
import sys
import threading
import time
from datetime import datetime
from typing import Callable

from gateway.ingest.batch import MAX_PENDING, Batcher, Done
from gateway.ingest.relp import RelpSession
from gateway.ingest.record import (FRAME_CUT_MARKER, FRAME_END_MARKER, MAX_HOST_CHARS, MAX_LINE_BYTES, LogRecord, Severity, SourceCounters,
                                   clean_field, decode_line, severity_from_text)

log = logging.getLogger(__name__)

SOURCE = "syslog"
MAX_PRI = 191                  # facility 23 * 8 + severity 7
MAX_OCTET_COUNT_DIGITS = 9     # "LEN " prefix longer than this is not octet counting
UDP_MAX_DATAGRAM = 65_535
TCP_READ = 65_536
MAX_TCP_CLIENTS = 64
# Linux: a datagram's ancillary data carries the socket's count of datagrams the kernel dropped
# because the receive buffer was full (socket(7) SO_RXQ_OVFL; not in Python's socket module).
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40) if sys.platform.startswith("linux") else None

_PRI = re.compile(rb"^<(\d{1,3})>")
_RFC5424 = re.compile(
    r"^1 (?P<ts>\S+) (?P<host>\S+) (?P<app>\S+) (?P<proc>\S+) (?P<msgid>\S+) "
    r"(?P<sd>-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (?P<msg>.*))?$", re.S)
_RFC3164 = re.compile(r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) (?P<host>\S+) (?P<msg>.*)$", re.S)
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                                       "Oct", "Nov", "Dec"), start=1)}


def _ts_5424(s: str, now: float) -> tuple[float, bool]:
    if s == "-":
        return now, True
    try:
        return datetime.fromisoformat(s).timestamp(), True
    except ValueError:
        return now, False


def _ts_3164(s: str, now: float) -> float:
    """'Mmm dd hh:mm:ss' in local time, no year: the latest such time not more than a day ahead."""
    try:
        mon = _MONTHS[s[:3]]
        day, hh, mm, ss = int(s[4:6]), int(s[7:9]), int(s[10:12]), int(s[13:15])
        year = time.localtime(now).tm_year
        for y in (year, year - 1):
            t = time.mktime((y, mon, day, hh, mm, ss, 0, 0, -1))
            if t <= now + 86_400:
                return t
    except (KeyError, ValueError, OverflowError):
        pass
    return now


def parse_syslog(data: bytes, peer: str = "", now: float | None = None) -> tuple[LogRecord, dict[str, int]]:
    """One syslog message -> (record, problems). Never raises; unreadable parts are kept as text."""
    now = time.time() if now is None else now
    problems: dict[str, int] = {}
    sev: Severity | None = None
    body = data
    m = _PRI.match(data)
    if m:
        pri = int(m.group(1))
        if pri <= MAX_PRI:
            sev = Severity(pri % 8)
        else:
            problems["bad_priority"] = 1
        body = data[m.end():]
    elif data.startswith(b"<"):
        problems["bad_priority"] = 1
    else:
        problems["no_priority"] = 1
    text, p = decode_line(body)
    problems.update(p)
    host, ts = peer, now
    m5 = _RFC5424.match(text)
    if m5:
        ts, ok = _ts_5424(m5["ts"], now)
        if not ok:
            problems["bad_timestamp"] = 1
        if m5["host"] != "-":
            host = m5["host"]
        msg = (m5["msg"] or "")
        if msg.startswith("\ufeff"):   # RFC 5424 BOM before a UTF-8 MSG
            msg = msg[1:]
        app = "" if m5["app"] == "-" else m5["app"]
        proc = "" if m5["proc"] == "-" else f"[{m5['proc']}]"
        sd = "" if m5["sd"] == "-" else m5["sd"] + " "
        text = f"{app}{proc}: {sd}{msg}" if app else f"{sd}{msg}"
    else:
        m3 = _RFC3164.match(text)
        if m3:
            ts = _ts_3164(m3["ts"], now)
            host = m3["host"]
            text = m3["msg"]
        elif m:
            problems["unparsed_header"] = 1
    severity = sev if sev is not None else severity_from_text(text)
    return LogRecord(ts=ts, source=SOURCE, host=clean_field(host, MAX_HOST_CHARS), severity=int(severity),
                     text=text), problems


class TcpFramer:
    """Splits a TCP byte stream into syslog frames: "LEN SP MSG" (octet counting) when a frame
    starts with a digit, else up to LF. Frames over MAX_LINE_BYTES keep their first
    MAX_LINE_BYTES bytes (the rest is skipped, the frame marked truncated)."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self.buf = bytearray()
        self._skip = 0            # bytes of an over-long frame still to discard
        self._skip_to_lf = False  # discarding the rest of an over-long LF-framed line

    def feed(self, data: bytes) -> list[tuple[bytes, dict[str, int]]]:
        self.buf += data
        out: list[tuple[bytes, dict[str, int]]] = []
        while self.buf:
            if self._skip:
                n = min(self._skip, len(self.buf))
                del self.buf[:n]
                self._skip -= n
                continue
            if self._skip_to_lf:
                i = self.buf.find(b"\n")
                if i < 0:
                    self.buf.clear()
                    break
                del self.buf[:i + 1]
                self._skip_to_lf = False
                continue
            m = re.match(rb"(\d{1,%d}) " % MAX_OCTET_COUNT_DIGITS, self.buf)
            if m:
                n = int(m.group(1))
                start = m.end()
                if len(self.buf) - start >= min(n, self.limit):
                    take = min(n, self.limit)
                    frame = bytes(self.buf[start:start + take])
                    probs = {"truncated": 1} if n > self.limit else {}
                    if n > self.limit:
                        self._skip = n - take
                    del self.buf[:start + take]
                    out.append((frame, probs))
                    continue
                break                 # wait for the rest of the frame
            if self.buf[:1].isdigit() and len(self.buf) <= MAX_OCTET_COUNT_DIGITS:
                break                 # may still become "LEN "
            i = self.buf.find(b"\n")
            if i >= 0:
                frame = bytes(self.buf[:i]).rstrip(b"\r")
                del self.buf[:i + 1]
                if len(frame) > self.limit:   # the whole over-long line arrived at once
                    out.append((frame[:self.limit], {"truncated": 1}))
                elif frame:
                    out.append((frame, {}))
                continue
            if len(self.buf) > self.limit:
                out.append((bytes(self.buf[:self.limit]), {"truncated": 1}))
                self.buf.clear()
                self._skip_to_lf = True
            break
        return out

    def close(self) -> list[tuple[bytes, dict[str, int]]]:
        """The bytes left when the connection ends: a truncated frame, if any."""
        rest = bytes(self.buf)
        self.buf.clear()
        if not rest.strip():
            return []
        m = re.match(rb"(\d{1,%d}) " % MAX_OCTET_COUNT_DIGITS, rest)
        if m:
            return [(rest[m.end():], {"truncated_frame": 1})]
        return [(rest.rstrip(b"\r\n"), {})]


class SyslogServer:
    """UDP, TCP and/or RELP listeners feeding `sink` through a Batcher. Port 0 picks a free port
    (see .udp_port / .tcp_port / .relp_port after start()).

    When the batch queue is full, a TCP or RELP connection stops being read (the sender's window
    closes: back-pressure, nothing dropped); a UDP datagram is dropped and counted (overflow), as are
    the datagrams the kernel dropped before they were read (udp_dropped_kernel). RELP answers each
    message after its commit."""

    def __init__(self, sink: Callable[[list[LogRecord]], list[int]], counters: SourceCounters, *,
                 bind: str = "127.0.0.1", udp_port: int | None = None, tcp_port: int | None = None,
                 relp_port: int | None = None, max_pending: int = MAX_PENDING) -> None:
        self.counters = counters
        self.batcher = Batcher(sink, counters, SOURCE, max_pending=max_pending)
        self.udp_kernel_dropped = 0
        self.bind, self.udp_port, self.tcp_port, self.relp_port = bind, udp_port, tcp_port, relp_port
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []

    def _accept(self, data: bytes, peer: str, extra: dict[str, int] | None = None, block: bool = False,
                done: Done | None = None) -> None:
        try:
            rec, problems = parse_syslog(data, peer)
        except Exception as exc:   # parse_syslog is fuzzed not to raise; belt and braces for the source
            log.error("syslog parser raised on %r: %s", data[:80], exc)
            text, _ = decode_line(data)
            rec, problems = LogRecord(time.time(), SOURCE, peer, int(Severity.NOTICE), text), {"parser_error": 1}
        if extra:
            problems = {**problems, **extra}
            if extra.get("truncated"):
                rec.text += FRAME_CUT_MARKER.format(limit=MAX_LINE_BYTES)
            elif extra.get("truncated_frame"):
                rec.text += FRAME_END_MARKER
        self.counters.add_problems(SOURCE, problems)
        self.batcher.put(rec, block=block, done=done)

    def _kernel_drops(self, total: int) -> None:
        """The socket's cumulative kernel drop count, as the latest datagram reported it."""
        if total > self.udp_kernel_dropped:
            self.counters.add(SOURCE, "udp_dropped_kernel", total - self.udp_kernel_dropped)
            self.udp_kernel_dropped = total

    def stats(self) -> dict:
        return {"queue": self.batcher.stats(), "udp_dropped_kernel": self.udp_kernel_dropped}

    def start(self) -> None:
        self.batcher.start()
        outer = self

        class Udp(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer._accept(self.request[0], self.client_address[0])

        class Tcp(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                framer = TcpFramer()
                sock: socket.socket = self.request
                sock.settimeout(None)
                peer = self.client_address[0]
                while True:
                    try:
                        data = sock.recv(TCP_READ)
                    except OSError:
                        data = b""
                    if not data:
                        break
                    for frame, probs in framer.feed(data):
                        outer._accept(frame, peer, probs, block=True)   # full queue: stop reading
                for frame, probs in framer.close():
                    outer._accept(frame, peer, probs, block=True)

        class Relp(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                sock.settimeout(None)
                peer = self.client_address[0]
                RelpSession(sock, lambda data, done: outer._accept(data, peer, block=True, done=done),
                            lambda what: outer.counters.add(SOURCE, what), TCP_READ).serve()

        class UdpServer(socketserver.UDPServer):
            max_packet_size = UDP_MAX_DATAGRAM
            allow_reuse_address = True

            def server_bind(self) -> None:
                super().server_bind()
                if SO_RXQ_OVFL is not None:
                    self.socket.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)

            def get_request(self):
                data, anc, _flags, addr = self.socket.recvmsg(self.max_packet_size, socket.CMSG_SPACE(4))
                for level, kind, payload in anc:
                    if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(payload) >= 4:
                        outer._kernel_drops(int.from_bytes(payload[:4], sys.byteorder))
                return (data, self.socket), addr

        class TcpServer(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = MAX_TCP_CLIENTS

        if self.udp_port is not None:
            srv = UdpServer((self.bind, self.udp_port), Udp)
            self.udp_port = srv.server_address[1]
            self._servers.append(srv)
        if self.tcp_port is not None:
            srv = TcpServer((self.bind, self.tcp_port), Tcp)
            self.tcp_port = srv.server_address[1]
            self._servers.append(srv)
        if self.relp_port is not None:
            srv = TcpServer((self.bind, self.relp_port), Relp)
            self.relp_port = srv.server_address[1]
            self._servers.append(srv)
        for srv in self._servers:
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2},
                                 name=f"syslog-{type(srv).__name__}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        for srv in self._servers:
            srv.shutdown()
            srv.server_close()
        self.batcher.stop()
