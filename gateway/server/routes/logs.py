"""GET /api/logs/search (text + filters, JSON `results`) and GET /api/logs/{id}/around (a line in context).

Searches the appliance's store (the system of record) through its one reader (gateway/pipeline/store_read.py):
"host" is the line's, as in the chat's store queries. Knows nothing about triage or the model.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel

from gateway.pipeline.store_read import MAX_QUERY_CHARS, MAX_SEARCH_LIMIT
from gateway.server.deps import ApplianceDep, ErrorDetail, KeyDep

router = APIRouter(prefix="/api/logs", tags=["logs"])
MAX_AROUND = 50
MAX_LINE_ID = 2**53 - 1   # SQLite INTEGER, capped where a JSON number stays exact (see chat.py's seed)
# Stored text never holds control characters (sources escape them as \xNN), and a NUL breaks an
# FTS5 query string: they are blanked in search text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class LogLine(BaseModel):
    id: int
    ts: float
    source: str
    host: str               # the line's own host (its header's), else the sender's: what the chat's queries mean
    peer: str               # the host the line came from (the transport's sender)
    severity: str
    text: str
    template_id: int | None = None
    box: str | None = None  # the box it came from: on a fleet node only (absent on a box)


class SearchResults(BaseModel):
    results: list[LogLine]
    count: int


Severity = Literal["emergency", "alert", "critical", "error", "warning", "notice", "info", "debug",
                   "emerg", "crit", "err", "warn", "0", "1", "2", "3", "4", "5", "6", "7"]


def unix(t: datetime | None) -> float | None:
    """A naive time is UTC; Unix seconds are accepted too (pydantic parses them as datetimes)."""
    if t is None:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


@router.get("/search", response_model=SearchResults, response_model_exclude_unset=True)
def search(appliance: ApplianceDep, _key: KeyDep,
           q: Annotated[str | None, Query(max_length=MAX_QUERY_CHARS, description="words, all must occur; word* = prefix")] = None,
           limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT)] = 100,
           host: Annotated[str | None, Query(max_length=255, description="the line's host (else the sender's)")] = None,
           peer: Annotated[str | None, Query(max_length=255, description="the sender's host (the transport's)")] = None,
           severity: Annotated[Severity | None, Query(description="at least this severe: 0..7 or a name")] = None,
           since: Annotated[datetime | None, Query(description="ISO 8601 (naive = UTC) or Unix seconds")] = None,
           until: Annotated[datetime | None, Query(description="ISO 8601 (naive = UTC) or Unix seconds")] = None,
           template: Annotated[int | None, Query(ge=0, le=MAX_LINE_ID, description="template (Drain cluster) id")] = None,
           after_id: Annotated[int | None, Query(ge=0, le=MAX_LINE_ID, description="only newer lines, oldest first")] = None,
           before_id: Annotated[int | None, Query(ge=0, le=MAX_LINE_ID, description="only older lines")] = None,
           box: Annotated[str | None, Query(max_length=64, description="one box's lines: on a fleet node; on a "
                                                                   "box, its own or none")] = None,
           ) -> SearchResults:
    """Lines matching every given filter, newest first (oldest first with `after_id`, for tailing). On a fleet
    node ([fleet] node = true) the lines are every box's, from ClickHouse, each naming its box."""
    reader = appliance.fleet_reader
    if box and reader is None and box != appliance.settings.fleet.box_id:
        return SearchResults(results=[], count=0)      # a box holds only its own lines
    try:
        if reader is not None:          # the plant's lines (a ClickHouse read: off the event loop, as this route is)
            rows = reader.search(_CONTROL.sub(" ", q) if q else q, since=unix(since), until=unix(until),
                                 host=host or None, peer=peer or None, severity=severity or None, template_id=template,
                                 box=box or None, after_id=after_id, before_id=before_id, limit=limit)
            return SearchResults(results=[LogLine.model_validate(r) for r in rows], count=len(rows))
        rows = appliance.store.search(_CONTROL.sub(" ", q) if q else q, since=unix(since), until=unix(until),
                                      host=host or None, peer=peer or None, severity=severity or None,
                                      template_id=template,
                                      after_id=after_id, before_id=before_id, limit=limit)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    except (RuntimeError, ConnectionError) as exc:     # the fleet node's ClickHouse refused or is away
        raise HTTPException(503, f"the plant's ClickHouse: {exc}", headers={"Retry-After": "5"}) from None
    return SearchResults(results=[LogLine.model_validate(r) for r in rows], count=len(rows))


@router.get("/{line_id}/around", response_model=SearchResults, response_model_exclude_unset=True,
            responses={404: {"model": ErrorDetail, "description": "no such line (or removed by retention)"}})
def around(appliance: ApplianceDep, _key: KeyDep,
           line_id: Annotated[int, Path(ge=0, le=MAX_LINE_ID)],
           n: Annotated[int, Query(ge=0, le=MAX_AROUND, description="lines before and after")] = 10,
           box: Annotated[str | None, Query(max_length=64, description="the line's box (a fleet node needs it)")] = None,
           ) -> SearchResults:
    """The line `line_id` with up to `n` lines before and after it, oldest first (404 if retention dropped it).
    On a fleet node a line is (box, id): `box` is needed."""
    store, reader = appliance.store, appliance.fleet_reader
    if reader is not None and box is None:
        raise HTTPException(422, "box: a fleet node ([fleet] node = true) names a line by its box and id")
    if reader is None and box is not None and box != appliance.settings.fleet.box_id:
        raise HTTPException(404, f"log line {line_id} of box {box}: this box is not {box!r}")
    if reader is not None and box is not None:
        if reader.get(line_id, box) is None:
            raise HTTPException(404, f"log line {line_id} of box {box} is not in the plant's ClickHouse")
        before = reader.search(before_id=line_id + 1, box=box, limit=n + 1)[::-1]
        rows = before + (reader.search(after_id=line_id, box=box, limit=n) if n else [])
        return SearchResults(results=[LogLine.model_validate(r) for r in rows], count=len(rows))
    if store.get(line_id) is None:
        raise HTTPException(404, f"log line {line_id} is not in the store (never stored, or removed by retention)")
    before = store.search(before_id=line_id + 1, limit=n + 1)[::-1]
    after = store.search(after_id=line_id, limit=n) if n else []
    rows = before + after
    return SearchResults(results=[LogLine.model_validate(r) for r in rows], count=len(rows))
