"""A real mosquitto broker on a free port, for tests (helper module, imported as tests.mqtt_broker; not a test)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import free_port

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
START_TIMEOUT_S = 10.0


@contextmanager
def mosquitto(tmp: Path, port: int | None = None, extra: str = ""):
    """Yields the port of a running broker; fails (not skips) when mosquitto is missing:
    tools/setup_system.sh installs it. `extra`: more mosquitto.conf lines."""
    assert Path(MOSQUITTO).exists(), f"mosquitto not found at {MOSQUITTO}: run tools/setup_system.sh"
    port = port or free_port()
    conf = tmp / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n{extra}")
    proc = subprocess.Popen([MOSQUITTO, "-c", str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                    raise RuntimeError(f"mosquitto did not start on port {port}: {out}")
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


class Collector:
    """A paho subscriber that keeps every message (topic, payload bytes)."""

    def __init__(self, port: int, topic: str) -> None:
        import paho.mqtt.client as mqtt

        self.messages: list[tuple[str, bytes]] = []
        self.subscribed = False
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.on_message = lambda c, u, m: self.messages.append((m.topic, m.payload))
        self.client.on_subscribe = lambda *a: setattr(self, "subscribed", True)
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe(topic, qos=1)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        wait_for(lambda: self.subscribed, 10, "subscription")

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def load():
    """This module, for tests that import it by path (tests/ is not a package)."""
    import sys
    return sys.modules[__name__]
