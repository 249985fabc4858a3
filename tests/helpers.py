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


def made_store(tmp_path, texts, fields, hosts=None, severity=6):
    """A store of these lines (one LineFields each, all of template 1) and its query surface."""
    from gateway.ingest.record import LogRecord
    from gateway.pipeline.query import QuerySurface
    from gateway.pipeline.store import Store
    recs = [LogRecord(ts=1.7e9 + i, source="t", host=(hosts[i] if hosts else "h"), severity=severity, text=t)
            for i, t in enumerate(texts)]
    store = Store(tmp_path / "made.db")
    store.append(recs, [1] * len(recs), list(fields))
    return store, QuerySurface(store.path)


def kinded_store(tmp_path, rows):
    """A store of (text, template id, template) rows, each line's parameters named, and its surface."""
    from gateway.ingest.record import LogRecord
    from gateway.pipeline.fields import LineFields, named_params
    from gateway.pipeline.query import QuerySurface
    from gateway.pipeline.store import Store
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, (t, _, _) in enumerate(rows)]
    store = Store(tmp_path / "l.db")
    store.append(recs, [tid for _, tid, _ in rows], [LineFields(template=m, params=named_params(m, t)) for t, _, m in rows])
    return store, QuerySurface(store.path)
