"""`linegate serve` as a real process for tests (helper module, imported as tests.serve_proc; not a test)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.helpers import ENV

START_TIMEOUT_S = 60.0


def serve(cfg: Path, data: Path, port: int) -> subprocess.Popen:
    """Starts it and waits for /health 200; fails if it exits or does not answer in time."""
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--config", str(cfg), "--port", str(port),
                             "--data-dir", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "linegate serve did not start"
        time.sleep(0.05)
