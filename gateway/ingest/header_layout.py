"""A header layout the model proposes for a source whose format the statistics could not find: shown
a few of its lines, the model writes them as a layout such as `{ts} [{level}] {host} - {message}`
(named fields from a fixed set, the separators copied), which becomes a header pattern
(gateway.ingest.source_format.HeaderPattern); it is kept only if it parses nearly every one of the
source's next lines (SourceFormats.adopt). The model writes it under a grammar (gateway.serve.layouts):
only fields of the fixed set, SEPARATORS between them, {message} last, so what it writes always reads
as a layout. Knows nothing about the engine or the grammar: the appliance asks it.
"""

from __future__ import annotations

import re

PATTERN_FIELDS = ("ts", "level", "host", "component", "pid", "message")   # a header pattern's named groups
MAX_LAYOUT_CHARS = 200
SAMPLE_SHOWN = 6                 # lines shown to the model
_FIELD = re.compile(r"\{(\w+)\}")

PROMPT = (
    "These lines come from one log source:\n{lines}\n\n"
    "Write the layout of their header as one line: {{ts}} for the time, {{level}}, {{host}}, {{component}}, "
    "{{pid}}, and {{message}} for the rest of the line; copy the characters between fields exactly. "
    "Leave out fields the lines do not have.\n"
    "Example: for `2024-01-01 10:00:00 [WARN] pump-3 - pressure low` the layout is "
    "`{{ts}} [{{level}}] {{host}} - {{message}}`.\nLayout:")


SEPARATORS = b" []()<>|:;,-=/#@*."   # what may stand between fields ("[", "] ", " - ", "|")
MAX_SEPARATOR = 4


def prompt(lines: list[str]) -> str:
    return PROMPT.format(lines="\n".join(x[:300] for x in lines[:SAMPLE_SHOWN]))


def layout_from_answer(answer: str) -> str | None:
    """The first line of the model's answer that holds {message}, without quotes or backticks."""
    for line in answer.splitlines():
        line = line.strip().strip("`'\"").strip()
        if "{message}" in line and len(line) <= MAX_LAYOUT_CHARS:
            return line
    return None


def layout_to_regex(layout: str) -> str:
    """`{ts} [{level}] {host} - {message}` -> a regex with those named groups; a run of spaces matches
    any run of whitespace. Raises ValueError for a field outside PATTERN_FIELDS, a field twice, or
    {message} missing or not last."""
    parts = _FIELD.split(layout)          # literal, field, literal, field, ..., literal
    fields = parts[1::2]
    bad = [f for f in fields if f not in PATTERN_FIELDS]
    if bad or len(set(fields)) != len(fields) or not fields or fields[-1] != "message" or parts[-1].strip():
        raise ValueError(f"layout {layout!r}: fields must be among {', '.join(PATTERN_FIELDS)}, each once, "
                         "ending with {message}")
    rx = "^"
    for i, part in enumerate(parts):
        if i % 2 == 0:
            rx += r"\s+".join(re.escape(w) for w in part.split(" ")) if part.strip() else (r"\s+" if part else "")
        elif part == "message":
            rx += r"(?P<message>.*)"
        else:
            rx += rf"(?P<{part}>.+?)" if part == "ts" else rf"(?P<{part}>\S+?)"
    return rx + "$"
