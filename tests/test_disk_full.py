"""A real full disk: `linegate serve` with its data folder on a small tmpfs, HTTP batches streaming in
until the file system is full. Ingest must refuse with 507 and a clear reason (not crash, not 500),
every line it acknowledged must be in the store, and once space returns (the tmpfs remounted larger)
ingest must work again without a restart. Needs root (mount); skipped where mounting is not allowed.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers import ENV, free_port
from tests.serve_proc import serve

SMALL, LARGE = "6m", "64m"
BATCH = 200
TEXT_PAD = "x" * 120   # long lines fill the disk in a few seconds


def _mount(path: Path, size: str, remount: bool = False) -> bool:
    opts = f"remount,size={size}" if remount else f"size={size}"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    return r.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    if not _mount(data, SMALL):
        pytest.skip("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)")
    try:
        yield data
    finally:
        subprocess.run(["umount", "-l", str(data)], capture_output=True)


def _send(client: httpx.Client, first: int) -> httpx.Response:
    body = "\n".join(json.dumps({"text": f"diskfull seq={n} {TEXT_PAD}"}) for n in range(first, first + BATCH))
    return client.post("/api/ingest", content=body)


def test_full_disk_refuses_with_507_loses_nothing_and_recovers(tmp_path, small_disk):
    data = small_disk
    cfg = tmp_path / "linegate.toml"
    cfg.write_text("[engine]\nenabled = false\n[ingest.demo]\nenabled = false\n")
    key = subprocess.run([sys.executable, "-m", "gateway", "keys", "create", "--data-dir", str(data)],
                         capture_output=True, text=True, check=True, env=ENV).stdout.strip()
    port = free_port()
    proc = serve(cfg, data, port)
    acked: set[int] = set()
    refusals: list[httpx.Response] = []
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"},
                              timeout=30)
        n = 0
        while len(refusals) < 3 and n < 2_000_000:
            r = _send(client, n)
            assert r.status_code in (200, 507), (r.status_code, r.text[:300])
            if r.status_code == 200:
                assert not refusals, "a batch was stored after the disk had filled and before space returned"
                acked.update(range(n, n + r.json()["accepted"]))
            else:
                refusals.append(r)
            n += BATCH
        assert refusals, "the disk never filled"
        for r in refusals:
            assert "full" in r.json()["detail"] and r.headers.get("Retry-After")
        assert proc.poll() is None, "linegate serve died on a full disk"
        assert client.get("/api/logs/search", params={"q": "diskfull", "limit": 1}).status_code == 200

        assert _mount(data, LARGE, remount=True)
        r = _send(client, n)
        assert r.status_code == 200 and r.json()["accepted"] == BATCH, (r.status_code, r.text[:300])
        acked.update(range(n, n + BATCH))
        client.close()
    finally:
        proc.terminate()
        proc.wait(30)
    con = sqlite3.connect(f"file:{data / 'logs.db'}?mode=ro", uri=True)
    stored = {int(t.split()[1].split("=")[1]) for (t,) in con.execute("SELECT text FROM logs WHERE text LIKE 'diskfull %'")}
    con.close()
    assert len(acked) > 1000
    assert acked <= stored, sorted(acked - stored)[:10]
