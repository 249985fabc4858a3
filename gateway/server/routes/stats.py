"""GET /api/stats: the appliance's figures (engine, token queue, KV cache, admission, ingest, triage, fleet) as one
JSON object, plus a `ui` block: the few figures the status panel charts, the sources still learning
their baseline (triage's `sources_learning`) and what the box has shipped (`fleet`), under fixed names.
`?summaries=N` adds `token_queue.recent_summaries`: the figures of the last N summaries the model read
(count, span, hosts, store ids, parameter ranges), for checks against the store (tools/bench/soak.py).

Knows the shape of Appliance.stats() only here, so the web UI does not depend on it.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from gateway.server.deps import ApplianceDep, KeyDep

router = APIRouter(prefix="/api", tags=["stats"])


class KvOccupancy(BaseModel):
    sink: int = 0          # slots used, per layer
    ring: int = 0
    scratch: int = 0
    capacity: int = 0      # n_sink + n_ring + n_scratch


class LearningSource(BaseModel):
    """A source still learning its baseline: no new-kind alerts for it yet (gateway/pipeline/baseline.py)."""
    source: str
    lines: int                 # lines learned from
    lines_left: int            # lines still to learn
    s_left: float              # seconds of its record time still to learn


class UiFleet(BaseModel):
    """What the box has shipped to the plant's ClickHouse (gateway/fleet/shipper.py figures())."""
    box_id: str
    shipped: int = 0                           # lines acknowledged, all runs
    pending: int = 0                           # stored lines not shipped yet
    oldest_unshipped_s: float | None = None    # age of the first of them (None: none waits)
    last_error: str | None = None
    last_error_at: float | None = None
    dropped_unshipped: int = 0                 # deleted by retention before they were shipped (the cap)


class UiStats(BaseModel):
    decode_tok_s: float | None = None          # from the admission EMA of decode ms/token
    prefill_tok_s: float | None = None
    acceptance_rate: float | None = None       # speculative drafts accepted / proposed (when a drafter runs)
    kv: KvOccupancy = KvOccupancy()
    token_queue_drops_total: int | None = None # context lines dropped from the token queue (the engine lagged)
    deadline_misses_total: int | None = None
    refused_total: int | None = None
    ingest_lines_total: int | None = None
    facts: dict[str, str] = {}                 # fact id (model, stored_lines, ...) -> value, shown as text
    learning: list[LearningSource] = []        # sources learning their baseline (the UI's "learning" badge)
    fleet: UiFleet | None = None               # None: the box ships nothing ([fleet] off)


class Stats(BaseModel):
    model_config = {"extra": "allow"}          # the appliance's own sections ride along as they are
    ready: bool
    server_time: float
    ui: UiStats


def _rate(ms_per_tok: Any) -> float | None:
    return 1000.0 / ms_per_tok if isinstance(ms_per_tok, (int, float)) and ms_per_tok > 0 else None


def ui_stats(s: dict[str, Any]) -> UiStats:
    eng, adm, queue = s.get("engine") or {}, s.get("admission") or {}, s.get("token_queue") or {}
    spec = s.get("speculative") or eng.get("speculative") or {}
    proposed, accepted = spec.get("proposed"), spec.get("accepted")
    acc = spec.get("acceptance_rate")
    if acc is None and proposed:
        acc = accepted / proposed
    kv = KvOccupancy(sink=eng.get("sink_used", 0), ring=eng.get("ring_used", 0), scratch=eng.get("scratch_used", 0),
                     capacity=eng.get("n_sink", 0) + eng.get("n_ring", 0) + eng.get("n_scratch", 0))
    facts = {}
    if eng.get("model"):
        facts["model"] = str(eng["model"])
    if eng.get("kv_policy"):
        facts["kv_policy"] = str(eng["kv_policy"])
        if eng.get("kv_policy_requested") not in (None, eng["kv_policy"]):   # a block policy on the CUDA engine
            facts["kv_policy"] += f" ({eng['kv_policy_requested']} is CPU-only)"
    if "stream_total" in eng:
        facts["stream_tokens"] = str(eng["stream_total"])
    if queue.get("lag_s") is not None:
        facts["engine_lag"] = f"{queue['lag_s']:.1f} s"
    if queue.get("oldest_unread_s") is not None:          # the reading lag, open summaries included
        facts["oldest_unread"] = f"{queue['oldest_unread_s']:.1f} s"
    if "summarised_lines" in queue:                          # read less, by budget: counted, never silent
        facts["summarised_skipped"] = f"{queue['summarised_lines']} / {queue.get('skipped_lines', 0)}"
    if "store" in s:
        facts["stored_lines"] = str(s["store"].get("rows", 0))
    if (node := s.get("fleet_node")) and "lines" in node:      # the fleet node: the plant's lines in ClickHouse
        facts["fleet_lines"] = str(node["lines"])
        facts["boxes"] = str(len(node.get("boxes") or []))
    if adm:
        facts["jobs"] = f"{adm.get('admitted', 0)} / {adm.get('refused', 0)}"
    if s.get("uptime_s") is not None:
        facts["uptime"] = f"{s['uptime_s'] / 60:.0f} min"
    learning = [LearningSource(source=k, lines=v.get("lines", 0), lines_left=v.get("lines_left", 0),
                               s_left=v.get("s_left", 0.0))
                for k, v in sorted(((s.get("triage") or {}).get("sources_learning") or {}).items())]
    f = s.get("fleet")
    fleet = UiFleet(**{k: f[k] for k in UiFleet.model_fields if f.get(k) is not None}) if f else None
    return UiStats(decode_tok_s=_rate(adm.get("decode_ms_per_tok")), prefill_tok_s=_rate(adm.get("prefill_ms_per_tok")),
                   learning=learning, acceptance_rate=acc, kv=kv, token_queue_drops_total=queue.get("dropped_entries"),
                   deadline_misses_total=adm.get("missed"), refused_total=adm.get("refused"),
                   ingest_lines_total=(s.get("ingest") or {}).get("lines"), facts=facts, fleet=fleet)


@router.get("/stats", response_model=Stats)
async def stats(appliance: ApplianceDep, _key: KeyDep,
                summaries: int = Query(0, ge=0, le=1000, description="also the figures of the last N summaries "
                                       "the model read (token_queue.recent_summaries; the feed keeps a few hundred)"),
                ) -> dict[str, Any]:
    s = dict(appliance.stats())    # snapshots and counters only: cheap enough for the event loop
    if summaries and appliance.feed is not None:     # what tools/bench/soak.py holds against the store
        s["token_queue"] = dict(s.get("token_queue") or {}) | {
            "recent_summaries": appliance.feed.recent_summaries(summaries)}
    if appliance.fleet_reader is not None:     # a fleet node: lines per box, read from ClickHouse off the loop
        s["fleet_node"] = await run_in_threadpool(appliance.fleet_node_stats)
    s["ready"] = bool(appliance.ready)
    s["server_time"] = time.time()
    s["ui"] = ui_stats(s)
    return s
