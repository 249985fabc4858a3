"""The durable log store: SQLite (WAL) + FTS5; the system of record for every accepted line.

Knows nothing about where lines come from or what triage/model make of them.

Durability (fsync policy): journal_mode=WAL with synchronous=FULL, so each COMMIT fsyncs the
WAL before returning. Appends go through a single writer thread that does *group commit*:
every append waiting when a transaction starts joins it, so N concurrent producers pay one
fsync, and `append()` returns only after the COMMIT holding its rows has been synced. A line
whose append() returned survives kill -9 and power loss (as far as the disk honours fsync).

Thread-safety: one writer connection, owned by the writer thread; reads go through the pooled
StoreReader (gateway/pipeline/store_read.py). Any thread may call any method.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from gateway.ingest.batch import take_batch
from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import LineFields, named_params, param_slots
from gateway.pipeline.store_read import StoreClosed, StoreReader, fts_query
from gateway.pipeline.store_schema import create_or_migrate

__all__ = ["Store", "StoreFull", "StoreClosed", "fts_query", "DEFAULT_MAX_BYTES", "MIN_STORE_BYTES"]

log = logging.getLogger(__name__)

MAX_BATCH_ROWS = 20_000          # rows per group commit (bounds one transaction's latency)
MIN_STORE_BYTES = 1 << 20        # smaller max_bytes would thrash retention
RETENTION_CHECK_ROWS = 10_000    # check the size after about this many new rows
RETENTION_TARGET = 0.9           # retention deletes down to this fraction of max_bytes
DEFAULT_MAX_BYTES = 2 << 30      # 2 GiB
REFILL_MAX_LINES = 1000          # lines of one changed template given its parameters again per commit
CACHE_KIB = 65_536               # page cache of a read connection
WRITER_CACHE_KIB = 8_192         # the writer's: 64 MiB wrote no faster (into a 1M-row store) and took
                                 # minutes to fill, RSS growing all the while (issue 29)
WAL_CHECKPOINT_PAGES = 8_192     # checkpoint less often than the default 1000 pages (fewer fsyncs)
KEY_WINDOW = 20_000              # keyed lines a redelivery is looked up among (MQTT in-flight is far less,
                                 # and an MQTT packet id comes round only after 65,535 messages)


class StoreFull(RuntimeError):
    """The disk (or the database's page limit) is full: nothing of the append was stored; the same
    append succeeds once space returns."""


@dataclass
class _Append:
    rows: list[tuple]
    params: list[list[tuple[str, float | None]] | None] = field(default_factory=list)
    templates: dict[int, str] = field(default_factory=dict)
    keys: Sequence[tuple[str, bool] | None] | None = None
    done: threading.Event = field(default_factory=threading.Event)
    ids: list[int] | None = None
    error: BaseException | None = None


class Store:
    """Append-only log store with size-bounded retention and search.

    append(records, template_ids, fields) -> ids   durable (fsynced) before it returns
    search(...), get(id), fields(id), count(), id_range()   the StoreReader's (`reader`): host is the
                                            line's, peer the transport's
    stats(); flush(); close()

    Retention runs on the writer thread after a commit is acknowledged, so an append never waits
    for a delete; flush() waits until everything appended before it, retention included, is done.
    keep_from(last_id) -> the lowest line id retention must keep (None: any may go): a hook for a
    reader that must see every line first (the fleet shipper, gateway/fleet/shipper.py); settable
    after construction. What it held back at the last pass is shown (`retention_held`); what it lets go
    is the hook's to count.
    """

    def __init__(self, path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES,
                 keep_from: Callable[[int], int] | None = None) -> None:
        if max_bytes < MIN_STORE_BYTES:
            raise ValueError(f"store max_bytes={max_bytes} is below the minimum {MIN_STORE_BYTES}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_bytes = int(max_bytes)
        self._queue: queue.Queue[_Append | None] = queue.Queue()
        self._closed = False
        self._lines_written = 0
        self._commits = 0
        self._commit_retries = 0         # group commits that failed and were split (bisected)
        self._commit_failures = 0        # appends refused alone after the split
        self._repeats_skipped = 0        # keyed lines not stored again (a redelivery of a stored line)
        self._pending_repeats = 0        # ... in the transaction being written (counted once committed)
        self._retention_deleted = 0
        self._retention_held = 0         # rows its last pass would have deleted but keep_from kept
        self.keep_from = keep_from
        self._since_retention_check = 0
        self.retention_check_rows = RETENTION_CHECK_ROWS  # per store: tests shorten it on one store only
        self._stats_lock = threading.Lock()
        db = self._connect(WRITER_CACHE_KIB)
        create_or_migrate(db)
        row = db.execute("SELECT seq FROM sqlite_sequence WHERE name='logs'").fetchone()
        self._next_id = (row[0] if row else 0) + 1
        self._first_id = db.execute("SELECT min(id) FROM logs").fetchone()[0]   # kept by the writer
        self._writer_db = db
        self.reader = StoreReader(self.path, lambda: self._connect(query_only=True))
        self._writer = threading.Thread(target=self._write_loop, name="store-writer", daemon=True)
        self._writer.start()

    def _connect(self, cache_kib: int = CACHE_KIB, query_only: bool = False) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA busy_timeout=30000")
        db.execute(f"PRAGMA cache_size=-{cache_kib}")
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        db.execute(f"PRAGMA query_only={'ON' if query_only else 'OFF'}")
        return db

    # --- writing -------------------------------------------------------------------------
    def append(self, records: Sequence[LogRecord], template_ids: Sequence[int | None] | None = None,
               fields: Sequence[LineFields | None] | None = None,
               keys: Sequence[tuple[str, bool] | None] | None = None) -> list[int]:
        """Store `records` (with their template ids and structured fields, when given); returns
        their ids once the transaction holding them is fsynced.

        keys: per record None or (identity, may_repeat). Every identity is remembered in the same
        transaction as its line; a record with may_repeat whose identity is among the last
        KEY_WINDOW remembered is not stored again, and its id is the stored line's (exactly once
        across a crash between commit and acknowledgement)."""
        if not records:
            return []
        if template_ids is None:
            template_ids = [None] * len(records)
        if len(template_ids) != len(records):
            raise ValueError(f"{len(records)} records but {len(template_ids)} template ids")
        if fields is None:
            fields = [None] * len(records)
        if len(fields) != len(records):
            raise ValueError(f"{len(records)} records but {len(fields)} fields")
        if keys is not None and len(keys) != len(records):
            raise ValueError(f"{len(records)} records but {len(keys)} keys")
        rows = [_row_values(r, t, f) for r, t, f in zip(records, template_ids, fields)]
        job = _Append(rows, [f.params if f is not None else None for f in fields],
                      _templates(template_ids, fields), keys if keys and any(keys) else None)
        if self._closed:
            raise StoreClosed(f"store {self.path} is closed")
        self._queue.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.ids is not None
        return job.ids

    def flush(self) -> None:
        """Return once every append made before this call is committed and any retention pass
        those appends started has finished (a barrier through the writer's queue)."""
        if self._closed:
            raise StoreClosed(f"store {self.path} is closed")
        job = _Append([])
        self._queue.put(job)
        job.done.wait()

    def _write_loop(self) -> None:
        db = self._writer_db
        stop = False
        while not stop:   # what is queued now, up to MAX_BATCH_ROWS rows, goes into one commit
            batch, stop = take_batch(self._queue, 0.0, MAX_BATCH_ROWS, lambda job: len(job.rows))
            if batch:
                self._commit(db, batch)
        db.close()

    def _commit(self, db: sqlite3.Connection, batch: list[_Append]) -> None:
        # flush() barriers (no rows) are released last: after the appends queued before them are
        # committed and the retention pass those appends start has run.
        appends = [job for job in batch if job.rows]
        if appends:
            self._write(db, appends)
        for job in batch:
            if not job.rows:
                job.ids = []
                job.done.set()

    def _write(self, db: sqlite3.Connection, batch: list[_Append]) -> None:
        """Commit `batch` as one transaction. If it fails, no line in it was acknowledged: the
        group is split in halves and each retried, so one append at fault (a row SQLite refuses)
        fails alone and the appends of every other caller in the group still commit."""
        try:
            next_id = self._insert(db, batch)
        except BaseException as exc:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            for job in batch:
                job.ids = None
            if len(batch) > 1 and not isinstance(exc, (KeyboardInterrupt, SystemExit)):
                with self._stats_lock:
                    self._commit_retries += 1
                half = len(batch) // 2
                self._write(db, batch[:half])
                self._write(db, batch[half:])
                return
            log.error("store commit failed: %s", exc)
            with self._stats_lock:
                self._commit_failures += len(batch)
            for job in batch:              # one append (or an interrupt, which is not split)
                job.error = _named_error(exc, job.rows, self.path)
                job.done.set()
            return
        written = next_id - self._next_id
        if self._first_id is None and written > 0:
            self._first_id = self._next_id
        self._next_id = next_id
        with self._stats_lock:
            self._lines_written += written
            self._commits += 1
            self._repeats_skipped += self._pending_repeats
            self._since_retention_check += written
            check = self._since_retention_check >= self.retention_check_rows
        for job in batch:
            job.done.set()
        if check:
            self._since_retention_check = 0
            self._enforce_retention(db)

    def _insert(self, db: sqlite3.Connection, batch: list[_Append]) -> int:
        """BEGIN .. COMMIT of every row in `batch` (ids from self._next_id); returns the next id."""
        db.execute("BEGIN IMMEDIATE")
        next_id = self._next_id
        templates: dict[int, str] = {}
        seen: dict[str, int] = {}
        self._pending_repeats = 0
        for job in batch:
            rows, params = job.rows, job.params
            if job.keys is None:
                job.ids = list(range(next_id, next_id + len(rows)))
            else:
                rows, params, job.ids = self._dedupe(db, job, next_id, seen)
                self._pending_repeats += len(job.rows) - len(rows)
            new_ids = range(next_id, next_id + len(rows))
            db.executemany(
                "INSERT INTO logs(id, ts, source, host, severity, text, template_id, time, time_text,"
                " line_host, component, pid, level) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(i, *row) for i, row in zip(new_ids, rows)])
            db.executemany("INSERT INTO params(line_id, pos, text, num, name) VALUES (?,?,?,?,?)",
                           [(i, k, *p[:2], p[2] if len(p) > 2 else None) for i, ps in zip(new_ids, params) if ps
                            for k, p in enumerate(ps)])
            templates.update(job.templates)
            next_id += len(rows)
        db.execute("INSERT INTO logs_fts(rowid, text) SELECT id, text FROM logs WHERE id >= ? AND id < ?",
                   (self._next_id, next_id))         # this transaction's rows (their ids are contiguous)
        if seen:
            db.executemany("INSERT INTO ingest_keys(key, line_id) VALUES (?,?)", seen.items())
            db.execute("DELETE FROM ingest_keys WHERE seq <= (SELECT max(seq) FROM ingest_keys) - ?", (KEY_WINDOW,))
        if templates:
            _refill_params(db, templates)
            db.executemany("INSERT OR REPLACE INTO templates(id, template) VALUES (?,?)", templates.items())
        db.execute("COMMIT")
        return next_id

    def _dedupe(self, db: sqlite3.Connection, job: _Append, next_id: int,
                seen: dict[str, int]) -> tuple[list[tuple], list, list[int]]:
        """The rows of a keyed append that are not already stored, their params, and the ids of all
        its rows (a repeat gets its stored line's id). `seen` collects this transaction's keys."""
        assert job.keys is not None
        lo = db.execute("SELECT coalesce(max(seq), 0) FROM ingest_keys").fetchone()[0] - KEY_WINDOW
        rows, params, ids = [], [], []
        for row, ps, key in zip(job.rows, job.params, job.keys):
            if key is not None and key[1]:
                old = seen.get(key[0])
                if old is None:
                    r = db.execute("SELECT line_id FROM ingest_keys WHERE key=? AND seq > ?", (key[0], lo)).fetchone()
                    old = r[0] if r else None
                if old is not None:
                    ids.append(old)
                    continue
            line_id = next_id + len(rows)
            if key is not None:
                seen[key[0]] = line_id
            rows.append(row)
            params.append(ps)
            ids.append(line_id)
        return rows, params, ids

    def _used_bytes(self, db: sqlite3.Connection) -> int:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        return (pages - free) * page_size

    def _enforce_retention(self, db: sqlite3.Connection) -> None:
        """Delete the oldest rows until the used size is under RETENTION_TARGET * max_bytes.
        Freed pages are reused by later inserts, so the file stops growing near max_bytes."""
        used = self._used_bytes(db)
        if used <= self.max_bytes:
            return
        lo, hi = db.execute("SELECT min(id), max(id) FROM logs").fetchone()
        if lo is None:
            return
        rows = hi - lo + 1
        excess = 1.0 - RETENTION_TARGET * self.max_bytes / used
        n_delete = max(1, int(rows * excess))
        end = self._retention_end(lo, lo + n_delete, hi)     # delete ids < end
        if end <= lo:
            return
        db.execute("BEGIN IMMEDIATE")
        db.execute("DELETE FROM params WHERE line_id < ?", (end,))
        db.execute("INSERT INTO logs_fts(logs_fts, rowid, text) SELECT 'delete', id, text FROM logs WHERE id < ?",
                   (end,))                            # the FTS 'delete' needs the text: before the rows go
        db.execute("DELETE FROM logs WHERE id < ?", (end,))
        db.execute("COMMIT")
        self._first_id = db.execute("SELECT min(id) FROM logs").fetchone()[0]
        with self._stats_lock:
            self._retention_deleted += end - lo
        log.info("store retention: deleted %d oldest rows (used %d > max %d bytes)", end - lo, used, self.max_bytes)

    def _retention_end(self, lo: int, end: int, last_id: int) -> int:
        """`end` (retention deletes ids below it) held back to what keep_from says must stay; a failing
        hook keeps everything (the store grows past max_bytes rather than lose a line silently)."""
        keep = end
        if self.keep_from is not None:
            try:
                keep = min(end, int(self.keep_from(last_id)))
            except Exception:
                log.exception("store retention: keep_from failed; nothing deleted this time")
                keep = lo
        with self._stats_lock:
            self._retention_held = max(0, end - max(lo, keep))
        if keep < end:
            log.warning("store retention: %d rows kept past max_bytes (%d) until they are shipped",
                        self._retention_held, self.max_bytes)
        return keep

    # --- reading: the StoreReader's, here for the store's callers -----------------------------
    def search(self, text: str | None = None, **filters) -> list[dict]:
        """Lines by words and filters, `host` the line's (StoreReader.search)."""
        return self.reader.search(text, **filters)

    def get(self, line_id: int) -> dict | None:
        return self.reader.get(line_id)

    def fields(self, line_id: int) -> dict | None:
        return self.reader.fields(line_id)

    def count(self) -> int:
        return self.reader.count()

    def id_range(self) -> tuple[int | None, int | None]:
        return self.reader.id_range()

    def stats(self) -> dict:
        """Figures kept by the writer: no query, so stats never wait for a read connection."""
        lo = self._first_id
        hi = self._next_id - 1 if lo is not None else None
        with self._stats_lock:
            return {"path": str(self.path), "max_bytes": self.max_bytes,
                    "file_bytes": _file_bytes(self.path), "first_id": lo, "last_id": hi,
                    "rows": 0 if lo is None else hi - lo + 1, "lines_written": self._lines_written,
                    "commits": self._commits, "commit_retries": self._commit_retries,
                    "commit_failures": self._commit_failures, "repeats_skipped": self._repeats_skipped,
                    "retention_deleted": self._retention_deleted, "retention_held": self._retention_held,
                    "queued": self._queue.qsize(), "read_connections": self.reader.n_open}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join()
        self.reader.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _row_values(r: LogRecord, template_id: int | None, f: LineFields | None) -> tuple:
    base = (r.ts, r.source, r.host, int(r.severity), r.text, template_id)
    if f is None:
        return base + (r.ts, None, None, None, None, None)
    return base + (f.time if f.time is not None else r.ts, f.time_text, f.host, f.component, f.pid, f.level)


def _refill_params(db: sqlite3.Connection, templates: dict[int, str]) -> None:
    """A template's first lines were mined before it had their <*> (a new template is its first line's
    text): they were stored without the parameters its later lines have, and a `where` on one missed
    them. For each template of this commit whose text is not the stored one, its lines with fewer
    parameters than it has slots get them from its new text (the message: the line's last tokens, as
    many as the template has; a line whose tokens do not fit keeps what it has)."""
    stored = dict(db.execute(f"SELECT id, template FROM templates WHERE id IN ({','.join('?' * len(templates))})",
                             list(templates)).fetchall())
    for tid, text in templates.items():
        slots = len(param_slots(text)) if stored.get(tid) != text and "<" in text else 0
        if not slots:
            continue
        n_tok = len(text.split())
        rows = db.execute("SELECT l.id, l.text FROM logs l WHERE l.template_id = ? AND (SELECT count(*) FROM params p "
                          "WHERE p.line_id = l.id) < ? LIMIT ?", (tid, slots, REFILL_MAX_LINES)).fetchall()
        for line_id, line in rows:
            got = named_params(text, " ".join(str(line).split()[-n_tok:]))
            if len(got) == slots:
                db.execute("DELETE FROM params WHERE line_id = ?", (line_id,))
                db.executemany("INSERT INTO params(line_id, pos, text, num, name) VALUES (?,?,?,?,?)",
                               [(line_id, k, *p) for k, p in enumerate(got)])


def _templates(template_ids: Sequence[int | None], fields: Sequence[LineFields | None]) -> dict[int, str]:
    return {t: f.template for t, f in zip(template_ids, fields) if t is not None and f is not None and f.template}


def _named_error(exc: BaseException, rows: list[tuple], path: Path) -> BaseException:
    """A text SQLite cannot encode is named by its line (callers scrub at the edge; this is the
    message when one did not); a full disk is StoreFull; any other failure is passed on as it is."""
    if isinstance(exc, sqlite3.OperationalError) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return StoreFull(f"the store {path} is full (its disk, or its page limit): {exc}; nothing of this "
                         "append was stored")
    if not isinstance(exc, UnicodeEncodeError):
        return exc
    for i, row in enumerate(rows):
        for name, value in zip(("source", "host", "text"), (row[1], row[2], row[4])):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as bad:
                return ValueError(f"line {i} of the append: its {name} is not valid Unicode ({bad.reason}"
                                  f" at character {bad.start}); nothing of this append was stored")
    return exc


def _file_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.stat(f"{path}{suffix}").st_size
        except FileNotFoundError:
            pass
    return total

