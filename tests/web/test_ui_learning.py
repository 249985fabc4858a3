"""The "learning" badge: shown beside the alerts' title while a source learns its baseline (no
new-kind alerts from it yet), with each source's lines and seconds to go; in en and zh-CN."""

from __future__ import annotations

import pytest

from tests.web.test_ui import open_ui, wait_js

pytestmark = pytest.mark.browser


def test_learning_badge_names_the_sources(browser, ui_server):
    url, key, appliance = ui_server
    ctx, page, errors = open_ui(browser, url, key)
    try:
        # the demo line's sources have just started: they learn (default 2,000 lines and 10 minutes)
        wait_js(page, "!document.getElementById('alerts-learning').hidden", 20)
        badge = page.locator("#alerts-learning")
        assert badge.inner_text().startswith("learning (")
        learning = appliance.triage.stats()["sources_learning"]
        title = badge.get_attribute("title")
        assert learning and all(src in title for src in learning) and "lines" in title
        page.click("#lang-toggle")
        wait_js(page, "document.getElementById('alerts-learning').textContent.startsWith('学习中')", 5)
        assert "行" in badge.get_attribute("title")
        assert errors == []
    finally:
        ctx.close()


def test_grouped_new_kinds_alert_lists_its_templates(browser, ui_server):
    from gateway.pipeline.alerts import Alert

    url, key, appliance = ui_server
    ctx, page, errors = open_ui(browser, url, key)
    try:
        appliance.alerts.publish(Alert(kind="new_template", severity="info", host="line3/plc", source="demo",
                                       template_id=7, template="glue nozzle <NUM> clogged\nink low <*>\n+1",
                                       lines=["glue nozzle 4 clogged", "ink low CJ-2"], line_ids=[], count=3))
        wait_js(page, "[...document.querySelectorAll('#alert-list .alert-kinds summary')]"
                      ".some((s) => s.textContent === '3 new kinds')", 20)
        page.locator("#alert-list .alert-kinds summary").first.click()     # opens; not the log context
        pre = page.locator("#alert-list .alert-kinds pre").first
        assert pre.inner_text().splitlines() == ["glue nozzle <NUM> clogged", "ink low <*>", "+1"]
        assert errors == []
    finally:
        ctx.close()
