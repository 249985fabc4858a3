"""GET /api/alerts and the SSE stream (alert, then its explanation as an update) over a real uvicorn."""

from __future__ import annotations

import json
import threading

import httpx

from gateway.pipeline.alerts import Alert


def make_alert(text="E-STOP pressed", **kw) -> Alert:
    return Alert(kind=kw.pop("kind", "severity"), severity="error", host="line3/plc", source="demo", template_id=3,
                 template="E-STOP pressed <*>", lines=[text], line_ids=[1], **kw)


def test_list_newest_first(client, auth, appliance):
    for i in range(3):
        appliance.alerts.publish(make_alert(f"alarm {i}"))
    r = client.get("/api/alerts", params={"limit": 2}, headers=auth)
    assert r.status_code == 200
    assert [a["lines"][0] for a in r.json()["alerts"]] == ["alarm 2", "alarm 1"]


def test_stream_delivers_alert_then_update(live_server, appliance):
    url, key = live_server
    appliance.alerts.publish(make_alert("old alarm"))
    events = []
    got_two = threading.Event()

    def reader():
        with httpx.stream("GET", f"{url}/api/alerts/stream?recent=1", headers={"Authorization": f"Bearer {key}"},
                          timeout=10) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            event = None
            for line in r.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    events.append((event, json.loads(line[5:])))
                    if len(events) == 3:
                        got_two.set()
                        return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    # publish only once the stream has subscribed
    for _ in range(100):
        if appliance.alerts.stats().get("subscribers"):
            break
        threading.Event().wait(0.05)
    a = appliance.alerts.publish(make_alert("<img src=x onerror=alert(1)>"))
    appliance.alerts.update(a.id, explanation="The E-stop was pressed.", status="done", explanation_ms=12.0)
    assert got_two.wait(10), events
    assert [e for e, _ in events] == ["alert", "alert", "update"]
    assert events[0][1]["lines"] == ["old alarm"]                 # the replayed recent alert
    assert events[1][1]["lines"] == ["<img src=x onerror=alert(1)>"]
    assert events[2][1]["explanation"] == "The E-stop was pressed." and events[2][1]["id"] == a.id
