"""A real rsyslogd relaying what it receives on TCP to linegate over RELP (omrelp), for tests (helper
module, imported as tests.rsyslog_relay; not a test). Its action queue keeps what linegate has not answered and sends
it again, as a relay on a line would."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import free_port

RSYSLOGD = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
START_TIMEOUT_S = 30.0


@contextmanager
def rsyslog_relay(tmp: Path, relp_port: int):
    """Yields a connected TCP socket into rsyslogd's imtcp; fails (not skips) when rsyslogd or its omrelp
    module is missing: tools/setup_system.sh installs rsyslog and rsyslog-relp."""
    assert os.path.exists(RSYSLOGD), f"rsyslogd not found at {RSYSLOGD}: run tools/setup_system.sh"
    in_port, work = free_port(), tmp / "rsyslog"
    work.mkdir(exist_ok=True)
    conf = tmp / "rsyslog.conf"
    conf.write_text(f'global(workDirectory="{work}")\nmodule(load="imtcp")\nmodule(load="omrelp")\n'
                    f'input(type="imtcp" port="{in_port}" address="127.0.0.1")\n'
                    f'*.* action(type="omrelp" target="127.0.0.1" port="{relp_port}" '
                    'template="RSYSLOG_SyslogProtocol23Format" queue.type="LinkedList" queue.size="1000000" '
                    'action.resumeRetryCount="-1" action.resumeInterval="1")\n')
    proc = subprocess.Popen([RSYSLOGD, "-n", "-f", str(conf), "-i", str(tmp / "rsyslogd.pid")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", in_port), timeout=5)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode(errors="replace") if proc.poll() is not None else ""
                    raise RuntimeError(f"rsyslogd did not listen on {in_port}: {err}")
                time.sleep(0.05)
        with sock:
            yield sock
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
