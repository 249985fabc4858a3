"""The gated masker (gateway.pipeline.masking) gives Drain3's plain chain of substitutions, with the
boundaries as Drain3's examples write them, on any text."""

from __future__ import annotations

import random

from drain3.masking import LogMasker, MaskingInstruction

from gateway.pipeline.masking import MASKING, GatedMasker, instructions

_B = r"((?<=[^A-Za-z0-9])|^)"
_E = r"((?=[^A-Za-z0-9])|$)"
PLAIN = [MaskingInstruction(p.replace(r"(?<![A-Za-z0-9])", _B).replace(r"(?![A-Za-z0-9])", _E), name)
         for p, name, _, _ in MASKING]
ALPHABET = list("0123456789abcdefx.:-+_ /<>=\n") + ["blk_", "0x", "1.2.3.4", "٣", "Ab", "é", "ff:"]


def test_masks_as_the_plain_chain():
    assert all(_B in mi.regex.pattern and _E in mi.regex.pattern for mi in PLAIN)
    plain = LogMasker(PLAIN, "<", ">")
    gated = GatedMasker(instructions(), "<", ">")
    rng = random.Random(5)
    texts = ["uid=0 euid=0 rhost=218.188.2.4", "blk_-1608999687919862906 0x1f 12:ab:cd:ef:00:11 -3.5s",
             "1.2.3.4-5", "aa:bb:cc:dd:ee:ff", "no digits here", "", "v1.2.3.4.5:80x"]
    texts += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))) for _ in range(20_000)]
    for t in texts:
        assert gated.mask(t) == plain.mask(t), t
