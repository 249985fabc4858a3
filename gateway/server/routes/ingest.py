"""POST /api/ingest: a batch of NDJSON log lines, acknowledged only once the store holds them durably.

Parsing is the pipeline's (gateway.ingest.ndjson); this file only moves the body and the answer.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from gateway.ingest.ndjson import parse_ndjson
from gateway.pipeline.store import StoreFull
from gateway.server.deps import ApplianceDep, KeyDep

router = APIRouter(prefix="/api", tags=["ingest"])
NDJSON_DOC = ('One JSON object per line: {"text": "...", "host": "...", "severity": "warning", "ts": 1700000000.0, '
              '"source": "..."}; only `text` is required. A line that is not such an object is stored as text '
              'where possible and counted as malformed.')


class LineProblem(BaseModel):
    line: int               # 1-based line number in the body
    problems: list[str]     # not_json, no_text, bad_field, invalid_utf8, binary, truncated


class IngestResult(BaseModel):
    accepted: int           # lines stored (durable) by this request
    malformed: int          # lines that needed repair or were unreadable
    first_id: int | None    # store ids of the stored lines, lowest and highest (a large body is stored
    last_id: int | None     # in chunks: other clients' lines may lie between)
    problems: list[LineProblem] = []   # the first malformed lines (at most MAX_REASONS), each with why


def _parse(body: bytes) -> tuple[list, int, dict[str, int], list[dict]]:
    kinds: dict[str, int] = {}
    reasons: list[dict] = []
    records, malformed = parse_ndjson(body, "http", kinds, reasons)
    return records, malformed, kinds, reasons


@router.post("/ingest", response_model=IngestResult, responses={
    400: {"description": "a line the store refused, named; nothing of the body was stored, except for a "
                         "body over 1,000 lines, whose earlier lines may be (the detail names them)"},
    422: {"description": "more lines than one body may hold"},
    507: {"description": "the store's disk is full; nothing of the body was stored, except for a body over "
                         "1,000 lines, whose earlier lines may be (the detail names them) (Retry-After)"}},
    openapi_extra={
    "requestBody": {"required": True, "description": NDJSON_DOC,
                    "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}})
async def ingest(request: Request, appliance: ApplianceDep, _key: KeyDep) -> IngestResult:
    body = await request.body()
    try:   # parsing 100,000 lines takes a while: off the event loop, which must keep answering /health
        records, malformed, kinds, reasons = await run_in_threadpool(_parse, body)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    counters = appliance.counters          # HTTP ingest in /api/stats and /metrics, like the other sources
    counters.add("http", "requests")
    counters.add_problems("http", kinds)
    try:
        ids = await run_in_threadpool(appliance.ingest, records) if records else []
    except ValueError as exc:   # a line the store refused (named); its chunk (INGEST_CHUNK lines) was not stored
        raise HTTPException(400, str(exc)) from None
    except StoreFull as exc:    # that chunk and the rest not stored, not acknowledged: the client retries later
        raise HTTPException(507, str(exc), headers={"Retry-After": "30"}) from None
    counters.add("http", "lines", len(ids))
    return IngestResult(accepted=len(ids), malformed=malformed, first_id=min(ids) if ids else None,
                        last_id=max(ids) if ids else None, problems=[LineProblem(**r) for r in reasons])
