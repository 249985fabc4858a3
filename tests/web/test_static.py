"""The UI's source keeps to its rules: no HTML sinks for text, no inline script (the CSP forbids it), no CDN."""

from __future__ import annotations

import re
from pathlib import Path

WEB = Path(__file__).resolve().parents[2] / "web"
HTML_SINKS = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*['\"]on")


def test_no_html_sinks_in_scripts():
    for js in WEB.glob("*.js"):
        hits = [(i + 1, line.strip()) for i, line in enumerate(js.read_text().splitlines()) if HTML_SINKS.search(line)]
        assert not hits, (js.name, hits)


def test_page_has_no_inline_code_or_remote_assets():
    html = (WEB / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "inline <script>"
    assert not re.search(r"<style\b|\sstyle=", html), "inline style"
    assert not re.search(r"\son[a-z]+=", html), "inline event handler"
    for path in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert not re.match(r"(https?:)?//", path), f"remote asset {path}: the appliance has no internet"
        if not path.startswith("data:"):
            assert (WEB / path).is_file(), path
