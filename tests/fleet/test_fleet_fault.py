"""Issue 43's fault test, through `linegate serve`: three boxes (each its own process replaying a different Loghub
system over HTTP ingest, with its own box id) ship to the two shards; one shard is killed -9 mid-stream and
restarted, and one box is killed -9 and restarted. Afterwards every line a box acknowledged is in ClickHouse
exactly once after FINAL with the text that was sent, and so is every line the boxes stored (none lost); a fourth
`linegate serve` as the fleet node ([fleet] node = true) counts each box's lines as ClickHouse does."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from gateway.fleet.client import ClickHouseHttp
from gateway.fleet.local_cluster import READER_PASSWORD
from gateway.fleet.schema import init_schema
from gateway.fleet.settings import FleetSettings
from tests.helpers import free_port
from tests.serve_proc import serve

LOGHUB = Path(__file__).resolve().parents[3] / "shared" / "data" / "loghub"
SYSTEMS = {"line1": "HDFS", "line2": "BGL", "line3": "OpenSSH"}
BATCH, PAUSE_S = 50, 0.08          # ~40 batches a box over a few seconds: the kills land mid-stream
DB = "fault"


def _config(path: Path, urls: list[str], box_id: str = "", node: bool = False) -> Path:
    fleet = {"urls": urls, "cluster": "linegate", "database": DB, "batch_lines": 100, "interval_s": 0.05,
             "backoff_max_s": 1.0, "timeout_s": 5.0}
    fleet |= {"node": True, "reader_password": READER_PASSWORD} if node else {"box_id": box_id}
    body = "".join(f"{k} = {json.dumps(v)}\n" for k, v in fleet.items())
    path.write_text("[engine]\nenabled = false\n[ingest.demo]\nenabled = false\n[server]\nrequire_key = false\n"
                    f"[fleet]\n{body}")
    return path


class Box:
    """One `linegate serve` box and the thread streaming its Loghub file; `acked`: line id -> text sent."""

    def __init__(self, tmp: Path, box_id: str, urls: list[str]) -> None:
        self.box_id, self.port, self.data = box_id, free_port(), tmp / box_id
        self.cfg = _config(tmp / f"{box_id}.toml", urls, box_id)
        self.lines = (LOGHUB / SYSTEMS[box_id] / f"{SYSTEMS[box_id]}_2k.log").read_text(errors="replace").splitlines()
        self.acked: dict[int, str] = {}
        self.retries = 0
        self.proc = serve(self.cfg, self.data, self.port)
        self.thread = threading.Thread(target=self._stream, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _stream(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as client:
            for k in range(0, len(self.lines), BATCH):
                batch = self.lines[k:k + BATCH]
                body = "\n".join(json.dumps({"text": t, "host": self.box_id}) for t in batch)
                while True:            # a batch not acknowledged (the box died) is sent again
                    try:
                        r = client.post("/api/ingest", content=body)
                        if r.status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    self.retries += 1
                    time.sleep(0.1)
                got = r.json()
                assert got["accepted"] == len(batch) and got["last_id"] - got["first_id"] == len(batch) - 1, got
                self.acked.update(zip(range(got["first_id"], got["last_id"] + 1), batch))
                time.sleep(PAUSE_S)

    def kill_and_restart(self) -> None:
        self.proc.kill()               # SIGKILL
        self.proc.wait()
        self.proc = serve(self.cfg, self.data, self.port)

    def fleet(self) -> dict:
        return httpx.get(self.url + "/api/stats", timeout=10).json().get("fleet") or {}


def _until(cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _stored(box: Box) -> dict[int, str]:
    import sqlite3

    with sqlite3.connect(box.data / "logs.db") as db:
        return dict(db.execute("SELECT id, text FROM logs"))


@pytest.mark.skipif(not LOGHUB.is_dir(), reason="the Loghub samples (../shared/data/loghub) are not here")
def test_kills_of_a_shard_and_a_box_lose_and_double_nothing(cluster, tmp_path):
    init_schema(FleetSettings(urls=cluster.urls, box_id="x", cluster="linegate", database=DB))
    boxes = [Box(tmp_path, b, cluster.urls) for b in SYSTEMS]
    node = None
    try:
        for b in boxes:
            b.thread.start()
        _until(lambda: all(b.fleet().get("shipped", 0) > 0 and len(b.acked) >= 300 for b in boxes), 30,
               "every box shipping")
        shard = cluster.servers[1]
        shard.kill()                                       # kill -9 a shard mid-stream
        _until(lambda: any(b.fleet().get("failures", 0) for b in boxes), 15, "a failed insert")
        shard.start()
        victim = boxes[1]
        _until(lambda: len(victim.acked) >= 1_000, 30, "box line2 half-way")
        victim.kill_and_restart()                          # kill -9 a box mid-stream
        for b in boxes:
            b.thread.join(60)
            assert not b.thread.is_alive() and len(b.acked) == len(b.lines)
        _until(lambda: all(b.fleet().get("pending") == 0 for b in boxes), 30, "everything shipped")

        with ClickHouseHttp(cluster.urls) as ch:
            for b in boxes:
                rows = ch.rows(f"SELECT id, text FROM {DB}.lines FINAL WHERE box = '{b.box_id}'")
                ids = [r["id"] for r in rows]
                assert len(ids) == len(set(ids)), f"{b.box_id}: a line twice after FINAL"
                got = {r["id"]: r["text"] for r in rows}
                assert {i: got.get(i) for i in b.acked} == b.acked, f"{b.box_id}: an acknowledged line lost"
                assert got == _stored(b), f"{b.box_id}: ClickHouse differs from the box's store"
        assert victim.retries >= 1                         # the box did die under its stream

        node_port = free_port()
        node = serve(_config(tmp_path / "node.toml", cluster.urls, node=True), tmp_path / "node", node_port)
        plant = httpx.get(f"http://127.0.0.1:{node_port}/api/stats", timeout=10).json()["fleet_node"]
        assert {x["box"]: x["lines"] for x in plant["boxes"]} == {b.box_id: len(_stored(b)) for b in boxes}
    finally:
        for p in [b.proc for b in boxes] + [node]:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if not cluster.servers[1].alive():
            cluster.servers[1].start()
