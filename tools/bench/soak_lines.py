"""The soak's lines (tools/bench/soak.py): what each transport sends, the alert storms, and how lost lines
are counted from the store.

Every line carries `soak <transport> seq=<n> ` so that the store can be read for what arrived. Two mixes:
- `default`: one template per transport ("... cycle complete station 3 count 41"), the repetitive line;
- `high`: few repeats per template: each transport cycles through its own HIGH_TEMPLATES templates whose
  constant words differ (made-up words, so Drain cannot merge them into one template with <*>) and whose
  word count varies (Drain keys on the token count), numbers still varying within a template.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Callable

TRANSPORTS = ("tcp", "udp", "mqtt", "http", "tail")
VARIETIES = ("default", "high")
# Per transport; the four sources (syslog carries tcp and udp) stay under the miner's per-source cap
# (gateway/pipeline/templates.py MAX_SOURCE_TEMPLATES) and each token count under its leaf cap.
HIGH_TEMPLATES = 800
# Constant words per high-variety template, from .. to (inclusive): at least 6, so that two templates
# share under half their tokens (the marker and the numbers) and Drain (sim_th 0.5) keeps them apart.
HIGH_WORDS = (6, 11)
STORM_LINES = 200
STORM_KINDS = ("servo overcurrent", "vacuum loss", "encoder drift", "gripper timeout", "coolant low",
               "spindle stall", "label misfeed", "fieldbus dropout", "door interlock open", "torque limit")
LINE = re.compile(r"soak (tcp|udp|mqtt|http|tail) seq=(\d+) ")
# Syllables without digits and without the letters a-f as consonants: no mask (NUM, HEX, MAC) takes them.
_CONSONANTS = "gkmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]


def text(transport: str, n: int) -> str:
    """The default mix: one template per transport."""
    return f"soak {transport} seq={n} cycle complete station {n % 7} count {n % 97}"


def _word(seed: int) -> str:
    """A made-up word of 2-3 syllables from `seed` (a few thousand distinct words)."""
    s = len(_SYLLABLES)
    w = _SYLLABLES[seed % s] + _SYLLABLES[(seed // s) % s]
    return w + _SYLLABLES[(seed // (s * s)) % s] if seed % 3 == 0 else w


def _mix(*xs: int) -> int:
    """A deterministic hash of small integers (Python's hash() of str varies between runs)."""
    h = 0x9E3779B9
    for x in xs:
        h = ((h ^ (x & 0xFFFFFFFF)) * 0x01000193) & 0xFFFFFFFF
        h ^= h >> 15
    return h


_HIGH_CACHE: dict[tuple[str, int], str] = {}


def high_template(transport: str, k: int) -> str:
    """The constant words of high-variety template k of `transport` (cached: the senders ask often)."""
    key = (transport, k)
    words = _HIGH_CACHE.get(key)
    if words is None:
        t = TRANSPORTS.index(transport)
        lo, hi = HIGH_WORDS
        n_words = lo + _mix(t, k, 999) % (hi - lo + 1)
        words = _HIGH_CACHE[key] = " ".join(_word(_mix(t, k, j)) for j in range(n_words))
    return words


def high_text(transport: str, n: int, templates: int = HIGH_TEMPLATES) -> str:
    """High variety: line n of a transport is of template (n x a large odd number) mod `templates`, so
    consecutive lines are of different templates and each template comes back every `templates` lines."""
    k = (n * 2654435761) % templates
    return f"soak {transport} seq={n} {high_template(transport, k)} {n % 97} {(n % 500) / 10:.1f}"


def line_maker(variety: str, templates: int = HIGH_TEMPLATES) -> Callable[[str, int], str]:
    """(transport, n) -> line n of that transport in the `variety` mix (`templates` per transport: high)."""
    if variety == "high":
        return lambda transport, n: high_text(transport, n, templates)
    return {"default": text}[variety]


def storm_body() -> str:
    """One alert storm: STORM_LINES error lines over five hosts, as an HTTP NDJSON body."""
    return "\n".join(json.dumps({"text": f"ERROR {STORM_KINDS[i % len(STORM_KINDS)]} on axis {i} code E{100 + i}",
                                 "host": f"line3/cell{i % 5}", "severity": "error"}) for i in range(STORM_LINES))


def count_stored(db: Path) -> dict[str, set[int]]:
    """Per transport, the sequence numbers the store holds; `_dups`: lines stored twice."""
    seen: dict[str, set[int]] = {t: set() for t in TRANSPORTS}
    dups = 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    for (t,) in con.execute("SELECT text FROM logs WHERE text LIKE '%soak %'"):
        m = LINE.search(t)
        if m:
            s = seen[m.group(1)]
            n = int(m.group(2))
            dups += n in s
            s.add(n)
    con.close()
    seen["_dups"] = dups   # type: ignore[assignment]
    return seen
