"""What many tests share that is not a fixture: a free port and the environment of a child
`python -m gateway`. Imported as `tests.helpers` (pytest puts the repository on sys.path); not a test.
Fixtures stay in the conftest.py files; the helper modules beside this one (mqtt_broker, rsyslog_relay,
serve_proc) are imported the same way, never loaded by path."""

from __future__ import annotations

import os
import socket

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}   # a child process's output arrives as it is written


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port on 127.0.0.1 that is free now (TCP by default; socket.SOCK_DGRAM for UDP)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PlanTool:
    """The part of serve.answer.tool.QueryTool a QueryPlan reads (its surface and kinds), over a test store."""

    def __init__(self, surface) -> None:
        from gateway.serve.answer import grounding
        self.surface = surface
        self.kinds = grounding.Kinds(surface)
