"""tools/bench/harness.py: the one way the benchmarks serve an appliance, find ports and read RSS."""

from __future__ import annotations

import json
import os
import socket
import urllib.request

import pytest

from tools.bench import harness

NO_ENGINE = "[engine]\nenabled = false\n[ingest.demo]\nenabled = false\n"


@pytest.mark.parametrize("kind", [socket.SOCK_STREAM, socket.SOCK_DGRAM])
def test_free_port_can_be_bound(kind):
    port = harness.free_port(kind)
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", port))


def test_rss_of_this_process_and_by_pid():
    here = harness.rss_mb()
    assert 1.0 < here < 100_000
    assert harness.rss_mb(os.getpid()) == pytest.approx(here, rel=0.5)
    assert harness.peak_rss_mb() >= here * 0.5


def test_print_result_is_one_json_line(capsys):
    harness.print_result({"a": 1, "host": "产线"}, ensure_ascii=False)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and json.loads(out) == {"a": 1, "host": "产线"}


def test_served_answers_health_and_stops(tmp_path):
    with harness.Served(tmp_path, NO_ENGINE, key_name="test") as srv:
        assert srv.alive() and srv.key and harness.rss_mb(srv.pid) > 0
        req = urllib.request.Request(srv.url + "/api/stats", headers=srv.auth)
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=10) as r:
            assert r.status == 200
        assert srv.stop() is not None and not srv.alive()
    assert (srv.data_dir / "logs.db").exists() and srv.log_path.exists()


def test_served_that_cannot_start_names_its_log(tmp_path):
    with pytest.raises(RuntimeError, match="server.log|keys create"):
        harness.Served(tmp_path, NO_ENGINE + "[server]\nport = not-a-number\n", ready_timeout_s=60)
