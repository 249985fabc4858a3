"""The store's SQLite schema and its migrations: the tables of gateway.pipeline.store, and what a store
written by an earlier version gains when it is opened (columns added by ALTER TABLE; old rows keep NULLs).
Knows nothing about writing or reading rows.
"""

from __future__ import annotations

import sqlite3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS logs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts REAL NOT NULL,            -- Unix seconds, UTC
  source TEXT NOT NULL,
  host TEXT NOT NULL,
  severity INTEGER NOT NULL,   -- syslog code 0 (emergency) .. 7 (debug)
  text TEXT NOT NULL,
  template_id INTEGER          -- Drain cluster id, NULL when triage did not classify it
);
CREATE INDEX IF NOT EXISTS logs_ts ON logs(ts);
CREATE INDEX IF NOT EXISTS logs_template ON logs(template_id);
CREATE VIRTUAL TABLE IF NOT EXISTS logs_fts USING fts5(text, content='logs', content_rowid='id');
-- The FTS index is kept by the writer, one statement per transaction (Store._insert, retention), in
-- the transaction that adds or deletes the rows. Stores written before did it by a trigger per row,
-- which costs FTS5 a savepoint per row: 2.5x the CPU (docs/perf/2026-12-02-ingest-commit.md).
DROP TRIGGER IF EXISTS logs_ai;
DROP TRIGGER IF EXISTS logs_ad;
"""
# Structured fields (added to stores written before them by ALTER TABLE; old rows keep NULLs).
_FIELD_COLUMNS = (
    ("time", "REAL"),          # the line's own time (its header) if parsed, else ts
    ("time_text", "TEXT"),     # the header's time as written
    ("line_host", "TEXT"),     # host named in the line's header (host is the transport's)
    ("component", "TEXT"),     # program / component / logger
    ("pid", "INTEGER"),
    ("level", "TEXT"),         # the header's level word, canonical (error, warning, info, ...)
)
_FIELD_SCHEMA = """
CREATE INDEX IF NOT EXISTS logs_component ON logs(component);
-- No index on time or line_host: every reader filters and orders by coalesce(time, ts) and
-- coalesce(line_host, host) (gateway/pipeline/query.py), which such an index cannot serve, and
-- keeping them cost a quarter of a commit's CPU. Stores written before lose them here.
DROP INDEX IF EXISTS logs_time;
DROP INDEX IF EXISTS logs_line_host;
CREATE TABLE IF NOT EXISTS params(   -- the template's <*> values of a line, by position
  line_id INTEGER NOT NULL,          -- logs.id; deleted with the line by retention
  pos INTEGER NOT NULL,              -- 0-based among the line's parameters
  text TEXT NOT NULL,
  num REAL,                          -- the value as a number when the text is one (fields.number_of)
  name TEXT,                         -- its name from the template's words (fields.param_names)
  PRIMARY KEY(line_id, pos)          -- the index: a template's lines (logs_template) -> their params
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ingest_keys(  -- identities of recently stored lines (an MQTT message), for dedupe
  seq INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  line_id INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ingest_keys_key ON ingest_keys(key);
CREATE TABLE IF NOT EXISTS templates(  -- Drain template text by id, as last seen at ingest
  id INTEGER PRIMARY KEY,
  template TEXT NOT NULL
);
"""
_ADDED_COLUMNS = {"params": (("name", "TEXT"),)}    # columns later versions added to a table


def create_or_migrate(db: sqlite3.Connection) -> None:
    """Creates the schema, or brings an older store's up to it."""
    db.executescript(_SCHEMA)
    have = {r[1] for r in db.execute("PRAGMA table_info(logs)")}
    for name, kind in _FIELD_COLUMNS:
        if name not in have:                  # a store from before structured fields
            db.execute(f"ALTER TABLE logs ADD COLUMN {name} {kind}")
    db.executescript(_FIELD_SCHEMA)
    for table, cols in _ADDED_COLUMNS.items():
        have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in cols:
            if name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    db.commit()
