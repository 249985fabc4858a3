"""GET /health: 503 until the appliance reports its models loaded, then 200. The one route without a key."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str   # "ok" | "loading"
    ready: bool


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
async def health(request: Request) -> JSONResponse:
    """On the event loop, no dependency, no lock: answers while every worker thread is busy."""
    ready = bool(request.app.state.appliance.ready)
    body = Health(status="ok" if ready else "loading", ready=ready)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
