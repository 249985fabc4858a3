"""API keys: only hashes on disk; verify compares every stored hash with hmac.compare_digest; token bucket."""

from __future__ import annotations

import hmac
import os
import stat
import threading

import pytest

from gateway.server import auth
from gateway.server.auth import KeyStore, RateLimiter, hash_key


def test_key_file_holds_only_hashes(tmp_path):
    store = KeyStore(tmp_path / "keys.json")
    key = store.create(name="ops")
    text = (tmp_path / "keys.json").read_text()
    assert key.startswith("lg_") and len(key) >= 40
    assert key not in text and key[3:] not in text
    assert hash_key(key) in text
    assert stat.S_IMODE(os.stat(tmp_path / "keys.json").st_mode) == 0o600
    assert store.verify(key).name == "ops"
    assert store.verify(key + "x") is None and store.verify("") is None


def test_two_keys_distinct_and_both_valid(tmp_path):
    store = KeyStore(tmp_path / "keys.json")
    a, b = store.create(), store.create()
    assert a != b and len(store) == 2
    assert store.verify(a).id != store.verify(b).id


def test_running_server_sees_a_key_created_later(tmp_path):
    path = tmp_path / "keys.json"
    server_view = KeyStore(path)
    assert len(server_view) == 0
    key = KeyStore(path).create()          # `linegate keys create` in another process
    assert server_view.verify(key) is not None


def test_verify_uses_compare_digest_on_every_hash_without_early_exit(tmp_path, monkeypatch):
    store = KeyStore(tmp_path / "keys.json")
    keys = [store.create() for _ in range(4)]
    calls = []
    real = hmac.compare_digest
    me = threading.get_ident()

    def spy(a, b):
        if threading.get_ident() == me:   # hmac is shared: count this test's calls only
            calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    assert store.verify(keys[0]) is not None          # match on the first hash...
    assert len(calls) == 4                            # ...still compared with all four
    assert all(a == hash_key(keys[0]).encode() for a, _ in calls)   # digests compared, never raw keys
    calls.clear()
    assert store.verify("lg_" + "A" * 43) is None
    assert len(calls) == 4


def test_corrupt_key_file_is_named(tmp_path):
    (tmp_path / "keys.json").write_text('{"scheme": "md5", "keys": []}')
    with pytest.raises(ValueError, match="keys.json"):
        KeyStore(tmp_path / "keys.json")


def test_rate_limiter_bucket():
    now = [100.0]
    rl = RateLimiter(rate_per_s=2.0, burst=3, clock=lambda: now[0])   # not patched into time: other threads share it
    assert [rl.take("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = rl.take("k")
    assert wait == pytest.approx(0.5)
    now[0] += 0.5
    assert rl.take("k") == 0.0
    assert rl.take("other") == 0.0


def test_concurrent_creates_lose_no_key(tmp_path):
    import subprocess
    import sys

    code = "import sys; from gateway.server.auth import KeyStore; print(KeyStore(sys.argv[1]).create())"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "keys.json")], stdout=subprocess.PIPE,
                              text=True) for _ in range(6)]
    keys = [p.communicate(timeout=60)[0].strip() for p in procs]
    store = KeyStore(tmp_path / "keys.json")
    assert len(store) == 6 and all(store.verify(k) for k in keys)
