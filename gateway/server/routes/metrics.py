"""GET /metrics: Prometheus text of the appliance's registry followed by the server's own."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gateway.server.deps import ApplianceDep, KeyDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=PlainTextResponse,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
async def metrics(appliance: ApplianceDep, _key: KeyDep, request: Request) -> PlainTextResponse:
    parts = []      # the collectors read snapshots (never a lock ingest holds): fine on the event loop
    registry = getattr(appliance, "registry", None)
    if registry is not None:
        parts.append(generate_latest(registry))
    parts.append(generate_latest(request.app.state.metrics.registry))
    return PlainTextResponse(b"".join(parts).decode(), media_type=CONTENT_TYPE_LATEST)
