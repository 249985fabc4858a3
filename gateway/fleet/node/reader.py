"""The fleet node's store reader: the read side of gateway.pipeline.store.Store (search, get, fields, count,
id_range, stats) over the plant's ClickHouse, what the API's log routes call. A line is (box, id): a line id
alone names a line only with its box. Knows nothing about writing or about HTTP routes.
"""

from __future__ import annotations

from typing import Any

from gateway.fleet.node import sql
from gateway.fleet.node.surface import FleetSurface, Rows
from gateway.fleet.schema import LINES
from gateway.ingest.record import parse_severity_strict, severity_name
from gateway.pipeline.store_read import MAX_QUERY_CHARS, MAX_SEARCH_LIMIT

_COLUMNS = f"box, id, ts, source, {sql.HOST} AS host_, host AS peer, severity, text, template_id"


class FleetStoreReader:
    """search(...) -> [dict] (Store.search's keys plus box; host the line's, peer the transport's); get(id, box); fields(id, box); count(); stats()."""

    def __init__(self, rows: Rows, database: str = "linegate", caps: dict[str, Any] | None = None,
                 surface: FleetSurface | None = None) -> None:
        self._rows = rows
        self.table = f"{database}.{LINES}"
        self.caps = dict(caps or {})
        self._counts = surface or FleetSurface(rows, database)   # its `counted`: each line once (sql.py)

    @classmethod
    def of(cls, surface: "FleetSurface") -> "FleetStoreReader":
        """The reader over the same connection, database and caps as a fleet surface."""
        return cls(surface._rows, surface.table.split(".")[0], surface.caps, surface)

    def _q(self, statement: str) -> list[dict]:
        return self._rows(statement, sql.settings(statement, self.caps))

    @staticmethod
    def _row(r: dict) -> dict:
        return {"box": r["box"], "id": r["id"], "ts": r["ts"], "source": r["source"], "host": r["host_"],
                "peer": r["peer"], "severity": severity_name(int(r["severity"])), "text": r["text"], "template_id": r["template_id"]}

    def search(self, text: str | None = None, *, since: float | None = None, until: float | None = None,
               host: str | None = None, peer: str | None = None, severity: int | str | None = None,
               template_id: int | None = None,
               source: str | None = None, box: str | None = None, before_id: int | None = None,
               after_id: int | None = None, limit: int = 100) -> list[dict]:
        """Lines matching every filter, newest first (oldest first with `after_id`), as Store.search; the
        paging cursors need `box` (ids are a box's own). Raises ValueError naming the parameter."""
        if not 1 <= int(limit) <= MAX_SEARCH_LIMIT:
            raise ValueError(f"limit={limit} must be within 1..{MAX_SEARCH_LIMIT}")
        if (before_id is not None or after_id is not None) and not box:
            raise ValueError("before_id/after_id page within one box: give box")
        w = sql.Where()
        if text is not None and text.strip():
            if len(text) > MAX_QUERY_CHARS:
                raise ValueError(f"search text is {len(text)} characters; the limit is {MAX_QUERY_CHARS}")
            w.conds += sql.text_conditions(text, max_chars=MAX_QUERY_CHARS)
        for col, value in ((sql.HOST, host), ("host", peer), ("source", source), ("box", box)):
            if value:
                w.conds.append(f"{col} = {sql.lit(value)}")
        bounds = (("ts >=", since, sql.num), ("ts <=", until, sql.num), ("template_id =", template_id, int),
                  ("id <", before_id, int), ("id >", after_id, int),
                  ("severity <=", severity, lambda v: int(parse_severity_strict(v))))
        w.conds += [f"{cond} {shown(value)}" for cond, value, shown in bounds if value is not None]
        order = "ASC" if after_id is not None else "DESC"
        rows = self._q(sql.deduped_lines(_COLUMNS, self.table, w.sql(), f"ts {order}, box {order}, id {order}", limit))
        return [self._row(r) for r in rows]

    def get(self, line_id: int, box: str) -> dict | None:
        rows = self._q(f"SELECT {_COLUMNS} FROM {self.table}"
                       f" WHERE box = {sql.lit(box)} AND id = {int(line_id)} LIMIT 1")      # a copy is the same line
        return self._row(rows[0]) if rows else None

    def fields(self, line_id: int, box: str) -> dict | None:
        """As Store.fields: time, time_text, line_host, component, pid, level, template_id, template, params."""
        rows = self._q(f"SELECT box, id, time, time_text, line_host, component, pid, level, template_id, template,"
                       f" param_text, param_num, param_name FROM {self.table}"
                       f" WHERE box = {sql.lit(box)} AND id = {int(line_id)} LIMIT 1")      # a copy is the same line
        if not rows:
            return None
        r = rows[0]
        params = [{"pos": i, "text": t, "num": n, "name": nm or None}
                  for i, (t, n, nm) in enumerate(zip(r["param_text"], r["param_num"], r["param_name"]))]
        return {"time": r["time"], "time_text": r["time_text"], "line_host": r["line_host"],
                "component": r["component"], "pid": r["pid"], "level": r["level"], "template_id": r["template_id"],
                "template": r["template"] or None, "params": params}

    def count(self, box: str | None = None) -> int:
        w = sql.Where()
        if box:
            w.conds.append(f"box = {sql.lit(box)}")
        return int(self._counts.counted(lambda rg: sql.count(self.table, w, rg))[0]["n"])

    def id_range(self, box: str) -> tuple[int | None, int | None]:
        r = self._q(f"SELECT min(id) AS lo, max(id) AS hi, count() AS n FROM {self.table}"
                    f" WHERE box = {sql.lit(box)}")[0]
        return (r["lo"], r["hi"]) if r["n"] else (None, None)

    def stats(self) -> dict:
        """Per box: lines (each once, as sql.count), first and last id, newest arrival."""
        rows = self._counts.counted(lambda rg: sql.box_stats(self.table, rg))
        boxes = [{k: r[k] for k in ("box", "lines", "first_id", "last_id", "newest_ts")} for r in rows]
        return {"table": self.table, "boxes": boxes, "lines": sum(int(r["lines"]) for r in rows)}
