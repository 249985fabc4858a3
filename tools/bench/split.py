"""The evaluation split, fixed before any tuning (2026-12-04): what ingest and answers may be tuned on,
and what is looked at only at the end. Every quality benchmark reads its systems from here.

Rule: the 8 shared Loghub systems sorted by sha256("linegate-split-2026-12-04:" + name); the first 3
are held aside. The external questions (LogQA dev, LogReasoning dev) over a held-aside system are held
aside with it (HDFS: 172/540 LogQA, 218/558 LogReasoning, about a third of each).
"""

from __future__ import annotations

import hashlib

SYSTEMS = ("Apache", "BGL", "HDFS", "Hadoop", "Linux", "OpenSSH", "Spark", "Zookeeper")
SALT = "linegate-split-2026-12-04:"
N_HELD = 3


def _order() -> list[str]:
    return sorted(SYSTEMS, key=lambda s: hashlib.sha256((SALT + s).encode()).hexdigest())


HELD = tuple(sorted(_order()[:N_HELD]))             # ("BGL", "HDFS", "Zookeeper")
TUNE = tuple(s for s in SYSTEMS if s not in HELD)   # ("Apache", "Hadoop", "Linux", "OpenSSH", "Spark")


def systems(part: str) -> tuple[str, ...]:
    """"tune", "held" or "all"."""
    if part == "tune":
        return TUNE
    if part == "held":
        return HELD
    if part == "all":
        return SYSTEMS
    raise ValueError(f"split part must be tune, held or all, not {part!r}")


def external_part(system: str) -> str:
    """The part an external question over `system` belongs to."""
    return "held" if system in HELD else "tune"
