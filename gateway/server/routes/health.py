"""GET /health: 503 until the appliance reports its models loaded, then 200; 503 with the reason when the
engine cannot start (a corrupt model file). The one route without a key."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str   # "ok" | "loading" | "error"
    ready: bool
    reason: str | None = None   # why not ready (status "error": the engine's start error)


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
async def health(request: Request) -> JSONResponse:
    """On the event loop, no dependency, no lock: answers while every worker thread is busy."""
    a = request.app.state.appliance
    ready = bool(a.ready)
    reason = None if ready else a.not_ready_reason
    status = "ok" if ready else "loading" if reason in (None, "loading") else "error"
    body = Health(status=status, ready=ready, reason=reason)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
