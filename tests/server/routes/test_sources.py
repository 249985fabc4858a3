"""GET /api/sources: each source's learned format, and an operator's header pattern from the config."""

from __future__ import annotations

import pytest

from gateway.appliance import Appliance
from gateway.ingest.record import LogRecord
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.settings import Settings, SettingsError
from tests.server.conftest import make_settings


def _ingest(appliance, source: str, lines: list[str]) -> None:
    appliance.ingest([LogRecord.make(t, source=source, host="peer", ts=1_700_000_000.0 + i) for i, t in enumerate(lines)])


def test_learned_formats_are_shown_per_source(client, auth, appliance):
    pipe = [f"2026-12-04 10:01:{i % 60:02d}.123|{'WARN' if i % 3 else 'INFO'}|line3-plc|io|input {i} stuck" for i in range(30)]
    js = [f'{{"time": "2026-12-04T10:01:{i % 60:02d}Z", "lvl": "F", "unit": "press-07", "text": "drop {i} bar"}}'
          for i in range(30)]
    _ingest(appliance, "plc", pipe)
    _ingest(appliance, "robot", js)
    _ingest(appliance, "new", pipe[:3])                     # fewer lines than a format is learned from
    body = client.get("/api/sources", headers=auth).json()
    got = {s["source"]: s for s in body["sources"]}
    assert got["plc"]["kind"] == "delimited" and got["plc"]["origin"] == "induced"
    assert got["plc"]["fields"]["level"] == 1.0 and got["plc"]["fields"]["host"] == 1.0
    assert got["robot"]["kind"] == "json" and got["robot"]["fields"]["time"] == 1.0
    assert "new" not in got and body["learning"] == 1
    assert client.get("/api/sources").status_code == 401


def test_a_header_pattern_from_the_config_wins_and_is_shown(tmp_path):
    pattern = r"(?P<host>\S+) @ (?P<ts>\S+ \S+) (?P<level>\w+) >> (?P<message>.*)"
    s = make_settings(tmp_path)
    s = Settings(**{**s.model_dump(), "ingest": {"demo": {"enabled": False}, "header_patterns": {"odd": pattern}}})
    a = Appliance(s).start()
    try:
        key = KeyStore(s.server.key_path(s.data_dir)).create(name="t")
        from fastapi.testclient import TestClient
        with TestClient(create_app(a, s)) as c:
            _ingest(a, "odd", [f"cell-{i % 2} @ 2026-12-04 10:00:{i:02d} WARN >> gripper slip {i} mm" for i in range(30)])
            got = {x["source"]: x for x in c.get("/api/sources", headers={"Authorization": f"Bearer {key}"}).json()["sources"]}
            assert got["odd"]["pattern"] == pattern and got["odd"]["origin"] == "config"
        f = a.store.fields(1)
        assert f["line_host"] == "cell-0" and f["level"] == "warn" and f["time_text"] == "2026-12-04 10:00:00"
    finally:
        a.stop()


def test_a_bad_header_pattern_is_refused_naming_the_source(tmp_path):
    with pytest.raises((SettingsError, ValueError), match="odd"):
        Settings(data_dir=tmp_path, ingest={"header_patterns": {"odd": r"(?P<when>\S+) (?P<message>.*)"}})
    with pytest.raises((SettingsError, ValueError), match="odd"):
        Settings(data_dir=tmp_path, ingest={"header_patterns": {"odd": r"(?P<ts>\S+ (?P<message>.*)"}})
