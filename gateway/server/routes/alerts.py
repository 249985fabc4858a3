"""GET /api/alerts (recent, newest first) and GET /api/alerts/stream (SSE: `alert` and `update` events).

Alerts come from the appliance's alert bus (raised by triage rules only); this file only carries them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel

from gateway.server.deps import ApplianceDep, KeyDep

router = APIRouter(prefix="/api/alerts", tags=["alerts"])
MAX_ALERTS = 500   # the bus keeps this many in memory (gateway.pipeline.alerts.MAX_RECENT)


class AlertOut(BaseModel):
    id: int
    ts: float
    kind: str                        # new_template | severity | rule
    severity: str
    host: str
    source: str
    template_id: int | None = None
    template: str
    lines: list[str]
    line_ids: list[int]
    count: int
    rule: str | None = None
    explanation: str | None = None
    explanation_status: str          # pending | done | refused | missed | failed | none
    explanation_ms: float | None = None


class AlertList(BaseModel):
    alerts: list[AlertOut]


@router.get("", response_model=AlertList)
def list_alerts(appliance: ApplianceDep, _key: KeyDep,
                limit: Annotated[int, Query(ge=1, le=MAX_ALERTS)] = 50) -> AlertList:
    return AlertList(alerts=[AlertOut.model_validate(a) for a in appliance.alerts.recent(limit)])


@router.get("/stream", response_class=EventSourceResponse)
async def stream_alerts(appliance: ApplianceDep, _key: KeyDep,
                        recent: Annotated[int, Query(ge=0, le=MAX_ALERTS,
                                                     description="replay this many recent alerts first")] = 0,
                        ) -> AsyncIterator[ServerSentEvent]:
    """Events: `alert` (a new alert) and `update` (its explanation arrived or was refused);
    data is the alert object. With `recent`, the newest alerts are replayed first (oldest first),
    so a client that subscribes misses nothing between its GET and its subscription."""
    sub = appliance.alerts.subscribe(loop=asyncio.get_running_loop())
    try:
        for a in reversed(appliance.alerts.recent(recent) if recent else []):
            yield ServerSentEvent(event="alert", id=str(a["id"]), data=AlertOut.model_validate(a).model_dump())
        async for ev in sub:
            alert: dict[str, Any] = ev["alert"]
            yield ServerSentEvent(event=ev["event"], id=str(alert["id"]),
                                  data=AlertOut.model_validate(alert).model_dump())
    finally:
        sub.close()
