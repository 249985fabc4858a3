"""Browser-test fixtures: the appliance (demo line injecting faults quickly, no engine unless asked)
behind a real uvicorn, and Debian's chromium driven headless by Playwright."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gateway.appliance import Appliance
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.server.settings import ServerSettings
from gateway.settings import Settings
from tests.server.conftest import model_server, serve_in_thread  # noqa: F401  (model_server: a shared fixture)

CHROMIUM = Path("/usr/bin/chromium")
DESKTOP = {"width": 1440, "height": 900}
TABLET = {"width": 820, "height": 1180}     # iPad Air portrait


def demo_settings(data_dir: Path, engine: bool = False) -> Settings:
    return Settings(
        data_dir=data_dir, server=ServerSettings(rate_limit_per_s=200, rate_limit_burst=400),
        ingest={"demo": {"enabled": True, "cycle_s": 0.25, "first_fault_s": 1.0, "jam_every_s": 4.0,
                         "overtemp_every_s": 6.0, "estop_every_s": 9.0}},
        engine={"enabled": engine, "model": "smollm2-135m-instruct", "n_ring": 512, "n_scratch": 512},
        alerts={"ttft_budget_ms": 60_000, "alert_budget_ms": 60_000, "explanation_max_tokens": 24})


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = CHROMIUM if CHROMIUM.exists() else shutil.which("chromium")
    if not path:
        pytest.fail("chromium not installed: run tools/setup_system.sh (apt package `chromium`)")
    return str(path)


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory):
    """(url, key, appliance): the demo line with no engine."""
    settings = demo_settings(tmp_path_factory.mktemp("ui"))
    key = KeyStore(settings.server.key_path(settings.data_dir)).create(name="browser test")
    appliance = Appliance(settings)
    with serve_in_thread(create_app(appliance, settings, manage_appliance=True)) as url:
        yield url, key, appliance


@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, headless=True, args=["--no-sandbox"])
        yield b
        b.close()
