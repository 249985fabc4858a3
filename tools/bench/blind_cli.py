"""The command line of the blind question sets (qa_blind3.py, qa_calendar.py): a set's module has DATA,
build(), validate() and part(); this builds and validates the set, keeps the part asked for and writes it
(qa_questions.write_questions)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from types import ModuleType

from tools.bench.qa_questions import write_questions


def default_data() -> Path:
    """The Loghub 2k samples: LOGHUB_DIR, else ../shared/data/loghub beside the checkout."""
    env = os.environ.get("LOGHUB_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data" / "loghub"


def read_2k(path: Path) -> list[str]:
    """A 2k sample's non-blank lines; it must hold 2,000 (the questions' golds presume the file as shipped)."""
    lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    assert len(lines) == 2000, (str(path), len(lines))
    return lines


def parse(lines: list[str], rx: str, strip: bool = False) -> list[re.Match]:
    """Each line matched by `rx` (from its start; `strip`: its trailing blanks dropped first); every line must."""
    r = re.compile(rx)
    out = []
    for ln in lines:
        m = r.match(ln.rstrip() if strip else ln)
        assert m, ("line does not parse", rx, ln)
        out.append(m)
    return out


def question(prefix: str, system: str, n: int, kind: str, lang: str, text: str, check: dict) -> dict:
    """One question of a set: its id "<prefix>-<system>-<n>" (part() reads the number)."""
    return {"system": system, "id": f"{prefix}-{system}-{n}", "kind": kind, "lang": lang, "question": text,
            "check": check}


def part(question: dict) -> str:
    """The sets' split, fixed before any run: "tune" for a question whose number (the id's last part) is even,
    "held" for an odd one."""
    return "tune" if int(question["id"].rsplit("-", 1)[1]) % 2 == 0 else "held"


def check_questions(qs: list[dict], systems: tuple[str, ...], kinds: tuple[str, ...]) -> None:
    """Each question's keys, system, language, kind and check (number / any_of / all_of); ids unique."""
    ids = [x["id"] for x in qs]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for x in qs:
        assert set(x) == {"system", "id", "kind", "lang", "question", "check"}, x
        assert x["system"] in systems and x["lang"] in ("en", "zh") and x["kind"] in kinds, x
        ck = x["check"]
        assert len(ck) == 1 and next(iter(ck)) in ("number", "any_of", "all_of"), x
        if "number" in ck:
            assert isinstance(ck["number"], (int, float)), x
        else:
            spans = next(iter(ck.values()))
            assert spans and all(isinstance(s, str) and s for s in spans), x


def main(module: ModuleType, argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(module.__doc__ or "").splitlines()[0])
    ap.add_argument("--data", type=Path, default=None,
                    help="loghub directory (default: LOGHUB_DIR or ../shared/data/loghub beside the checkout)")
    ap.add_argument("--part", choices=("tune", "held", "all"), default="all")
    ap.add_argument("--out", type=Path, default=None, help="output JSON (default stdout)")
    a = ap.parse_args(argv)
    if a.data is not None:
        module.DATA = a.data
    qs = module.build()
    module.validate(qs)
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
    write_questions([x for x in qs if a.part == "all" or module.part(x) == a.part], a.out)
    return 0
