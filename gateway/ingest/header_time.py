"""Times in log lines, found without configuration (gateway.ingest.header's first step): the
patterns a header's time may take, match_ts (the pattern matching at a position) and parse_ts (its
Unix time). Times without a zone are read as UTC; a time without a year takes `year`.
"""

from __future__ import annotations

import datetime
import re
import time as _time
from functools import lru_cache

_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug",
                                        "sep", "oct", "nov", "dec"), 1)}
_MON = r"(?i:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DOW = r"(?i:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_T = r"(?P<H>\d{1,2})[:.](?P<M>\d{2})[:.](?P<S>\d{2})(?:[.,:](?P<F>\d{1,9}))?"
_ZONE = r"(?P<Z>Z|[+-]\d{2}:?\d{2})?"
_END = r"(?=[\s\],|;]|$)"
# (regex, fields): named groups Y/y (4/2-digit year), m (month number), b (month name), d, H, M, S, F, Z, E (epoch)
_TS_PATTERNS = [re.compile(p + _END) for p in (
    r"(?P<Y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?:[T\s_-]+|-|[;,|]\s*)" + _T + _ZONE + ",?",
    r"(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<Y>\d{4})(?:[T\s]+|[;,|]\s*)" + _T,
    r"(?P<Y>\d{4})(?P<m>\d{2})(?P<d>\d{2})[-T]" + _T,
    r"(?:" + _DOW + r"\s+)?(?P<b>" + _MON + r")\s+(?P<d>\d{1,2})\s+" + _T + r"(?:\s+(?P<Y>\d{4}))?",
    r"(?P<d>\d{1,2})[-/ ](?P<b>" + _MON + r")[-/ ](?P<Y>\d{4})[:\s]" + _T + r"(?:\s*" + _ZONE + ")?",
    r"(?P<y>\d{2})/(?P<m>\d{2})/(?P<d>\d{2})\s+" + _T,
    r"(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<Y>\d{4})[\s,]+" + _T,
    r"(?P<y>\d{2})(?P<m>[01]\d)(?P<d>[0-3]\d)\s+(?P<H>[012]\d)(?P<M>[0-5]\d)(?P<S>[0-5]\d)",
    r"(?P<m>[01]\d)[-.](?P<d>[0-3]\d)\s+" + _T,
    r"(?P<Y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2}),?",
    r"(?P<Y>\d{4})(?P<m>[01]\d)(?P<d>[0-3]\d)T?(?P<H>[012]\d)(?P<M>[0-5]\d)(?P<S>[0-5]\d)(?:[.,](?P<F>\d{1,9}))?" + _ZONE,
    r"(?P<E>1[0-9]{9})(?P<F>\d{3}|\d{6})",
    r"(?P<E>1[0-9]{9})(?:\.(?P<F>\d{1,6}))?",
    r"(?P<H>\d{1,2}):(?P<M>\d{2}):(?P<S>\d{2})(?:[.,:](?P<F>\d{1,9}))?,?",
)]


def parse_ts(m: re.Match, year: int | None = None) -> float | None:
    return _parse_groups(m.groupdict(), year)


@lru_cache(maxsize=1024)
def _month_days(y: int, mon: int) -> int:
    """Days from the epoch to the first of the month (calendar.timegm's own sum; ValueError as it)."""
    return datetime.date(y, mon, 1).toordinal() - _EPOCH_ORDINAL


def _parse_groups(g: dict, year: int | None) -> float | None:
    try:
        if g.get("E"):
            return int(g["E"]) + (float("0." + g["F"]) if g.get("F") else 0.0)
        if g.get("Y"):
            y = int(g["Y"])
        elif g.get("y"):
            y = 2000 + int(g["y"])
        else:
            y = year if year is not None else _time.gmtime().tm_year
        mon = _MONTHS[g["b"][:3].lower()] if g.get("b") else int(g["m"]) if g.get("m") else None
        if mon is None:
            return None                                   # a time of day alone
        # calendar.timegm((y, mon, d, H, M, S, ...)), the month's start cached
        t = (((_month_days(y, mon) + int(g["d"]) - 1) * 24 + (int(g["H"] or 0) if "H" in g and g["H"] else 0)) * 60
             + (int(g["M"]) if g.get("M") else 0)) * 60 + (int(g["S"]) if g.get("S") else 0)
        if not (1 <= mon <= 12 and 1 <= int(g["d"]) <= 31):
            return None
        if g.get("F"):
            t += float("0." + g["F"])
        z = g.get("Z")
        if z and z != "Z":
            sign = -1 if z[0] == "+" else 1
            z = z[1:].replace(":", "")
            t += sign * (int(z[:2]) * 3600 + int(z[2:]) * 60)
        return float(t)
    except (ValueError, KeyError, OverflowError, TypeError):
        return None


# By the first character (a timestamp is looked for at most tokens of every line): only the named-month
# pattern starts with a letter (of a weekday or month name), the others with a digit. Same order.
_NAMED_TS = _TS_PATTERNS[3]
_DIGIT_TS = tuple(p for p in _TS_PATTERNS if p is not _NAMED_TS)
_NAME_INITIALS = frozenset("mtwfsjaondMTWFSJAOND")
# Each digit pattern starts with a run of digits of a fixed length, ended by a non-digit (its separator,
# or _END): the lengths it can start with, in _DIGIT_TS order. A text is tried only against the patterns
# for its own run (tests/ingest/test_header.py checks the result against trying them all).
_DIGIT_LEADS = ((4,), (1, 2), (8,), (1, 2), (2,), (1, 2), (6,), (2,), (4,), (8, 14), (13, 16), (10,), (1, 2))
_BY_LEAD = {n: tuple(p for p, leads in zip(_DIGIT_TS, _DIGIT_LEADS) if n in leads) for n in range(1, 17)}
_LEAD = re.compile(r"\d*")


def match_ts(text: str, pos: int) -> re.Match | None:
    c = text[pos:pos + 1]
    if c.isdigit():
        for p in _BY_LEAD.get(_LEAD.match(text, pos).end() - pos, ()):
            m = p.match(text, pos)
            if m:
                return m
        return None
    return _NAMED_TS.match(text, pos) if c in _NAME_INITIALS else None
