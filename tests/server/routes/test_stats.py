"""GET /api/stats: the appliance's sections plus the `ui` block the status panel charts."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from gateway.appliance import Appliance
from gateway.llm.engine import resolve_act_precision
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.server.routes.stats import ui_stats
from gateway.settings import Settings
from tests.server.conftest import add_lines


def test_stats_sections_and_ui_block(client, auth, appliance):
    add_lines(appliance, "a", "b", "c")
    s = client.get("/api/stats", headers=auth).json()
    assert s["ready"] is True and s["store"]["rows"] == 3 and s["ingest"]["lines"] == 3
    assert s["ui"]["ingest_lines_total"] == 3 and s["ui"]["facts"]["stored_lines"] == "3"


def test_stats_name_the_sources_learning_their_baseline(client, auth, appliance):
    add_lines(appliance, "pump 3 started", "valve 2 closed")
    s = client.get("/api/stats", headers=auth).json()
    assert s["triage"]["sources_learning"]["test"]["lines"] == 2
    assert s["ui"]["learning"] == [{"source": "test", "lines": 2, "lines_left": 1998, "s_left": 599.0}]


def test_ui_block_from_engine_figures():
    s = {"engine": {"n_sink": 40, "n_ring": 2048, "n_scratch": 512, "sink_used": 40, "ring_used": 1000,
                    "scratch_used": 0, "model": "m.gguf"},
         "admission": {"decode_ms_per_tok": 50.0, "prefill_ms_per_tok": 5.0, "missed": 2, "admitted": 9, "refused": 1},
         "token_queue": {"dropped_entries": 7, "lag_s": 0.25}, "ingest": {"lines": 100},
         "speculative": {"proposed": 40, "accepted": 30}}
    u = ui_stats(s)
    assert u.decode_tok_s == 20.0 and u.prefill_tok_s == 200.0 and u.acceptance_rate == 0.75
    assert (u.kv.sink, u.kv.ring, u.kv.scratch, u.kv.capacity) == (40, 1000, 0, 2600)
    assert (u.token_queue_drops_total, u.deadline_misses_total, u.ingest_lines_total) == (7, 2, 100)


def test_ui_block_fleet_figures():
    """What the box shipped ([fleet], gateway/fleet/shipper.py figures()) under fixed names; none without it."""
    f = {"box_id": "line3", "shipped": 120, "pending": 30, "oldest_unshipped_s": 4.5, "last_error": "no answer",
         "last_error_at": 1.8e9, "dropped_unshipped": 0, "rejected": 0, "failures": 2, "cursor": 120}
    u = ui_stats({"fleet": f}).fleet
    assert (u.box_id, u.shipped, u.pending, u.oldest_unshipped_s, u.last_error) == ("line3", 120, 30, 4.5, "no answer")
    assert ui_stats({}).fleet is None


@pytest.mark.models
@pytest.mark.parametrize("policy,precision", [("semantic", "q8"), ("novelty", "auto")])
def test_kv_policy_setting_reaches_the_engine_and_stats(tmp_path, policy, precision):
    """engine.kv_policy and engine.act_precision: the engine runs them and /api/stats names them (the
    policy in the engine section and ui facts; "auto" as what it resolved to on this machine)."""
    s = Settings(data_dir=tmp_path, engine={"enabled": True, "model": "smollm2-135m-instruct", "n_ring": 256,
                                            "n_scratch": 384, "kv_policy": policy, "kv_block": 32,
                                            "act_precision": precision},
                 ingest={"demo": {"enabled": False}})
    a = Appliance(s).start()
    try:
        end = time.monotonic() + 300
        while not a.ready and time.monotonic() < end:
            time.sleep(0.2)
        assert a.ready
        key = KeyStore(s.server.key_path(s.data_dir)).create(name="test")
        client = TestClient(create_app(a, s))
        st = client.get("/api/stats", headers={"Authorization": f"Bearer {key}"}).json()
        assert st["engine"]["kv_policy"] == policy and st["ui"]["facts"]["kv_policy"] == policy
        assert st["engine"]["evicted_similar"] == 0 and "shifted_keys" in st["engine"]
        assert st["engine"]["act_precision"] == resolve_act_precision(precision)
        # read less, by budget ([token_queue] read_share): the feed follows the engine's measured reading
        # rate, and what it folds or skips is counted in /api/stats, the UI and /metrics (issue 42)
        assert a.feed.reading_rate is not None and a.feed.reading_rate() > 0
        q = st["token_queue"]
        assert {"summarised_lines", "skipped_lines", "oldest_unread_s", "budget"} <= set(q)
        assert "summarised_skipped" in st["ui"]["facts"]
        m = client.get("/metrics", headers={"Authorization": f"Bearer {key}"}).text
        assert "linegate_oldest_unread_seconds" in m and "linegate_token_queue_skipped_lines_total" in m
    finally:
        a.stop()


def test_semantic_policy_needs_whole_blocks():
    with pytest.raises(ValidationError, match="multiple of engine.kv_block"):
        Settings(engine={"n_ring": 100, "kv_policy": "semantic", "kv_block": 32})
    with pytest.raises(ValidationError, match="kv_policy"):
        Settings(engine={"kv_policy": "lru"})
    with pytest.raises(ValidationError, match="act_precision"):
        Settings(engine={"act_precision": "q4"})
    assert Settings(engine={"n_ring": 128, "kv_policy": "semantic", "kv_block": 32}).engine.kv_policy == "semantic"
    # switching to novelty alone: the default ring holds whole blocks of the default (measured) size
    e = Settings(engine={"kv_policy": "novelty"}).engine
    assert e.kv_block == 16 and e.n_ring % e.kv_block == 0


@pytest.mark.models
def test_novelty_keeps_the_line_the_triage_alerted_on(tmp_path):
    """The appliance path: an ERROR line (a severity alert), then many lines of one template; under
    kv_policy = novelty the ERROR line's tokens are still in the cache long after the ring wrapped."""
    s = Settings(data_dir=tmp_path, engine={"enabled": True, "model": "smollm2-135m-instruct", "n_ring": 128,
                                            "n_scratch": 384, "kv_policy": "novelty", "kv_block": 16},
                 token_queue={"collapse_window_s": 0, "read_share": 0},   # every line read: no budget
                 ingest={"demo": {"enabled": False}})
    a = Appliance(s).start()
    try:
        end = time.monotonic() + 300
        while not a.ready and time.monotonic() < end:
            time.sleep(0.2)
        eng = a.engine_thread.engine
        first = eng.stream_total                       # the ERROR line starts here
        add_lines(a, "ERROR pump P-7 stalled, code 4471", *[f"INFO cycle {i} complete" for i in range(120)])
        last = -1
        while time.monotonic() < end and (a.feed.queue.backlog_tokens() or eng.stream_total != last):
            last = eng.stream_total
            time.sleep(0.5)
        assert eng.stream_total > first + 4 * 128, "the ring wrapped several times"
        kept = set(eng.native.kept_stream_index().tolist())
        assert first in kept and first + 5 in kept
        assert eng.stats()["evicted_oldest"] > 0
    finally:
        a.stop()
