"""The official `openai` client against a real server (uvicorn) answering from SmolLM2-135M's live context."""

from __future__ import annotations

import time

import openai
import pytest

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def client(model_server):
    url, key, _ = model_server
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=180)


def test_models(client):
    ids = [m.id for m in client.models.list()]
    assert ids == ["smollm2-135m-instruct"]


def test_non_stream(client):
    r = client.chat.completions.create(model="linegate", max_tokens=12,
                                       messages=[{"role": "user", "content": "Was there a jam?"}])
    choice = r.choices[0]
    assert choice.message.role == "assistant" and choice.message.content.strip()
    assert choice.finish_reason in ("stop", "length")
    assert 0 < r.usage.completion_tokens <= 12 and r.usage.prompt_tokens > 0
    sources = r.model_extra["sources"]       # the store lines the question named ("jam", capper)
    assert sources and all("id" in s and "text" in s for s in sources)
    assert any("jam" in s["text"].lower() for s in sources)


def test_stream(client, model_server):
    store = model_server[2].store
    end = time.monotonic() + 60
    while not store.search("heater", limit=1) and time.monotonic() < end:   # the demo's jam ends after 4 cycles
        time.sleep(0.2)
    stream = client.chat.completions.create(model="linegate", max_tokens=12, stream=True,
                                            stream_options={"include_usage": True},
                                            messages=[{"role": "user", "content": "What is the heater temperature?"}])
    pieces, finish, sources, usage = [], None, None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            pieces.append(delta.content)
        if chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
            sources = (chunk.model_extra or {}).get("sources")
    assert len(pieces) >= 2 and "".join(pieces).strip()        # tokens arrived one by one
    assert finish in ("stop", "length")
    assert sources and any("heater" in s["text"] for s in sources)
    assert usage.completion_tokens == len(pieces) or usage.completion_tokens >= len(pieces) - 1


def test_wrong_key_is_authentication_error(model_server):
    url, _, _ = model_server
    bad = openai.OpenAI(base_url=url + "/v1", api_key="lg_wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_drafter_figures_reach_the_stats_api(client, model_server):
    """The appliance answers through the n-gram drafter (the default): after an answer, /api/stats
    carries the drafter's counts and the UI's acceptance rate."""
    import httpx

    url, key, _ = model_server
    client.chat.completions.create(model="linegate", max_tokens=12,
                                   messages=[{"role": "user", "content": "Repeat the last log line."}])
    s = httpx.get(url + "/api/stats", headers={"Authorization": f"Bearer {key}"}, timeout=30).json()
    spec = s["speculative"]
    assert spec["drafter"] == "ngram" and spec["target_forwards"] >= 1 and spec["decoded"] >= 1
    assert s["drafter"] == {"configured": "ngram", "running": "ngram", "why": "configured"}
    if spec["proposed"]:
        assert s["ui"]["acceptance_rate"] == pytest.approx(spec["accepted"] / spec["proposed"])
    else:
        assert s["ui"]["acceptance_rate"] is None
