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


def test_alert_families_label_each_kind_and_explanation_status(client, auth, appliance):
    from gateway.pipeline import alerts as bus

    for kind in ("new_template", "severity", "rule", "rule"):
        alert = appliance.alerts.publish(bus.Alert(kind=kind, severity="error", host="h", source="test",
                                                   template_id=None, template="t", lines=["x"]))
    appliance.alerts.update(alert.id, status=bus.FAILED)
    appliance.alerts.update(alert.id, explanation="a jam", status=bus.DONE)
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics", headers=auth).text)}

    def totals(name: str, label: str) -> dict:
        return {s.labels[label]: s.value for s in families[name].samples if s.name.endswith("_total")}
    assert totals("linegate_alerts", "kind") == {"new_template": 1, "severity": 1, "rule": 2}
    assert totals("linegate_alert_explanations", "status") == {"failed": 1, "done": 1}


def test_alert_label_tables_cover_every_kind_and_status():
    from gateway.appliance import ALERT_KIND_LABELS, EXPLANATION_STATUS_LABELS
    from gateway.pipeline import alerts as bus

    assert set(ALERT_KIND_LABELS.values()) == {"new_template", "severity", "rule"}
    assert set(EXPLANATION_STATUS_LABELS.values()) == {bus.PENDING, bus.DONE, bus.REFUSED, bus.MISSED, bus.FAILED,
                                                       bus.NONE}
    assert all(k == f"kind_{v}" for k, v in ALERT_KIND_LABELS.items())
    assert all(k == f"explanation_{v}" for k, v in EXPLANATION_STATUS_LABELS.items())
