"""The grammar a header layout is decoded under (gateway.ingest.header_layout): what the model writes
when the appliance asks it for a source's layout always reads as one.
"""

from __future__ import annotations

from gateway.ingest.header_layout import MAX_SEPARATOR, PATTERN_FIELDS, SEPARATORS
from gateway.llm.constrained import Chars, one_of, opt, seq


def layout_grammar():
    """Layouts: up to len(PATTERN_FIELDS) - 1 header fields (each a field of the set), separators
    between them, then {message}. A field twice passes the grammar but not layout_to_regex (a grammar
    that forbade it would have to name every order)."""
    field = one_of([f"{{{f}}}" for f in PATTERN_FIELDS if f != "message"])
    sep = Chars(1, MAX_SEPARATOR, allow=SEPARATORS)
    slots = [opt(seq(field, opt(sep))) for _ in range(len(PATTERN_FIELDS) - 1)]
    return seq(opt(sep), *slots, "{message}")
