"""Typed FastAPI dependencies: the appliance, its parts, the server settings and the caller's key.

Knows nothing about how the appliance is built; routes take what they need from here.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from gateway.appliance import Appliance
from gateway.server.auth import KeyRecord, KeyStore, RateLimiter
from gateway.server.settings import ServerSettings

_bearer = HTTPBearer(auto_error=False, description="an API key from `linegate keys create`")


class ErrorDetail(BaseModel):
    detail: str | list[dict[str, Any]]   # a message, or FastAPI's list of validation errors


# Responses every keyed route can give (documented so clients and schema checks know them).
KEYED_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorDetail, "description": "missing or wrong API key"},
    413: {"model": ErrorDetail, "description": "request body over the size limit"},
    422: {"model": ErrorDetail, "description": "invalid parameters or body"},
    429: {"model": ErrorDetail, "description": "over the per-key rate limit (Retry-After)"},
}


# The dependencies are async (on the event loop): they do no I/O beyond a stat of the key file, and
# a sync dependency would take a worker thread per request (issue 30: the pool must not be the queue).
async def get_appliance(request: Request) -> Appliance:
    return request.app.state.appliance


async def get_server_settings(request: Request) -> ServerSettings:
    return request.app.state.server_settings


def get_keys(request: Request) -> KeyStore:
    return request.app.state.keys


def get_rate_limiter(request: Request) -> RateLimiter:
    return request.app.state.rate_limiter


ApplianceDep = Annotated[Appliance, Depends(get_appliance)]
ServerSettingsDep = Annotated[ServerSettings, Depends(get_server_settings)]


async def require_key(request: Request,
                      credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> KeyRecord:
    """401 without a valid `Authorization: Bearer KEY`; 429 with Retry-After over the key's rate, or
    for a client address whose failed keys are over FAILED_KEY_RATE (the key is not even checked)."""
    settings: ServerSettings = request.app.state.server_settings
    presented = credentials.credentials.strip() if credentials else ""
    if not settings.require_key:
        record = KeyRecord(id="anonymous", hash="", name="anonymous", created=0.0)
    else:
        client = request.client.host if request.client else "?"
        failed: RateLimiter = request.app.state.failed_keys
        wait_s = failed.waiting(client)
        if wait_s > 0:
            raise HTTPException(429, f"too many failed keys from {client}: wait {wait_s:.0f} s",
                                headers={"Retry-After": str(max(1, round(wait_s + 0.5)))})
        record = get_keys(request).verify(presented) if presented else None
        if record is None:
            failed.take(client)
            raise HTTPException(401, "missing or wrong API key: send `Authorization: Bearer KEY` "
                                     "(create one with `linegate keys create --data-dir DIR`)",
                                headers={"WWW-Authenticate": "Bearer"})
    wait_s = get_rate_limiter(request).take(record.id)
    if wait_s > 0:
        raise HTTPException(429, f"rate limit: {settings.rate_limit_per_s:g} requests/s per key "
                                 f"(burst {settings.rate_limit_burst})",
                            headers={"Retry-After": str(max(1, round(wait_s + 0.5)))})
    return record


KeyDep = Annotated[KeyRecord, Depends(require_key)]
