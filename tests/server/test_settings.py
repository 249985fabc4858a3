"""ServerSettings: safe defaults; listening beyond localhost without a key is refused with a clear message."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.server.settings import ServerSettings, is_loopback
from gateway.settings import SettingsError, load


def test_defaults_are_closed():
    s = ServerSettings()
    assert (s.host, s.port, s.require_key, s.cors_origins) == ("127.0.0.1", 8080, True, [])


def test_no_key_beyond_localhost_is_refused():
    with pytest.raises(ValidationError, match="beyond localhost.*require_key"):
        ServerSettings(host="0.0.0.0", require_key=False)
    ServerSettings(host="127.0.0.1", require_key=False)   # loopback-only development box: allowed
    ServerSettings(host="0.0.0.0", require_key=True, tls=True)


def test_plain_http_beyond_localhost_is_refused_unless_chosen():
    with pytest.raises(ValidationError, match="plain HTTP.*server.tls = true"):
        ServerSettings(host="0.0.0.0")
    ServerSettings(host="0.0.0.0", plain_http_beyond_localhost=True)   # said explicitly: allowed
    ServerSettings(host="127.0.0.1")                                   # loopback: plain HTTP is fine
    with pytest.raises(ValidationError, match="tls_cert and server.tls_key go together"):
        ServerSettings(tls=True, tls_cert="c.pem")


def test_wildcard_cors_refused():
    with pytest.raises(ValidationError, match="cors_origins"):
        ServerSettings(cors_origins=["*"])


def test_refusal_through_toml_names_the_key(tmp_path):
    cfg = tmp_path / "linegate.toml"
    cfg.write_text('[server]\nhost = "0.0.0.0"\nrequire_key = false\n')
    with pytest.raises(SettingsError, match="server"):
        load(cfg)


def test_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.com")
