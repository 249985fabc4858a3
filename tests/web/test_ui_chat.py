"""The chat in chromium against SmolLM2-135M: a streamed answer, clickable sources, an alert explanation."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.web.conftest import DESKTOP
from tests.web.test_ui import open_ui, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.models]


def test_ask_see_streamed_answer_and_sources(browser, model_server, artifacts_dir):
    url, key, _ = model_server
    ctx, page, errors = open_ui(browser, url, key, viewport=DESKTOP, scheme="light")
    page.fill("#chat-input", "Was there a jam?")
    page.click("#chat-send")
    page.wait_for_selector(".msg.assistant.streaming", timeout=10_000)
    # watch the answer grow while it streams: several distinct lengths before the end
    lengths = set()
    end = time.monotonic() + 120
    while time.monotonic() < end:
        state = page.evaluate("() => { const m = document.querySelector('.msg.assistant');"
                              " return [m.classList.contains('streaming'), m.querySelector('.answer').textContent.length]; }")
        if state[1]:
            lengths.add(state[1])
        if not state[0]:
            break
        time.sleep(0.05)
    assert len(lengths) >= 2, lengths
    assert page.locator(".msg.assistant .answer").inner_text().strip()
    assert page.locator(".msg.error").count() == 0
    # sources: clickable store lines that show the line in context
    page.wait_for_selector(".msg.assistant .source")
    first = page.locator(".msg.assistant .source").first
    line_id = first.get_attribute("data-line-id")
    assert "jam" in first.inner_text().lower()
    first.click()
    page.wait_for_selector(f"#log-list li.hit[data-line-id='{line_id}']")
    # an error line arriving now raises an alert at once; the model's explanation follows
    r = httpx.post(url + "/api/ingest", headers={"Authorization": f"Bearer {key}"},
                   content=json.dumps({"text": "ERROR capper torque sensor TS-4 signal lost", "host": "line3/capper"}))
    assert r.status_code == 200
    wait_js(page, "[...document.querySelectorAll('#alert-list .alert-text')].some(e => e.textContent.includes('TS-4'))", 10)
    wait_js(page, "[...document.querySelectorAll('#alert-list .alert-expl')].some(e => !e.classList.contains('pending'))", 150)
    page.screenshot(path=str(artifacts_dir / "ui-chat-desktop-light.png"))
    assert not errors, errors
    ctx.close()
