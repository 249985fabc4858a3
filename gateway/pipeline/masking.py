"""Masking applied before Drain sees a line: variable fields become <NAME> so that lines differing only
in them share a template. Order matters: specific shapes before the generic number. Knows nothing about
Drain's tree or the triage around it.

Speed (issue 40, point 5): the boundaries are written as negative lookarounds, `(?<![A-Za-z0-9])` for
Drain3's usual `((?<=[^A-Za-z0-9])|^)` and `(?![A-Za-z0-9])` for `((?=[^A-Za-z0-9])|$)`: the same
positions (a string's start has no character before it; `$` before a final newline is also before a
non-alphanumeric), half the cost per line. A mask is skipped where its regex cannot match: every one but
MAC needs a digit, and IP, BLK, HEX and MAC a literal ("." "blk_" "0x" ":"). A mask inserts no digit
and none of those literals is created by one ("<IP>" holds neither), so the gates read the text as it
stands before each mask: the result is the plain chain of substitutions, always.
"""

from __future__ import annotations

import re

from drain3.masking import LogMasker, MaskingInstruction

_B = r"(?<![A-Za-z0-9])"     # left boundary: not inside a word
_E = r"(?![A-Za-z0-9])"      # right boundary
# (regex, name, a literal the text must hold, a digit needed)
MASKING = (
    (_B + r"(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})(:\d+)?" + _E, "IP", ".", True),
    (_B + r"(blk_-?\d+)" + _E, "BLK", "blk_", True),                     # HDFS block ids
    (_B + r"(0x[a-fA-F0-9]+)" + _E, "HEX", "0x", True),
    (_B + r"([0-9a-f]{2}(:[0-9a-f]{2}){5})" + _E, "MAC", ":", False),
    (_B + r"([\-\+]?\d+(\.\d+)?)" + _E, "NUM", "", True),
)
_DIGIT = re.compile(r"\d")     # the regexes' own digit class (Unicode digits too)


class GatedMask(MaskingInstruction):
    """A Drain3 masking instruction that skips its regex where the text lacks `literal` (or a digit)."""

    def __init__(self, pattern: str, mask_with: str, literal: str = "", digit: bool = False) -> None:
        super().__init__(pattern, mask_with)
        self.literal, self.digit = literal, digit


class GatedMasker(LogMasker):
    """Drain3's LogMasker: the instructions in order, each one skipped where its gate says it cannot match
    (a GatedMask's literal or digit; other instructions always run)."""

    def mask(self, content: str) -> str:
        has_digit = _DIGIT.search(content) is not None
        for mi in self.masking_instructions:
            if isinstance(mi, GatedMask) and ((mi.digit and not has_digit) or mi.literal not in content):
                continue
            content = mi.mask(content, self.mask_prefix, self.mask_suffix)
        return content


def instructions() -> list[GatedMask]:
    return [GatedMask(p, name, literal, digit) for p, name, literal, digit in MASKING]
