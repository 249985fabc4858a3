"""GET /api/sources: each source's learned format (gateway.ingest.source_format): its kind of line, the
header fields found in its first lines and in what share, induced columns, an operator's pattern."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from gateway.server.deps import ApplianceDep, KeyDep

router = APIRouter(prefix="/api/sources", tags=["sources"])


class SourceFormat(BaseModel):
    source: str
    origin: str                               # induced | config | model
    kind: str | None = None                   # text | json | key=value | delimited
    lines: int | None = None                  # lines the format was learned from
    fields: dict[str, float] = {}             # header field -> share of those lines that carried it
    columns: list[str] = []                   # induced message columns (token shapes) cut into the header
    pattern: str | None = None                # the operator's header pattern ([ingest.header_patterns])
    example: str | None = None
    unsure: bool = False                      # no header found in its first lines: the model is asked for one
    proposed: str | None = None               # the layout the model proposed ("" none), kept or not


class SourceList(BaseModel):
    sources: list[SourceFormat]
    learning: int                             # sources still watching their first lines
    relearned: int                            # formats learned again after the source's lines drifted


@router.get("", response_model=SourceList)
def sources(appliance: ApplianceDep, _key: KeyDep) -> SourceList:
    fmts = appliance.triage.headers if appliance.triage is not None else None
    if fmts is None:
        return SourceList(sources=[], learning=0, relearned=0)
    out = [SourceFormat(source=s, origin=f.get("origin", "induced"), kind=f.get("kind"), lines=f.get("lines"),
                        fields=f.get("fields") or {}, columns=f.get("columns") or [], pattern=f.get("pattern"),
                        example=f.get("example"), unsure=bool(f.get("unsure")), proposed=f.get("proposed"))
           for s, f in sorted(fmts.formats().items())]
    return SourceList(sources=out, learning=fmts.learning(), relearned=fmts.relearned)
