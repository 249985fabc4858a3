"""GET /metrics: Prometheus text with the appliance's and the server's metrics."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.server.conftest import add_lines


def test_metrics_parse_and_count(client, auth, appliance):
    add_lines(appliance, "x", "y")
    client.get("/api/stats", headers=auth)
    r = client.get("/metrics", headers=auth)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    assert families["linegate_ingest_lines"].samples[0].value == 2
    reqs = [s for s in families["linegate_http_requests"].samples
            if s.name.endswith("_total") and s.labels["route"] == "/api/stats"]
    assert reqs and reqs[0].labels["status"] == "200"
    # unmatched paths share one label value (no label explosion)
    client.get("/no/such/path/123", headers=auth)
    r = client.get("/metrics", headers=auth)
    assert "/no/such/path/123" not in r.text
