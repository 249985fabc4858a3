"""GET /api/stats?summaries=N: the figures of the last N summaries the feed sent the model, oldest first and
bounded (what tools/bench/soak.py checks against the store); absent without the parameter."""

from __future__ import annotations

from gateway.pipeline.token_queue import ContextFeed, TokenQueue


def _feed_with_summaries(rounds: int) -> ContextFeed:
    """A feed without a budget (no reading rate): per round, two templates' lines fold and close."""
    now = [0.0]
    feed = ContextFeed(TokenQueue(1 << 14, 1 << 10), lambda s: [7] * max(1, len(s) // 4), 1.0, clock=lambda: now[0])
    line_id = 0
    for r in range(rounds):
        for k in range(6):
            for tid, word in ((1, "heater"), (2, "cooler")):
                line_id += 1
                v = f"{70 + k + r % 5}.5"
                feed.add(now[0], f"line3/{word}", tid, f"{word} temperature {v} C",
                         template=f"{word} temperature <NUM> C", params=[(v, float(v))], line_id=line_id)
            now[0] += 0.1
        now[0] += 1.0
        feed.tick()
    return feed


def test_recent_summaries_are_served_oldest_first_and_bounded(client, auth, appliance):
    appliance.feed = feed = _feed_with_summaries(200)       # the engine-less appliance: its stats read the feed
    held = list(feed.budget.recent_summaries)
    assert len(held) == feed.budget.recent_summaries.maxlen        # more summaries than it keeps
    assert "recent_summaries" not in client.get("/api/stats", headers=auth).json()["token_queue"]
    got = client.get("/api/stats", params={"summaries": 3}, headers=auth).json()["token_queue"]["recent_summaries"]
    assert len(got) == 3
    for g, s in zip(got, held[-3:]):
        assert g["text"] == s["text"] and g["count"] == s["count"] and g["hosts"] == s["hosts"]
        assert (g["template_id"], g["first_id"], g["last_id"]) == (s["template_id"], s["first_id"], s["last_id"])
        assert g["ranges"] == [list(r) for r in s["ranges"]]
        assert (g["first_ts"], g["last_ts"]) == (s["first_ts"], s["last_ts"])
    assert got[-1]["last_id"] > got[0]["last_id"]           # oldest first
    every = client.get("/api/stats", params={"summaries": 1000}, headers=auth).json()["token_queue"]
    assert len(every["recent_summaries"]) == feed.budget.recent_summaries.maxlen    # bounded by the feed
    assert client.get("/api/stats", params={"summaries": 1001}, headers=auth).status_code == 422


def test_no_feed_no_summaries(client, auth):
    s = client.get("/api/stats", params={"summaries": 5}, headers=auth).json()
    assert "recent_summaries" not in (s.get("token_queue") or {})
