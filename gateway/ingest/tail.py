"""File tail: follows a log file across rotation (rename + new file) and truncation, and resumes
after a restart from the offset it persisted once the lines before it were stored durably.

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
            self._saved = (int(st["inode"]), int(st["offset"]))
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            self._saved = None

    def _save(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump({"path": str(self.path), "inode": self._ino, "offset": self.offset}, f)
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
        self._f, self._ino = f, st.st_ino
        self.offset = 0
        if self._saved is not None:
            ino, off = self._saved
            if ino == st.st_ino and off <= st.st_size:
                self.offset = off          # resume where the last acknowledged line ended
            elif ino == st.st_ino:
                self.counters.add(SOURCE, "truncations")
            self._saved = None
        f.seek(self.offset)
        self._partial.clear()
        self._skip_to_lf = False
        return True

    def _close(self) -> None:
        if self._f is not None:
            self._f.close()
        self._f = None

    def poll_once(self) -> int:
        """Read what is new, store it, persist the offset; returns lines stored."""
        if self._f is None and not self._open():
            return 0
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
            self.counters.add(SOURCE, "truncations")
            self._f.seek(0)            # type: ignore[union-attr]
            self.offset = 0
            self._partial.clear()
            self._skip_to_lf = False
            self._save()
            n += self._read_available(final=False)
        return n

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
