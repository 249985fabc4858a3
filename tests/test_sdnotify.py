"""systemd's notify protocol as the packaged unit (Type=notify, WatchdogSec) sees it: a real datagram
socket in place of systemd's, READY/STOPPING from the served app, WATCHDOG=1 at a quarter of the period."""

from __future__ import annotations

import socket
import time

import pytest

from gateway.appliance import Appliance
from gateway.sdnotify import Watchdog, notify
from gateway.settings import Settings


@pytest.fixture
def systemd_socket(tmp_path, monkeypatch):
    """A datagram socket where $NOTIFY_SOCKET points; yields a function returning the messages so far."""
    path = tmp_path / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(0.01)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    got: list[str] = []

    def received() -> list[str]:
        while True:
            try:
                got.append(sock.recv(4096).decode())
            except (socket.timeout, BlockingIOError):
                return got
    yield received
    sock.close()


def test_notify_without_systemd_is_a_no_op(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False


def test_watchdog_reads_systemd_environment(monkeypatch):
    monkeypatch.setenv("WATCHDOG_USEC", "2000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert Watchdog.from_env().period_s == 2.0
    monkeypatch.setenv("WATCHDOG_PID", "1")          # meant for another process
    assert Watchdog.from_env().period_s is None
    monkeypatch.setenv("WATCHDOG_USEC", "soon")
    monkeypatch.delenv("WATCHDOG_PID")
    with pytest.raises(ValueError, match="WATCHDOG_USEC='soon'"):
        Watchdog.from_env()


def test_pets_are_rate_limited_to_a_quarter_period(systemd_socket):
    w = Watchdog(0.4)
    for _ in range(1000):                            # a busy loop calls pet every turn
        w.pet()
    assert systemd_socket() == ["WATCHDOG=1"]
    time.sleep(0.11)
    w.pet()
    assert systemd_socket() == ["WATCHDOG=1", "WATCHDOG=1"] and w.pets == 2


def test_appliance_without_engine_feeds_the_watchdog_until_stopped(systemd_socket, tmp_path, monkeypatch):
    monkeypatch.setenv("WATCHDOG_USEC", "200000")    # 0.2 s: a pet every 50 ms
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    app = Appliance(Settings(data_dir=tmp_path / "data", engine={"enabled": False}, ingest={"demo": {"enabled": False}}))
    with app:
        time.sleep(0.5)
    n = len([m for m in systemd_socket() if m == "WATCHDOG=1"])
    assert 4 <= n <= 12, n
    time.sleep(0.2)
    assert len(systemd_socket()) == n                # the stopped appliance no longer claims to be alive


def test_served_app_reports_ready_and_stopping(systemd_socket, tmp_path):
    from fastapi.testclient import TestClient
    from gateway.server.app import create_app
    s = Settings(data_dir=tmp_path / "data", engine={"enabled": False}, ingest={"demo": {"enabled": False}})
    with TestClient(create_app(Appliance(s), s, manage_appliance=True)) as client:
        assert client.get("/health").status_code == 200
        assert systemd_socket() == ["READY=1"]
    assert systemd_socket() == ["READY=1", "STOPPING=1"]
