"""The chat route reads a job's events by type (gateway.serve.jobs): a query event's result is the
query's, not the job's; a restart voids the tokens before it; only done ends an answer."""

from __future__ import annotations

import json
import threading

import pytest

from gateway.serve.engine_thread import AnswerBudget
from gateway.serve.jobs import JobHandle


class _Engine:
    """An engine stand-in whose job restarts once and runs a query before its answer."""

    def __init__(self) -> None:
        self.ready, self.error = True, None

    def answer_budget(self, ttft_budget_ms):
        return AnswerBudget(None, False, 0, 2048)

    def prompt_tokens(self, messages):
        return 10

    def submit_chat(self, messages, *, loop, **kw) -> JobHandle:
        h = JobHandle(loop=loop)

        def run():
            h._emit({"type": "token", "id": 1, "text": "void "})
            h._emit({"type": "restart"})
            h._emit({"type": "query", "call": {"op": "count"}, "result": {"count": 99, "completion_tokens": 77}})
            h._emit({"type": "token", "id": 2, "text": "7 lines"})
            h._emit({"type": "done", "result": {"completion_tokens": 2, "prompt_tokens": 10, "finish_reason": "stop"}})

        threading.Thread(target=run, daemon=True).start()
        return h


def test_unknown_event_is_refused():
    with pytest.raises(ValueError):
        JobHandle()._emit({"type": "finished", "result": {}})


@pytest.mark.parametrize("stream", [False, True])
def test_chat_reads_events_by_type(client, auth, appliance, monkeypatch, stream):
    monkeypatch.setattr(appliance, "engine_thread", _Engine())
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
