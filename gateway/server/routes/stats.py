"""GET /api/stats: the appliance's figures (engine, ring, cache, admission, ingest) as one JSON object."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter

from gateway.server.deps import ApplianceDep, KeyDep

router = APIRouter(prefix="/api", tags=["stats"])


@router.get("/stats", response_model=dict[str, Any])
def stats(appliance: ApplianceDep, _key: KeyDep) -> dict[str, Any]:
    out = dict(appliance.stats())
    out.setdefault("ready", bool(appliance.ready))
    out["server_time"] = time.time()
    return out
