"""The QA benchmarks' judge and loop rule (split from tools/bench/qa_questions.py, which names them too):
judge(answer, check) holds an answer to a check (number / any_of / all_of); is_loop and looped are the
degenerate-repetition rule."""

from __future__ import annotations

import re
from collections import Counter


# A number token: not glued to letters, digits, ':' (clock times), '/' or '-' (dates, ids); ASCII classes
# only, so a number inside Chinese text ("共出现了17次") is still a token.
_NUM_TOKEN = re.compile(r"(?<![A-Za-z0-9_:./\-])-?\d+(?:,\d{3})*(?:\.\d+)?(?![A-Za-z0-9_:/]|\.\d|-\d)")


def numbers_in(text: str) -> list[float]:
    return [float(m.group(0).replace(",", "")) for m in _NUM_TOKEN.finditer(text)]


def judge(answer: str, check: dict) -> bool:
    """True when `answer` satisfies every part of `check` (number / any_of / all_of). A span is found
    in the answer case-blind; one that ends in a space ends a word: "no " is in "No." and "no such",
    not in "node" (external_questions.NEGATIVE)."""
    text = answer or ""
    low = text.lower()
    if "number" in check:
        want = float(check["number"])
        if not any(abs(x - want) <= 1e-9 * max(1.0, abs(want)) for x in numbers_in(text)):
            return False
    if check.get("any_of") and not any(_holds(low, s) for s in check["any_of"]):
        return False
    if check.get("all_of") and not all(_holds(low, s) for s in check["all_of"]):
        return False
    return True


def _holds(low: str, span: str) -> bool:
    span = span.lower()
    if span.endswith(" ") and span.strip():
        return re.search(re.escape(span.rstrip()) + r"(?![^\W_])", low) is not None
    return span in low


LOOP_N = 10          # an n-gram of this many tokens ...
LOOP_REPEATS = 3     # ... occurring this many times (non-overlapping) is a loop


def loop_tokens(text: str) -> list[str]:
    """Words, numbers and punctuation; each CJK character its own token."""
    return re.findall(r"[\u3400-\u9fff\uf900-\ufaff]|[A-Za-z0-9_]+|[^\sA-Za-z0-9_\u3400-\u9fff\uf900-\ufaff]", text or "")


def is_loop(text: str, n: int = LOOP_N, repeats: int = LOOP_REPEATS) -> bool:
    """The answer degenerated into repetition: some run of `n` tokens occurs `repeats` times or more
    without overlapping itself."""
    toks = loop_tokens(text)
    last: dict[tuple, int] = {}
    count: Counter = Counter()
    for i in range(len(toks) - n + 1):
        g = tuple(toks[i:i + n])
        if g in last and i - last[g] < n:
            continue
        last[g] = i
        count[g] += 1
        if count[g] >= repeats:
            return True
    return False


def looped(text: str, finish_reason: str | None = None) -> bool:
    """The loop rule of the benchmark: a 10-token run repeated 3 times, or twice in an answer that ran
    into max_tokens (it was still repeating when it was cut)."""
    return is_loop(text) or (finish_reason == "length" and is_loop(text, repeats=2))
