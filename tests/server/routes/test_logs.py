"""GET /api/logs/search and /api/logs/{id}/around against a real store."""

from __future__ import annotations

from tests.server.conftest import add_lines

T0 = 1_700_000_000.0


def test_search_text_and_limit(client, auth, appliance):
    add_lines(appliance, "conveyor jam at station 4", "temperature 71C ok", "WARN conveyor jam cleared")
    add_lines(appliance, "ERROR filler valve stuck", host="line3/filler")
    r = client.get("/api/logs/search", params={"q": "jam", "limit": 10}, headers=auth)
    assert r.status_code == 200
    texts = [x["text"] for x in r.json()["results"]]
    assert texts == ["WARN conveyor jam cleared", "conveyor jam at station 4"]   # newest first
    assert r.json()["count"] == 2
    r = client.get("/api/logs/search", params={"q": "jam", "limit": 1}, headers=auth)
    assert len(r.json()["results"]) == 1


def test_filters(client, auth, appliance):
    add_lines(appliance, "cycle 1 done", "WARN pressure low", ts=T0)
    add_lines(appliance, "ERROR filler valve stuck", host="line3/filler", ts=T0 + 100)
    get = lambda **p: [x["text"] for x in client.get("/api/logs/search", params=p, headers=auth).json()["results"]]
    assert get(host="line3/filler") == ["ERROR filler valve stuck"]
    assert get(severity="warning") == ["ERROR filler valve stuck", "WARN pressure low"]
    assert get(since=str(T0 + 50)) == ["ERROR filler valve stuck"]
    assert get(until="2023-11-14T22:13:20.5") == ["cycle 1 done"]        # ISO 8601, UTC (T0 = 22:13:20)
    first = client.get("/api/logs/search", params={"limit": 1, "after_id": 0}, headers=auth).json()["results"]
    assert first[0]["text"] == "cycle 1 done"                               # after_id: oldest first


def test_bad_parameters_are_422_naming_them(client, auth):
    r = client.get("/api/logs/search", params={"since": "yesterday"}, headers=auth)
    assert r.status_code == 422 and "since" in r.text
    r = client.get("/api/logs/search", params={"severity": "loud"}, headers=auth)
    assert r.status_code == 422 and "loud" in r.text
    assert client.get("/api/logs/search", params={"limit": 0}, headers=auth).status_code == 422


def test_fts_syntax_in_user_text_is_literal(client, auth, appliance):
    add_lines(appliance, 'sensor "A" NEAR(x) value')
    for q in ['"', "NEAR(", "a OR", "*", "text:foo", "(((", "^x"]:
        r = client.get("/api/logs/search", params={"q": q}, headers=auth)
        assert r.status_code == 200, (q, r.text)


def test_around(client, auth, appliance):
    ids = add_lines(appliance, *[f"line {i}" for i in range(30)])
    r = client.get(f"/api/logs/{ids[15]}/around", params={"n": 3}, headers=auth)
    assert [x["id"] for x in r.json()["results"]] == ids[12:19]
    assert client.get("/api/logs/999999/around", headers=auth).status_code == 404
