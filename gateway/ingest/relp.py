"""Syslog over RELP (rsyslog's Reliable Event Logging Protocol, as omrelp and librelp speak it): the
one syslog transport that acknowledges. Each `syslog` command is answered `200 OK` only after the
store committed its line, so a sender (rsyslog's omrelp keeps unanswered messages and sends them
again after a reconnect) loses nothing acknowledged across a kill or power cut; delivery is at least
once (a line committed whose answer was lost is sent again).

Frames (both directions): TXNR SP COMMAND SP DATALEN [SP DATA] LF. Commands served: open, syslog,
close; anything else is answered 500. A frame that cannot be read ends the session (the sender
reconnects and sends its unanswered messages again).
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from typing import Callable

log = logging.getLogger(__name__)

MAX_DATA = 1 << 20          # largest DATALEN taken (rsyslog's default maximum message is 8 KiB)
MAX_HEADER = 9 + 1 + 32 + 1 + 9 + 1
CLOSE_WAIT_S = 30.0         # a `close` waits this long for the session's commits before it is answered
_HEADER = re.compile(rb"(\d{1,9}) ([A-Za-z]{1,32}) (\d{1,9})([ \n])")
_PARTIAL = re.compile(rb"\d{0,9}(?: [A-Za-z]{0,32}(?: \d{0,9})?)?")
SOFTWARE = "linegate"


class RelpError(ValueError):
    """The byte stream is not RELP (or a frame is over MAX_DATA): the session ends."""


def take_frame(buf: bytearray) -> tuple[int, str, bytes] | None:
    """The first whole frame of `buf` as (txnr, command, data), removed from `buf`; None while it is
    incomplete. Raises RelpError on bytes that cannot start or end a frame."""
    m = _HEADER.match(buf)
    if m is None:
        if len(buf) < MAX_HEADER and _PARTIAL.fullmatch(buf):
            return None
        raise RelpError(f"not a RELP frame header: {bytes(buf[:40])!r}")
    txnr, cmd, n = int(m.group(1)), m.group(2).decode("ascii").lower(), int(m.group(3))
    if n > MAX_DATA:
        raise RelpError(f"frame of {n} bytes (largest taken: {MAX_DATA})")
    if n == 0:
        if m.group(4) != b"\n":
            raise RelpError("DATALEN 0 not followed by the frame's LF")
        del buf[:m.end()]
        return txnr, cmd, b""
    if m.group(4) != b" ":
        raise RelpError("DATALEN > 0 not followed by SP")
    end = m.end() + n
    if len(buf) <= end:
        return None
    if buf[end] != 0x0A:
        raise RelpError(f"frame {txnr}: no LF after its {n} data bytes")
    data = bytes(buf[m.end():end])
    del buf[:end + 1]
    return txnr, cmd, data


def frame(txnr: int, cmd: str, data: bytes = b"") -> bytes:
    return f"{txnr} {cmd} {len(data)}".encode() + (b" " + data if data else b"") + b"\n"


def rsp(txnr: int, code: int, text: str, extra: str = "") -> bytes:
    return frame(txnr, "rsp", f"{code} {text}".encode() + (b"\n" + extra.encode() if extra else b""))


class RelpSession:
    """One connection. `accept(data, done)` queues a syslog message; `done(stored: bool)` is called once
    it is settled (Batcher semantics), and only then is it answered. `serve()` reads until the peer
    closes, sends `close`, or breaks the framing."""

    def __init__(self, sock: socket.socket, accept: Callable[[bytes, Callable[[bool], None]], None],
                 counters: Callable[[str], None], read_size: int = 65_536) -> None:
        self.sock, self.accept, self.count, self.read_size = sock, accept, counters, read_size
        self._send_lock = threading.Lock()
        self._pending = 0
        self._settled = threading.Condition()
        self.opened = False

    def _send(self, b: bytes) -> None:
        with self._send_lock:
            try:
                self.sock.sendall(b)
            except OSError:    # the sender went away: it sends its unanswered messages again
                pass

    def _settle(self, txnr: int) -> Callable[[bool], None]:
        def done(stored: bool) -> None:
            self._send(rsp(txnr, 200, "OK") if stored else rsp(txnr, 500, "not stored, send again"))
            with self._settled:
                self._pending -= 1
                self._settled.notify_all()
        return done

    def serve(self) -> None:
        buf = bytearray()
        while True:
            try:
                data = self.sock.recv(self.read_size)
            except OSError:
                data = b""
            if not data:
                return
            buf += data
            while True:
                try:
                    f = take_frame(buf)
                except RelpError as exc:
                    log.warning("relp: session ended: %s", exc)
                    self.count("relp_bad_frame")
                    self._send(frame(0, "serverclose"))
                    return
                if f is None:
                    break
                if not self._command(*f):
                    return

    def _command(self, txnr: int, cmd: str, data: bytes) -> bool:
        """Serve one command; False ends the session."""
        if cmd == "open":
            self.opened = True
            self._send(rsp(txnr, 200, "OK", f"relp_version=0\nrelp_software={SOFTWARE}\ncommands=syslog"))
        elif cmd == "syslog":
            if not self.opened:
                self._send(rsp(txnr, 500, "open the session first"))
                self.count("relp_bad_frame")
                return False
            with self._settled:
                self._pending += 1
            self.accept(data, self._settle(txnr))    # blocks while the batch queue is full
        elif cmd == "close":
            with self._settled:                      # answered after every earlier message is
                self._settled.wait_for(lambda: self._pending == 0, CLOSE_WAIT_S)
            self._send(rsp(txnr, 200, "OK"))
            return False
        else:
            self._send(rsp(txnr, 500, f"command {cmd!r} not supported"))
            self.count("relp_unknown_command")
        return True
