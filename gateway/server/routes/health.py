"""GET /health: 503 until the appliance reports its models loaded, then 200. The one route without a key."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from gateway.server.deps import ApplianceDep

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str   # "ok" | "loading"
    ready: bool


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
def health(appliance: ApplianceDep) -> JSONResponse:
    ready = bool(appliance.ready)
    body = Health(status="ok" if ready else "loading", ready=ready)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
