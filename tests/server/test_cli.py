"""`linegate keys create` and `linegate serve` as an operator runs them (subprocesses, real ports)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import httpx

from gateway.server.auth import hash_key
from tests.helpers import ENV, free_port

NO_ENGINE = '[engine]\nenabled = false\n[ingest.demo]\ncycle_s = 0.2\n'


def linegate(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway", *args], capture_output=True, text=True, env=ENV,
                          timeout=60, **kw)


def test_keys_create_prints_key_stores_hash(tmp_path):
    r1, r2 = linegate("keys", "create", "--data-dir", str(tmp_path)), linegate("keys", "create", "--data-dir", str(tmp_path))
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr
    k1, k2 = r1.stdout.strip(), r2.stdout.strip()
    assert k1.startswith("lg_") and k1 != k2
    doc = json.loads((tmp_path / "api_keys.json").read_text())
    assert [k["hash"] for k in doc["keys"]] == [hash_key(k1), hash_key(k2)]
    assert k1 not in (tmp_path / "api_keys.json").read_text()


def test_serve_first_start_prints_key_once_and_serves(tmp_path):
    cfg = tmp_path / "linegate.toml"
    cfg.write_text(NO_ENGINE)
    data = tmp_path / "data"
    port = free_port()

    def start():
        return subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--config", str(cfg), "--port", str(port),
                                 "--data-dir", str(data)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=ENV)

    proc = start()
    try:
        first = proc.stdout.readline() + proc.stdout.readline() + proc.stdout.readline() + proc.stdout.readline()
        m = re.search(rf"http://127\.0\.0\.1:{port}/#key=(lg_[A-Za-z0-9_-]+)", first)
        assert m, first
        key = m.group(1)
        assert json.loads((data / "api_keys.json").read_text())["keys"][0]["hash"] == hash_key(key)
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        time.sleep(1.0)   # a few demo cycles
        r = httpx.get(url + "/api/logs/search", params={"q": "cycle", "limit": 3},
                      headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200 and len(r.json()["results"]) == 3
        assert httpx.get(url + "/api/logs/search").status_code == 401
        assert "linegate" in httpx.get(url + "/").text
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=30)[0]
    # uvicorn finishes its shutdown, then re-raises SIGTERM (exit status -15) for the service manager
    assert proc.returncode in (0, -signal.SIGTERM) and "Application shutdown complete" in out, out
    # second start: the key exists, none is printed
    proc = start()
    try:
        line = proc.stdout.readline()
        assert "#key=" not in line and "keys: 1" in line, line
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_serve_refuses_no_key_beyond_localhost(tmp_path):
    cfg = tmp_path / "linegate.toml"
    cfg.write_text(NO_ENGINE + "[server]\nrequire_key = false\n")
    r = linegate("serve", "--config", str(cfg), "--host", "0.0.0.0", "--data-dir", str(tmp_path))
    assert r.returncode != 0
    assert "beyond localhost" in r.stderr and "require_key" in r.stderr
