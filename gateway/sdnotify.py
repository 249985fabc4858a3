"""systemd's notify protocol (sd_notify(3)) without libsystemd: READY=1, STOPPING=1 and the watchdog
(WATCHDOG=1) over $NOTIFY_SOCKET. A no-op outside a Type=notify unit. Knows nothing of the appliance."""

from __future__ import annotations

import os
import socket
import threading
import time


def notify(state: str) -> bool:
    """Send one state line to systemd; False when not run by systemd (no $NOTIFY_SOCKET) or it failed."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return False
    addr = "\0" + path[1:] if path.startswith("@") else path   # '@': Linux abstract namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.connect(addr)
            s.sendall(state.encode())
        return True
    except OSError:
        return False


class Watchdog:
    """Feeds the unit's WatchdogSec from the loop that calls pet(): at most every quarter period, so a
    pet per loop turn costs a clock read. If that loop hangs past WatchdogSec, systemd kills and (with
    Restart=on-failure) restarts the service."""

    def __init__(self, period_s: float | None) -> None:
        self.period_s = period_s                 # None: no watchdog asked for (pet does nothing)
        self._next = 0.0
        self._lock = threading.Lock()
        self.pets = 0                            # WATCHDOG=1 messages sent

    @classmethod
    def from_env(cls) -> "Watchdog":
        """WATCHDOG_USEC (and WATCHDOG_PID, when set, naming this process) as systemd passes them."""
        usec, pid = os.environ.get("WATCHDOG_USEC"), os.environ.get("WATCHDOG_PID")
        if not usec or (pid and pid != str(os.getpid())):
            return cls(None)
        try:
            period = int(usec) / 1e6
        except ValueError:
            raise ValueError(f"WATCHDOG_USEC={usec!r}: expected microseconds") from None
        return cls(period if period > 0 else None)

    def pet(self) -> None:
        if self.period_s is None:
            return
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                return
            self._next = now + self.period_s / 4
        if notify("WATCHDOG=1"):
            self.pets += 1
