"""A count, or a top_k by host / component / level, from the store's running counts (store_counts.py)
when the call filters by nothing but those fields and a time window: the answer a full scan gives,
with only the lines the counts do not cover read.

Such a call had no index to use (every reader filters by a line's own host and time, expressions no
index serves: store_schema.py), so on a store of millions of lines under ingest it read them all, for
seconds of a question's budget ("how many lines from line3", "which host logged most in the last 10
minutes"). The counts' zones answer it from memory; the lines stored since their last read, the zones
retention cut into and those a window's edge crosses are read here, grouped the same way.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from gateway.pipeline.store_counts import FIELDS, TIME, read_joint

# The keys such a call may hold; any other with a value (text, template, where, ...) is read by SQL.
COUNTED_KEYS = frozenset({"op", "host", "component", "level", "since", "until", "last_minutes", "by", "k"})


def counted_call(call: dict[str, Any]) -> bool:
    """Whether `call` is a count, or a top_k by host / component / level, filtered only by those fields
    and a time window."""
    op = call.get("op")
    if op not in ("count", "top_k") or (op == "top_k" and (call.get("by") or "template") not in FIELDS):
        return False
    return all(k in COUNTED_KEYS or v is None or v == "" or v == [] or v == {} for k, v in call.items())


def from_counts(surface: Any, call: dict[str, Any], since: float | None, until: float | None,
                k: int) -> dict[str, Any] | None:
    """The result of a counted_call over the lines whose time is in [since, until] (None: open) with
    the surface's running counts; None when a range's groups outrun what one statement reads back (the
    caller then reads the lines). Filters mean what query.QuerySurface._filters makes of them."""
    counts = surface.counts()
    known, ranges = counts.split(since, until)
    times, targs = "", []
    if since is not None:
        times += f" AND {TIME} >= ?"; targs.append(float(since))
    if until is not None:
        times += f" AND {TIME} <= ?"; targs.append(float(until))
    for lo, hi in ranges:
        bounded = " AND l.id <= ?" if hi is not None else ""
        joint, whole = read_joint(surface, counts.exprs, f" WHERE l.id > ?{bounded}{times}",
                                  [lo, *([hi] if hi is not None else []), *targs])
        if not whole:
            return None
        known.update({key: n for key, (n, _, _) in joint.items()})
    wanted: list[tuple[int, set[str]]] = [(i, {str(call[f])}) for i, f in enumerate(FIELDS[:2]) if call.get(f)]
    if call.get("level"):
        levels = call["level"] if isinstance(call["level"], list) else [call["level"]]
        wanted.append((2, {str(v).lower() for v in levels}))
    kept = {key: n for key, n in known.items() if n and all(key[i] in values for i, values in wanted)}
    total = sum(kept.values())
    if call["op"] == "count":
        return {"count": total}
    by = FIELDS.index(call["by"])
    groups: Counter = Counter()
    for key, n in kept.items():
        groups[key[by]] += n
    # SQL's order: the most lines first, then by value, NULL before any text
    top = sorted(groups.items(), key=lambda vn: (-vn[1], vn[0] is not None, vn[0] or ""))[:k]
    return {"by": call["by"], "count": total, "top": [{"value": v, "count": n} for v, n in top]}
