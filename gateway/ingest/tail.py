"""File tail: follows a log file across rotation (rename + new file) and truncation, and resumes
after a restart from the offset it persisted once the lines before it were stored durably.

A file is known by its inode and a fingerprint of its head (the first HEAD_BYTES bytes): a file
rotated while the appliance was down is found again by inode beside the path and read from the
saved offset; a truncation is found by the head changing, even when the file has since grown
past the saved offset (size alone misses that). A truncated file rewritten with the very same
head is not told apart.

Knows nothing about the store: the offset is saved only after sink() returned (acknowledged).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable

from gateway.ingest.record import (FRAME_CUT_MARKER, MAX_LINE_BYTES, LogRecord, SourceCounters,
                                   decode_line, severity_from_text)

log = logging.getLogger(__name__)

SOURCE = "tail"
READ_CHUNK = 1 << 20           # bytes per read
MAX_LINES_PER_BATCH = 5_000
HEAD_BYTES = 256               # the fingerprinted head of a file (a log's first line or two)


def _fingerprint(fd: int, n: int) -> str:
    return hashlib.sha1(os.pread(fd, n, 0)).hexdigest()


_EMPTY = hashlib.sha1(b"").hexdigest()


def _same_head(fd: int, head: tuple[int, str]) -> bool:
    n, digest = head
    return n == 0 or _fingerprint(fd, n) == digest


class TailSource:
    """Tails `path`; state (inode, offset) in `state_dir`. poll_once() does one read step (tests);
    start()/stop() run it on a thread every poll_s seconds."""

    def __init__(self, path: str | Path, state_dir: str | Path, sink: Callable[[list[LogRecord]], list[int]],
                 counters: SourceCounters, *, poll_s: float = 0.2, host: str | None = None) -> None:
        self.path = Path(path).expanduser().resolve()
        self.sink, self.counters, self.poll_s = sink, counters, poll_s
        self.host = host if host is not None else self.path.stem
        state_dir = Path(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        key = hashlib.sha1(str(self.path).encode()).hexdigest()[:16]
        self.state_path = state_dir / f"tail-{key}.json"
        self._f = None
        self._ino: int | None = None
        self._head: tuple[int, str] = (0, _EMPTY)   # (bytes, sha1) of the open file's head
        self.offset = 0                # byte offset of the first unacknowledged byte in the open file
        self._partial = bytearray()    # an incomplete last line (bytes already read past offset)
        self._skip_to_lf = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._restore()

    # --- state ---------------------------------------------------------------------------------
    def _restore(self) -> None:
        try:
            st = json.loads(self.state_path.read_text())
            head = st.get("head") or [0, _EMPTY]     # state from before fingerprints: trust the inode
            self._saved = (int(st["inode"]), int(st["offset"]), (int(head[0]), str(head[1])))
        except (FileNotFoundError, ValueError, KeyError, TypeError, IndexError):
            self._saved = None

    def _save(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump({"path": str(self.path), "inode": self._ino, "offset": self.offset,
                       "head": list(self._head)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state_path)

    # --- reading -------------------------------------------------------------------------------
    def _open(self) -> bool:
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return False
        st = os.fstat(f.fileno())
        saved, self._saved = self._saved, None
        if saved is not None and saved[0] != st.st_ino:
            self._resume_rotated(saved)        # rotated while down: finish the old file first
        self._f, self._ino = f, st.st_ino
        self._head = (0, _EMPTY)
        self.offset = 0
        if saved is not None and saved[0] == st.st_ino:
            if saved[1] <= st.st_size and _same_head(f.fileno(), saved[2]):
                self.offset = saved[1]         # resume where the last acknowledged line ended
                self._head = saved[2]
            else:
                self.counters.add(SOURCE, "truncations")
        self._track_head()
        f.seek(self.offset)
        self._partial.clear()
        self._skip_to_lf = False
        return True

    def _resume_rotated(self, saved: tuple[int, int, tuple[int, str]]) -> None:
        """The file we were reading was renamed while we were down: find it beside the path by
        inode (and head) and read it from the saved offset to its end."""
        ino, off, head = saved
        try:
            entries = list(os.scandir(self.path.parent))
        except OSError:
            entries = []
        for e in entries:
            if e.name == self.path.name or not e.name.startswith(self.path.stem):
                continue
            try:
                if e.inode() != ino or not e.is_file():
                    continue
                old = open(e.path, "rb")
            except OSError:
                continue
            with old:
                if not (off <= os.fstat(old.fileno()).st_size and _same_head(old.fileno(), head)):
                    continue
                self._f, self._ino, self._head, self.offset = old, ino, head, off
                old.seek(off)
                self._partial.clear()
                self._skip_to_lf = False
                self._read_available(final=True)
                self._f = None
                self.counters.add(SOURCE, "rotations_while_down")
                return
        self.counters.add(SOURCE, "rotated_file_missing")   # gone (deleted or compressed): counted

    def _track_head(self) -> bool:
        """Check the open file's head against its fingerprint (extending it while the file is still
        shorter than HEAD_BYTES); False when the head changed: the file was truncated and rewritten."""
        fd = self._f.fileno()              # type: ignore[union-attr]
        if not _same_head(fd, self._head):
            return False
        n = min(os.fstat(fd).st_size, HEAD_BYTES)
        if n > self._head[0]:
            self._head = (n, _fingerprint(fd, n))
        return True

    def _close(self) -> None:
        if self._f is not None:
            self._f.close()
        self._f = None

    def poll_once(self) -> int:
        """Read what is new, store it, persist the offset; returns lines stored."""
        if self._f is None and not self._open():
            return 0
        if not self._track_head():     # truncated and rewritten since the last poll
            self._start_over()
        n = self._read_available(final=False)
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if st is None or st.st_ino != self._ino:
            # Rotated: whatever the old file still holds is read to its end, then the new file from 0.
            n += self._read_available(final=True)
            self.counters.add(SOURCE, "rotations")
            self._close()
            self._saved = None
            if st is not None and self._open():
                self._save()
                n += self._read_available(final=False)
        elif st.st_size < self.offset + len(self._partial):
            self._start_over()
            n += self._read_available(final=False)
        return n

    def _start_over(self) -> None:
        """The open file was truncated: read it again from its start."""
        self.counters.add(SOURCE, "truncations")
        self._f.seek(0)                # type: ignore[union-attr]
        self.offset = 0
        self._partial.clear()
        self._skip_to_lf = False
        self._head = (0, _EMPTY)
        self._track_head()
        self._save()

    def _read_available(self, final: bool) -> int:
        total = 0
        while True:
            data = self._f.read(READ_CHUNK)   # type: ignore[union-attr]
            if not data:
                break
            total += self._consume(data)
        if final and self._partial:
            total += self._emit([(bytes(self._partial), len(self._partial), {})])
        return total

    def _consume(self, data: bytes) -> int:
        buf = self._partial + data
        self._partial = bytearray()
        lines: list[tuple[bytes, int, dict]] = []     # (line, bytes consumed incl. LF, problems)
        pos = 0
        stored = 0
        while True:
            i = buf.find(b"\n", pos)
            if self._skip_to_lf:
                if i < 0:
                    lines.append((b"", len(buf) - pos, {"skip": 1}))
                    pos = len(buf)
                    break
                lines.append((b"", i + 1 - pos, {"skip": 1}))
                pos = i + 1
                self._skip_to_lf = False
                continue
            if i < 0:
                if len(buf) - pos > MAX_LINE_BYTES:        # a line with no end in sight: cut it
                    lines.append((bytes(buf[pos:pos + MAX_LINE_BYTES]), len(buf) - pos, {"truncated": 1}))
                    pos = len(buf)
                    self._skip_to_lf = True
                break
            lines.append((bytes(buf[pos:i]).rstrip(b"\r"), i + 1 - pos, {}))
            pos = i + 1
            if len(lines) >= MAX_LINES_PER_BATCH:
                stored += self._emit(lines)
                lines = []
        self._partial = bytearray(buf[pos:])
        stored += self._emit(lines)
        return stored

    def _emit(self, lines: list[tuple[bytes, int, dict]]) -> int:
        recs = []
        consumed = 0
        now = time.time()
        for raw, n, probs in lines:
            consumed += n
            if probs.get("skip"):
                continue
            text, p = decode_line(raw)
            if probs.get("truncated"):
                p["truncated"] = 1
                text += FRAME_CUT_MARKER.format(limit=MAX_LINE_BYTES)
            self.counters.add_problems(SOURCE, p)
            if not text.strip():
                continue
            recs.append(LogRecord(ts=now, source=SOURCE, host=self.host, severity=int(severity_from_text(text)),
                                  text=text))
        if recs:
            self.sink(recs)            # durable when it returns ...
            self.counters.add(SOURCE, "lines", len(recs))
        if consumed:
            self.offset += consumed    # ... and only then is the offset advanced and saved
            self._save()
        return len(recs)

    # --- thread --------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"tail-{self.path.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:   # unacknowledged lines are re-read from the saved offset
                self.counters.add(SOURCE, "errors")
                log.warning("tail %s: %s", self.path, exc)
                self._close()
                self._restore()
            self._stop.wait(self.poll_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self._close()
