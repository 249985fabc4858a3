"""Every write-up the code points at (a path under docs/perf ending in .md, with or without a #anchor, in
gateway/, native/, tools/ or tests/) exists, and every anchor names one of its headings as GitHub slugs
them; the same for the relative links between the write-ups (docs/perf/README.md, the index, and the notes
that mark a write-up superseded). A heading renamed in a write-up fails here instead of leaving a dangling
pointer in a comment or the index."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CODE_ROOTS = ("gateway", "native", "tools", "tests")
TEXT_SUFFIXES = {".py", ".pyi", ".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh", ".sh", ".txt", ".toml", ".cmake"}
REFERENCE = re.compile(r"docs/perf/([\w.\-/]+?\.md)(?:#([\w\-]+))?")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: link targets and formatting dropped, lower case, every character
    that is not a letter, digit, space, hyphen or underscore removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)       # [text](url) -> text
    text = re.sub(r"<[^>]+>", "", text).lower()                        # inline HTML
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading's anchor in a Markdown text (outside fenced code); repeats get -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    in_fence = False
    for line in markdown.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else HEADING.match(line)
        if m is None:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def references() -> list[tuple[str, str, str | None]]:
    """(where, write-up, anchor or None) for each reference in the code."""
    found = []
    for root in CODE_ROOTS:
        for path in sorted((REPO / root).rglob("*")):
            if path.suffix not in TEXT_SUFFIXES or not path.is_file() or "__pycache__" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for i, line in enumerate(text.splitlines(), 1):
                for m in REFERENCE.finditer(line):
                    found.append((f"{path.relative_to(REPO)}:{i}", m.group(1), m.group(2)))
    return found


def test_slugs_follow_github():
    assert github_slug("The plan (plan.h), from the same model") == "the-plan-planh-from-the-same-model"
    assert github_slug("Fifth session: `reduce_one_token`, a reducing kernel for one token's records") == \
        "fifth-session-reduce_one_token-a-reducing-kernel-for-one-tokens-records"
    assert github_slug("ATT_PREFETCH = 16 (native/attention.cpp)") == "att_prefetch--16-nativeattentioncpp"
    assert github_slug("2026-12-03: **every** type packed") == "2026-12-03-every-type-packed"
    assert anchors("# A\n## b\n```\n# not a heading\n```\n## b\n") == {"a", "b", "b-1"}


def test_the_code_points_at_write_ups():
    assert len(references()) >= 20     # the scan finds them (a broken pattern would pass everything below)


@pytest.mark.parametrize("where, doc, anchor", references())
def test_each_reference_resolves(where, doc, anchor):
    path = REPO / "docs" / "perf" / doc
    assert path.is_file(), f"{where}: docs/perf/{doc} does not exist"
    if anchor is not None:
        assert anchor in anchors(path.read_text(encoding="utf-8")), \
            f"{where}: docs/perf/{doc} has no heading #{anchor}"


def write_up_links() -> list[tuple[str, str, str | None]]:
    """(where, target, anchor or None) for each relative Markdown link in docs/perf/*.md (the index and the
    notes that mark a write-up superseded point at files and headings the same way the code does)."""
    link = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)")
    found = []
    for path in sorted((REPO / "docs" / "perf").glob("*.md")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in link.finditer(line):
                if "://" not in m.group(1):
                    found.append((f"{path.relative_to(REPO)}:{i}", m.group(1) or path.name, m.group(2)))
    return found


@pytest.mark.parametrize("where, target, anchor", write_up_links())
def test_each_link_between_write_ups_resolves(where, target, anchor):
    path = REPO / "docs" / "perf" / target
    assert path.exists(), f"{where}: {target} does not exist"
    if anchor is not None:
        assert path.suffix == ".md" and anchor in anchors(path.read_text(encoding="utf-8")), \
            f"{where}: {target} has no heading #{anchor}"


# A machine's own folders (the checkout's, a worktree's, a home directory), at the start of a path: not inside
# one (HDFS lines the QA records quote hold /user/root/...). /home/curi/ is not one: it is a path inside the
# Loghub Zookeeper lines.
MACHINE_PATH = re.compile(r"(?<![\w.-])(?:/work/|/root/|/Users/|/home/(?!curi/))")


def test_no_machine_paths_in_docs_perf():
    hits = []
    for path in sorted((REPO / "docs" / "perf").rglob("*")):
        if not path.is_file() or path.suffix in {".png", ".svg"}:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if MACHINE_PATH.search(line):
                hits.append(f"{path.relative_to(REPO)}:{i}")
    assert not hits, f"absolute paths of a machine (write them relative to the checkout): {hits[:10]}"
