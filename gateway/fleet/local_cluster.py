"""ClickHouse servers on this machine, each its own process, folder and free ports, as the shards of one
cluster named `linegate` (with a read-only user `linegate_reader`): what the tests, tools/bench/bench_fleet.py
and docs/fleet.md's try-out run. Knows nothing about the tables.

    python -m gateway.fleet.local_cluster DIR [--shards 2]     # runs until Ctrl-C, prints the URLs
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CLUSTER = "linegate"
READER = "linegate_reader"
READER_PASSWORD = "reader"
START_TIMEOUT_S = 60.0

_CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/server.log</log><errorlog>{dir}/error.log</errorlog>
    <size>10M</size><count>2</count></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>64</max_concurrent_queries>
  <timezone>UTC</timezone>
  <remote_servers><{cluster}>{shards}</{cluster}></remote_servers>
</yandex>
"""
_SHARD = "<shard><replica><host>127.0.0.1</host><port>{tcp}</port></replica></shard>"
_USERS = """<?xml version="1.0"?>
<yandex>
  <profiles>
    <default><max_memory_usage>4000000000</max_memory_usage></default>
    <readonly><readonly>2</readonly></readonly>
  </profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <{reader}><password>{reader_password}</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>readonly</profile><quota>default</quota></{reader}>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
"""


def server_command() -> list[str] | None:
    """How to run a ClickHouse server here: Debian's clickhouse-server, or the single `clickhouse` binary."""
    for name in ("clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"):
        path = shutil.which(name)
        if path:
            return [path]
    path = shutil.which("clickhouse")
    return [path, "server"] if path else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One clickhouse-server process: start() (again after kill() keeps its data and ports), kill() (-9)."""

    def __init__(self, folder: Path, http_port: int, tcp_port: int) -> None:
        self.folder = folder
        self.http_port = http_port
        self.tcp_port = tcp_port
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self) -> "Server":
        cmd = server_command()
        if cmd is None:
            raise FileNotFoundError("clickhouse-server is not installed (tools/setup_system.sh installs it)")
        out = open(self.folder / "stdout.log", "ab")
        self.proc = subprocess.Popen([*cmd, f"--config-file={self.folder / 'config.xml'}"], cwd=self.folder,
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"clickhouse-server exited with {self.proc.returncode}: see {self.folder}/*.log")
            if self.alive():
                return self
            time.sleep(0.1)
        self.kill()
        raise TimeoutError(f"clickhouse-server on {self.url} not ready in {START_TIMEOUT_S:g} s")

    def alive(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/ping", timeout=1) as r:
                return r.read().strip() == b"Ok."
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL and wait: a crash, as far as the server can tell."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


class LocalCluster:
    """`n` servers in `folder`, each knowing all of them as the shards of cluster `linegate`."""

    def __init__(self, folder: str | Path, n_shards: int = 2) -> None:
        self.folder = Path(folder)
        self.servers: list[Server] = []
        ports = [(free_port(), free_port()) for _ in range(n_shards)]
        shards = "".join(_SHARD.format(tcp=tcp) for _, tcp in ports)
        for i, (http, tcp) in enumerate(ports):
            d = self.folder / f"shard{i + 1}"
            for sub in ("data", "tmp", "user_files", "format_schemas"):
                (d / sub).mkdir(parents=True, exist_ok=True)
            (d / "config.xml").write_text(_CONFIG.format(dir=d, http=http, tcp=tcp, cluster=CLUSTER, shards=shards))
            (d / "users.xml").write_text(_USERS.format(reader=READER, reader_password=READER_PASSWORD))
            self.servers.append(Server(d, http, tcp))

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def start(self) -> "LocalCluster":
        try:
            for s in self.servers:
                s.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, kill: bool = False) -> None:
        """Shuts every server down (kill: at once, -9; what tests do with a throw-away folder)."""
        for s in self.servers:
            s.kill() if kill else s.stop()

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gateway.fleet.local_cluster", description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--shards", type=int, default=2)
    args = ap.parse_args(argv)
    with LocalCluster(args.folder, args.shards) as cluster:
        print(f"cluster {CLUSTER}: " + " ".join(cluster.urls), flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
