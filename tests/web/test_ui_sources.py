"""The "Sources" panel: one row per source with the format learned from its first lines (kind, origin,
header fields found and in what share, the example line), refreshed while the page is open; its
empty state and "learning" count; in en and zh-CN, on a tablet in the dark theme."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.web.conftest import TABLET
from tests.web.test_ui import open_ui, wait_js

pytestmark = pytest.mark.browser

PIPE = [f"2026-12-04 10:01:{i % 60:02d}.123|{'WARN' if i % 3 else 'INFO'}|line3-plc|io|input {i} stuck <b>bold</b>, "
        "sensor S-17 on conveyor B unchanged for 2000 ms"
        for i in range(30)]
JSON_LINES = [json.dumps({"time": f"2026-12-04T10:01:{i % 60:02d}Z", **({"level": "warning"} if i % 3 else {}),
                          "host": "press-07", "msg": f"drop {i} bar"}) for i in range(30)]


def ingest(url: str, key: str, source: str, lines: list[str]) -> None:
    body = "\n".join(json.dumps({"text": t, "source": source, "host": "peer"}) for t in lines)
    r = httpx.post(url + "/api/ingest", content=body, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200 and r.json()["accepted"] == len(lines), r.text


def row(page, source: str) -> dict:
    """What a source's row shows: kind and origin (attribute and label), fields, example."""
    return page.evaluate("""(src) => {
      const li = [...document.querySelectorAll('#source-list li')].find((x) => x.dataset.source === src);
      if (!li) return null;
      const ex = li.querySelector('.src-example code');
      return {kind: li.dataset.kind, origin: li.dataset.origin, name: li.querySelector('.src-name').textContent,
              kindLabel: li.querySelector('.src-kind').textContent, originLabel: li.querySelector('.src-origin').textContent,
              fields: Object.fromEntries([...li.querySelectorAll('.field')].map((b) =>
                [b.dataset.field, {text: b.textContent, missing: b.classList.contains('missing'), title: b.title}])),
              example: ex && ex.textContent, exampleTitle: ex && ex.title,
              exampleCut: ex && ex.scrollWidth > ex.clientWidth};
    }""", source)


def test_sources_panel_shows_each_learned_format(browser, ui_server):
    url, key, appliance = ui_server
    ctx, page, errors = open_ui(browser, url, key)
    try:
        # lines arrive after the page opened: the panel's periodic refresh shows them
        ingest(url, key, "plc", PIPE)
        ingest(url, key, "robot", JSON_LINES)
        ingest(url, key, "newcomer", PIPE[:3])          # fewer lines than a format is learned from
        wait_js(page, "['plc', 'robot'].every((s) => document.querySelector(`#source-list li[data-source='${s}']`))", 15)
        plc, robot = row(page, "plc"), row(page, "robot")
        assert (plc["kind"], plc["kindLabel"], plc["origin"], plc["originLabel"]) == (
            "delimited", "delimited", "induced", "learned")
        assert {f: b["text"] for f, b in plc["fields"].items() if not b["missing"]} == {
            "time": "time 100%", "level": "level 100%", "host": "host 100%", "component": "component 100%"}
        assert plc["fields"]["pid"] == {"text": "pid", "missing": True, "title": "not found"}
        # the example is text (its markup is not run), cut to the width, whole on hover
        assert plc["example"] == plc["exampleTitle"] == PIPE[0] and plc["exampleCut"]
        assert page.locator("#source-list b").count() == 0
        assert (robot["kind"], robot["kindLabel"], robot["origin"]) == ("json", "JSON", "induced")
        assert robot["fields"]["time"]["text"] == "time 100%" and robot["fields"]["host"]["text"] == "host 100%"
        assert robot["fields"]["level"]["text"] == "level 67%" and robot["fields"]["level"]["title"] == "67% of lines"
        assert robot["fields"]["component"]["missing"] and robot["example"] == JSON_LINES[0]
        assert row(page, "newcomer") is None
        assert appliance.triage.headers.learning() >= 1
        wait_js(page, "/^[1-9]\\d* learning$/.test(document.getElementById('sources-learning').textContent)", 10)
        assert not page.locator("#sources-learning").is_hidden() and page.locator("#sources-empty").is_hidden()
        assert int(page.locator("#sources-count").inner_text()) == page.locator("#source-list li").count() >= 2
        # switched to Chinese: the same rows, labels in zh-CN
        page.click("#lang-toggle")
        assert page.locator("#sources-h").inner_text().startswith("日志来源")
        plc, robot = row(page, "plc"), row(page, "robot")
        assert (plc["kindLabel"], plc["originLabel"], plc["fields"]["level"]["text"]) == ("分隔符", "自动学习", "级别 100%")
        assert plc["fields"]["pid"]["text"] == "进程号" and plc["fields"]["pid"]["missing"]
        assert (robot["kindLabel"], robot["fields"]["time"]["text"], robot["fields"]["level"]["title"]) == (
            "JSON", "时间 100%", "67% 的行")
        assert page.locator("#sources-learning").inner_text().endswith("个学习中")
        assert errors == []
    finally:
        ctx.close()


def test_sources_panel_in_chinese_on_a_dark_tablet(browser, ui_server, artifacts_dir):
    url, key, _ = ui_server
    ingest(url, key, "plc", PIPE)
    ingest(url, key, "robot", JSON_LINES)
    ctx, page, errors = open_ui(browser, url, key, viewport=TABLET, scheme="dark", locale="zh-CN")
    try:
        wait_js(page, "['plc', 'robot'].every((s) => document.querySelector(`#source-list li[data-source='${s}']`))", 15)
        assert row(page, "plc")["kindLabel"] == "分隔符" and row(page, "robot")["kindLabel"] == "JSON"
        assert row(page, "robot")["fields"]["component"] == {"text": "组件", "missing": True, "title": "未找到"}
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 20, 27)"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        panel = page.locator(".sources-card")
        panel.scroll_into_view_if_needed()
        assert panel.bounding_box()["width"] > TABLET["width"] / 2      # full width below the others
        panel.screenshot(path=str(artifacts_dir / "ui-sources-tablet-dark.png"))
        assert errors == []
    finally:
        ctx.close()


def test_empty_state_and_learning_count(browser, ui_server):
    """No format learned yet (the answer is served canned: the demo line's own source learns within a
    second): the empty state and how many sources are still reading their first lines."""
    url, key, _ = ui_server
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light", locale="en-US")
    page = ctx.new_page()
    page.route("**/api/sources", lambda route: route.fulfill(
        status=200, headers={"Content-Type": "application/json"},
        body=json.dumps({"sources": [], "learning": 2, "relearned": 0})))
    page.goto(url + "/")
    page.fill("#key-input", key)
    page.click("#key-save")
    page.wait_for_selector("#key-dialog", state="hidden")
    try:
        wait_js(page, "document.getElementById('sources-learning').textContent === '2 learning'", 15)
        assert page.locator("#sources-empty").inner_text() == "No source has been learned yet."
        assert page.locator("#source-list li").count() == 0 and page.locator("#sources-count").inner_text() == "0"
        assert page.locator("#sources-relearned").is_hidden()
        page.click("#lang-toggle")
        assert page.locator("#sources-empty").inner_text() == "尚未学到任何来源的格式。"
        assert page.locator("#sources-learning").inner_text() == "2 个学习中"
    finally:
        ctx.close()
