"""POST /api/ingest: NDJSON lines are stored durably before the answer; malformed lines are counted, not lost."""

from __future__ import annotations

import json


def test_ingest_stores_and_counts(client, auth, appliance):
    body = "\n".join([json.dumps({"text": "ERROR valve stuck", "host": "line3/filler", "severity": "error"}),
                      json.dumps({"text": "cycle 5 done", "ts": 1_700_000_000.5}),
                      "not json at all {",
                      ""])
    r = client.post("/api/ingest", content=body, headers={**auth, "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["accepted"] == 3 and out["malformed"] == 1
    rows = appliance.store.search(after_id=out["first_id"] - 1, limit=10)
    assert [x["text"] for x in rows] == ["ERROR valve stuck", "cycle 5 done", "not json at all {"]
    assert rows[0]["host"] == "line3/filler" and rows[0]["severity"] == "error"
    assert rows[1]["ts"] == 1_700_000_000.5
    # the error line went through triage: an alert came out
    assert any(a["lines"] == ["ERROR valve stuck"] for a in appliance.alerts.recent(10))


def test_empty_body(client, auth):
    r = client.post("/api/ingest", content=b"", headers=auth)
    assert r.status_code == 200 and r.json() == {"accepted": 0, "malformed": 0, "first_id": None, "last_id": None,
                                                 "problems": []}


def test_binary_garbage_is_kept_as_text(client, auth, appliance):
    r = client.post("/api/ingest", content=b"\xff\xfe\x00bin\n", headers=auth)
    assert r.status_code == 200 and r.json()["accepted"] == 1 and r.json()["malformed"] == 1


def test_reply_names_malformed_lines_and_stats_count_http(client, auth, appliance):
    body = "\n".join([json.dumps({"text": "ok line"}), "{broken", json.dumps({"text": "bell\u0007 esc\u001b nul\u0000"}),
                      json.dumps({"host": "h"}), json.dumps({"text": "fine", "severity": "loud"})])
    r = client.post("/api/ingest", content=body, headers=auth)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["accepted"] == 5 and out["malformed"] == 4
    assert out["problems"] == [{"line": 2, "problems": ["not_json"]}, {"line": 3, "problems": ["binary"]},
                               {"line": 4, "problems": ["no_text"]}, {"line": 5, "problems": ["bad_field"]}]
    # JSON-decoded control characters are escaped as raw bytes are
    stored = appliance.store.search(after_id=out["first_id"] - 1, limit=10)
    assert stored[2]["text"] == "bell\\x07 esc\\x1b nul\\x00"
    http = client.get("/api/stats", headers=auth).json()["ingest"]["sources"]["http"]
    assert http["lines"] == 5 and http["requests"] == 1 and http["not_json"] == 1
    assert 'linegate_source_events_total{kind="lines",source="http"} 5.0' in client.get("/metrics", headers=auth).text


def test_lone_surrogate_in_json_text_is_stored_replaced(client, auth, appliance):
    r = client.post("/api/ingest", content=b'{"text": "half \\ud800 pair"}', headers=auth)
    assert r.status_code == 200 and r.json()["problems"] == [{"line": 1, "problems": ["lone_surrogate"]}]
    assert appliance.store.get(r.json()["first_id"])["text"] == "half \ufffd pair"


def test_lone_surrogate_line_is_cleaned_and_its_neighbours_stored(client, auth, appliance):
    body = b'{"text": "before"}\n{"text": "a\\ud800b"}\n{"text": "after"}\n'
    r = client.post("/api/ingest", content=body, headers=auth)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["accepted"] == 3 and out["malformed"] == 1
    rows = appliance.store.search(after_id=out["first_id"] - 1, limit=10)
    assert [x["text"] for x in rows] == ["before", "a\ufffdb", "after"]
    assert appliance.stats()["ingest"]["sources"]["http"]["lone_surrogate"] == 1


def test_full_store_answers_507_and_stores_nothing(client, auth, appliance):
    db = appliance.store._writer_db
    appliance.store.flush()
    db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
    body = "\n".join(json.dumps({"text": f"line {i} " + "y" * 2000}) for i in range(100))
    r = client.post("/api/ingest", content=body, headers=auth)
    assert r.status_code == 507 and "is full" in r.json()["detail"] and r.headers["Retry-After"] == "30"
    assert appliance.store.count() == 0
    db.execute("PRAGMA max_page_count=1073741823")
    r = client.post("/api/ingest", content=body, headers=auth)
    assert r.status_code == 200 and r.json()["accepted"] == 100


def test_a_refusal_after_earlier_chunks_names_what_was_stored(client, auth, appliance, monkeypatch):
    """A body over INGEST_CHUNK lines is committed in chunks; if a later chunk is refused, the
    answer says which lines of the body are stored already."""
    import gateway.appliance as appliance_mod
    from gateway.pipeline.store import StoreFull
    monkeypatch.setattr(appliance_mod, "INGEST_CHUNK", 2)
    real = appliance.store.append
    calls = []

    def append(records, *a, **k):
        calls.append(len(records))
        if len(calls) == 2:
            raise StoreFull("store is full")
        return real(records, *a, **k)

    monkeypatch.setattr(appliance.store, "append", append)
    body = "\n".join(json.dumps({"text": f"line {i}"}) for i in range(5))
    r = client.post("/api/ingest", content=body, headers=auth)
    assert r.status_code == 507 and "the first 2 lines of this batch were stored" in r.json()["detail"]
    assert appliance.store.count() == 2
