"""POST /api/ingest: a batch of NDJSON log lines, acknowledged only once the store holds them durably.

Parsing is the pipeline's (gateway.ingest.ndjson); this file only moves the body and the answer.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from gateway.ingest.ndjson import parse_ndjson
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


@router.post("/ingest", response_model=IngestResult, openapi_extra={
    "requestBody": {"required": True, "description": NDJSON_DOC,
                    "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}})
async def ingest(request: Request, appliance: ApplianceDep, _key: KeyDep) -> IngestResult:
    body = await request.body()
    try:   # parsing 100,000 lines takes a while: off the event loop, which must keep answering /health
        records, malformed = await run_in_threadpool(parse_ndjson, body, "http")
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    ids = await run_in_threadpool(appliance.ingest, records) if records else []
    return IngestResult(accepted=len(ids), malformed=malformed,
                        first_id=ids[0] if ids else None, last_id=ids[-1] if ids else None)
