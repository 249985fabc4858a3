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


class IngestResult(BaseModel):
    accepted: int           # lines stored (durable) by this request
    malformed: int          # lines that needed repair or were unreadable
    first_id: int | None    # store ids of the stored lines: first_id..last_id
    last_id: int | None


@router.post("/ingest", response_model=IngestResult, responses={
    400: {"description": "a line the store refused, named; nothing of the body was stored"},
    422: {"description": "more lines than one body may hold"},
    507: {"description": "the store's disk is full; nothing of the body was stored (Retry-After)"}},
    openapi_extra={
    "requestBody": {"required": True, "description": NDJSON_DOC,
                    "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}})
async def ingest(request: Request, appliance: ApplianceDep, _key: KeyDep) -> IngestResult:
    body = await request.body()
    problems: dict[str, int] = {}
    try:
        records, malformed = parse_ndjson(body, source="http", problems=problems)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    appliance.counters.add_problems("http", problems)
    try:
        ids = await run_in_threadpool(appliance.ingest, records) if records else []
    except ValueError as exc:   # a line the store refused (named); nothing of this body was stored
        raise HTTPException(400, str(exc)) from None
    except StoreFull as exc:    # nothing stored, nothing acknowledged: the client retries later
        raise HTTPException(507, str(exc), headers={"Retry-After": "30"}) from None
    return IngestResult(accepted=len(ids), malformed=malformed,
                        first_id=ids[0] if ids else None, last_id=ids[-1] if ids else None)
