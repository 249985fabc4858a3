"""[fleet] settings refuse what would ship wrongly, naming the key; `linegate fleet init | status` run."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from gateway.fleet.cli import main
from gateway.fleet.client import ClickHouseHttp
from gateway.fleet.settings import FleetSettings
from gateway.pipeline.store import Store


def test_absent_urls_ship_nothing_and_need_no_box(tmp_path):
    s = FleetSettings()
    assert not s.enabled and s.batch_lines == 10_000 and s.max_unshipped_lines == 2_000_000
    node = FleetSettings(urls=["http://ch:8123"])
    assert node.enabled and not node.ships
    from gateway.fleet.shipper import Shipper

    with pytest.raises(ValueError, match="fleet.box_id is empty"):
        Shipper(node, tmp_path / "logs.db")


@pytest.mark.parametrize("bad, key", [
    ({"urls": ["http://ch:8123"], "box_id": "line 3"}, "box_id"),
    ({"urls": ["ch:8123"], "box_id": "l3"}, "urls"),
    ({"database": "x;drop"}, "database"),
    ({"cluster": "a-b"}, "cluster"),
    ({"batch_lines": 0}, "batch_lines"),
    ({"backoff_max_s": 0.1}, "backoff_max_s"),
    ({"nonsense": 1}, "nonsense"),
])
def test_bad_settings_are_refused_naming_the_key(bad, key):
    """(A fleet node has urls and no box_id: the Shipper, not the settings, refuses to ship without one.)"""
    with pytest.raises(ValidationError, match=key):
        FleetSettings(**bad)


def test_init_is_idempotent_and_status_reads_the_cursor(cluster, tmp_path, capsys):
    args = ["--url", cluster.urls[0], "--url", cluster.urls[1], "--cluster", "linegate", "--database", "cli"]
    assert main(["init", *args]) == 0
    assert main(["init", *args]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and all("Distributed over linegate" in line for line in out)
    with ClickHouseHttp(cluster.urls[:1]) as ch:
        tables = {r["name"] for r in ch.rows("SELECT name FROM system.tables WHERE database = 'cli'")}
    assert tables == {"lines", "lines_local", "alerts", "alerts_local"}
    Store(tmp_path / "logs.db").close()
    assert main(["status", *args, "--box-id", "b1", "--data-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == 0


def test_init_names_a_cluster_the_servers_do_not_know(cluster, capsys):
    assert main(["init", "--url", cluster.urls[0], "--cluster", "nowhere"]) == 1
    assert "fleet.cluster = 'nowhere' is not in this server's remote_servers" in capsys.readouterr().err
