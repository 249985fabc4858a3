"""The synthetic log corpus: deterministic, one line each, truth consistent with the raw line."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.bench import synth_logs as sl

CANONICAL = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
JSON_SHAPES = {"journald_json", "app_json", "k8s_json"}
ESCAPING = JSON_SHAPES | {"logfmt", "csv"}      # the message is quoted/escaped in the raw line
DAY = (1796342400.0, 1796428800.0)              # 2026-12-04 00:00 .. 2026-12-05 00:00 UTC


def test_shapes_listed():
    assert len(set(sl.SHAPES)) == len(sl.SHAPES) >= 16
    assert {"logcat", "rfc5424", "rfc3164", "journald_json", "app_json", "k8s_json", "chinese",
            "log4j_mdc", "windows_cbs", "nginx_access", "logfmt", "csv", "pipe"} <= set(sl.SHAPES)
    assert sum(s.startswith("invented_") for s in sl.SHAPES) >= 3
    with pytest.raises(ValueError):
        sl.generate("nope")


@pytest.mark.parametrize("shape", sl.SHAPES)
def test_shape(shape):
    lines = sl.generate(shape, 400, seed=3)
    assert lines == sl.generate(shape, 400, seed=3)             # deterministic
    assert [x.raw for x in lines] != [x.raw for x in sl.generate(shape, 400, seed=4)]
    assert len(lines) == 400
    ids = sl.template_ids(shape)
    assert 8 <= len(ids) <= 20 and len(set(ids)) == len(ids)
    assert {x.template_id for x in lines} == set(ids)             # every template used
    for x in lines:
        assert "\n" not in x.raw and "\r" not in x.raw and x.raw.strip() == x.raw
        assert x.ts is not None and DAY[0] <= x.ts < DAY[1]
        assert x.level is None if shape == "nginx_access" else x.level in CANONICAL
        assert x.message and all(isinstance(v, str) and v in x.message for v in x.params.values())
        if shape in JSON_SHAPES:
            assert x.message in json.loads(x.raw).values()
        elif shape not in ESCAPING:
            assert x.raw.endswith(x.message)
        if x.host is not None:
            assert x.host in x.raw
    ts = [x.ts for x in lines]
    assert ts == sorted(ts)


def test_message_is_template_plus_params():
    # one template id -> one text; its params alone fill it in to the message
    for shape in sl.SHAPES:
        text = {f"{shape}/{r.key}": r.text for r in sl._ROWS[shape]}
        for x in sl.generate(shape, 200, seed=1):
            t = text[x.template_id]
            assert sl._PH.sub(lambda m: x.params[m[1]], t) == x.message
            assert set(x.params) == {m[0] for m in sl._PH.findall(t)}


def test_known_truths():
    k8s = sl.generate("k8s_json", 200)
    for x in k8s:
        d = json.loads(x.raw)
        assert x.ts == d["ts"] and x.host == d.get("node") and x.message == d["msg"]
    j = sl.generate("journald_json", 50)[0]
    d = json.loads(j.raw)
    assert j.ts == int(d["__REALTIME_TIMESTAMP"]) / 1e6 and j.host == d["_HOSTNAME"]
    assert sl.CODE["C"] == "critical"
    cn = {x.raw.split("[")[1].split("]")[0]: x.level for x in sl.generate("chinese", 400)}
    assert cn["警告"] == "warning" and cn["严重"] == "critical" and cn["信息"] == "info"
    inv = {x.raw.split("<")[1].split(">")[0]: x.level for x in sl.generate("invented_1", 400)}
    assert inv["ALARM"] == "alert" and inv["FAULT"] == "error"


def test_cli():
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "tools/bench/synth_logs.py", "--shape", "csv", "--n", "5", "--seed", "1"],
                         cwd=root, capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == 5 and json.loads(out[0])["raw"] == sl.generate("csv", 5, 1)[0].raw
