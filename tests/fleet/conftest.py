"""Two real ClickHouse servers (Debian's clickhouse-server, installed by tools/setup_system.sh) as the two
shards of cluster `linegate`, started once for tests/fleet/; each test gets its own database."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from gateway.fleet.client import ClickHouseHttp
from gateway.fleet.local_cluster import LocalCluster, server_command
from gateway.fleet.settings import FleetSettings
from gateway.ingest.record import LogRecord
from gateway.pipeline.fields import LineFields

_db_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    if server_command() is None:
        pytest.skip("clickhouse-server is not installed and could not be: tools/setup_system.sh installs it "
                    "(apt-get install clickhouse-server)")
    c = LocalCluster(tmp_path_factory.mktemp("clickhouse"), n_shards=2).start()
    yield c
    c.stop(kill=True)


@pytest.fixture
def fleet(cluster) -> FleetSettings:
    """Settings for a fresh database on the two-shard cluster (box b1)."""
    return FleetSettings(urls=cluster.urls, box_id="b1", cluster="linegate", database=f"t{next(_db_numbers)}",
                         batch_lines=2_000, interval_s=0.05, backoff_max_s=1.0, timeout_s=10.0)


@pytest.fixture
def ch(cluster) -> ClickHouseHttp:
    c = ClickHouseHttp(cluster.urls)
    yield c
    c.close()


def lines(n: int, start: int = 0, t0: float = 1.79e9) -> tuple[list[LogRecord], list[int], list[LineFields]]:
    """n demo lines with a template, named parameters (zone, temperature), header fields and some Chinese."""
    recs, tids, fields = [], [], []
    for i in range(start, start + n):
        zone, temp = i % 5, 70 + (i % 23) * 0.5
        level = "error" if i % 50 == 0 else "info"
        recs.append(LogRecord(ts=t0 + i * 0.01, source="demo", host="line3/heater", severity=3 if level == "error" else 6,
                              text=f"heater zone {zone} temperature {temp} C 温度 seq={i}"))
        tids.append(1)
        fields.append(LineFields(time=t0 + i * 0.01, time_text=None, host=f"plc{zone % 2}", component="heater",
                                 pid=100 + zone, level=level, template="heater zone <*> temperature <*> C 温度 seq=<*>",
                                 params=[(str(zone), float(zone), "zone"), (str(temp), temp, "temperature"),
                                         (str(i), float(i), "seq")]))
    return recs, tids, fields


def fill(store, n: int, start: int = 0, chunk: int = 5_000) -> None:
    for k in range(start, start + n, chunk):
        m = min(chunk, start + n - k)
        store.append(*lines(m, k))


def counts(ch: ClickHouseHttp, database: str, box: str | None = None) -> tuple[int, int, int]:
    """(rows, rows after FINAL, distinct ids after FINAL) of the lines table (of one box, if given)."""
    where = f" WHERE box = '{box}'" if box else ""
    raw = ch.rows(f"SELECT count() AS n FROM {database}.lines{where}")[0]["n"]
    fin = ch.rows(f"SELECT count() AS n, uniqExact(box, id) AS u FROM {database}.lines FINAL{where}")[0]
    return raw, fin["n"], fin["u"]


def store_path(tmp: Path) -> Path:
    return tmp / "box" / "logs.db"


@pytest.fixture
def data():
    """The helpers above, for test modules (conftest is not imported by name)."""
    import types

    return types.SimpleNamespace(lines=lines, fill=fill, counts=counts, store_path=store_path)
