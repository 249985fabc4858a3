"""The chat route reads a job's events by type (gateway.serve.jobs): a query event's result is the
query's, not the job's; a restart voids the tokens before it; only done ends an answer."""

from __future__ import annotations

import json

import pytest

from gateway.serve.jobs import JobHandle
from tests.server.stand_in_engine import StandInEngine


def _restart_then_answer(h) -> None:
    """A job that restarts once and runs a query before its answer."""
    h._emit({"type": "token", "id": 1, "text": "void "})
    h._emit({"type": "restart"})
    h._emit({"type": "query", "call": {"op": "count"}, "result": {"count": 99, "completion_tokens": 77}})
    h._emit({"type": "token", "id": 2, "text": "7 lines"})
    h._emit({"type": "done", "result": {"completion_tokens": 2, "prompt_tokens": 10, "finish_reason": "stop"}})


def test_unknown_event_is_refused():
    with pytest.raises(ValueError):
        JobHandle()._emit({"type": "finished", "result": {}})


@pytest.mark.parametrize("stream", [False, True])
def test_chat_reads_events_by_type(client, auth, appliance, monkeypatch, stream):
    monkeypatch.setattr(appliance, "engine_thread", StandInEngine(_restart_then_answer))
    r = client.post("/v1/chat/completions", headers=auth, json={
        "messages": [{"role": "user", "content": "how many?"}], "stream": stream,
        "stream_options": {"include_usage": True} if stream else None})
    assert r.status_code == 200, r.text
    if not stream:
        body = r.json()
        assert body["choices"][0]["message"]["content"] == "7 lines"       # the restart voided "void "
        assert body["usage"]["completion_tokens"] == 2                     # the done event's, not the query's
        return
    chunks = [json.loads(x[6:]) for x in r.text.split("\n\n") if x.startswith("data: {")]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] == 2
