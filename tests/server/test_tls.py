"""HTTPS: a self-signed certificate made once on first start, its fingerprint printed beside the UI
URL, the API served over TLS by `linegate serve` (a subprocess, a real port); bad paths named."""

from __future__ import annotations

import hashlib
import re
import signal
import ssl
import stat
import subprocess
import sys
import time

import httpx
import pytest

from gateway.server.settings import ServerSettings
from gateway.server.tls import TlsError, cert_files, fingerprint
from tests.helpers import ENV, free_port

NO_ENGINE = '[engine]\nenabled = false\n[ingest.demo]\ncycle_s = 0.2\n'


def test_self_signed_made_once_and_reused(tmp_path):
    s = ServerSettings(tls=True)
    cert, key = cert_files(s, tmp_path)
    assert cert == tmp_path / "tls" / "cert.pem" and stat.S_IMODE(key.stat().st_mode) == 0o600
    fp = fingerprint(cert)
    assert re.fullmatch(r"([0-9A-F]{2}:){31}[0-9A-F]{2}", fp)
    assert cert_files(s, tmp_path) == (cert, key) and fingerprint(cert) == fp      # not made again
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    assert hashlib.sha256(der).hexdigest().upper() == fp.replace(":", "")


def test_configured_files_must_exist_and_load(tmp_path):
    with pytest.raises(TlsError, match="server.tls_cert = .*missing.pem.*no such file"):
        cert_files(ServerSettings(tls=True, tls_cert="missing.pem", tls_key="k.pem"), tmp_path)
    (tmp_path / "c.pem").write_text("not a certificate")
    (tmp_path / "k.pem").write_text("not a key")
    with pytest.raises(TlsError, match="does not load"):
        cert_files(ServerSettings(tls=True, tls_cert="c.pem", tls_key="k.pem"), tmp_path)


def test_serve_over_https_prints_the_fingerprint(tmp_path):
    cfg = tmp_path / "linegate.toml"
    cfg.write_text(NO_ENGINE + "[server]\ntls = true\n")
    data, port = tmp_path / "data", free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--config", str(cfg), "--port", str(port),
                             "--data-dir", str(data)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=ENV)
    try:
        first = "".join(proc.stdout.readline() for _ in range(4))
        m = re.search(rf"https://127\.0\.0\.1:{port}/#key=(lg_[A-Za-z0-9_-]+) \(certificate SHA-256 ([0-9A-F:]+)\)",
                      first)
        assert m, first
        key, printed = m.group(1), m.group(2)
        cert = data / "tls" / "cert.pem"
        assert printed == fingerprint(cert)
        ctx = ssl.create_default_context(cafile=str(cert))            # trust exactly this certificate
        url = f"https://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(url + "/health", verify=ctx).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        r = httpx.get(url + "/api/logs/search", params={"limit": 1}, headers={"Authorization": f"Bearer {key}"},
                      verify=ctx)
        assert r.status_code == 200
        served = ssl.get_server_certificate(("127.0.0.1", port))
        assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(cert.read_text())
        with pytest.raises(httpx.TransportError):                     # plain HTTP is not answered
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=3)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_serve_refuses_plain_http_beyond_localhost(tmp_path):
    cfg = tmp_path / "linegate.toml"
    cfg.write_text(NO_ENGINE)
    r = subprocess.run([sys.executable, "-m", "gateway", "serve", "--config", str(cfg), "--host", "0.0.0.0",
                        "--data-dir", str(tmp_path)], capture_output=True, text=True, env=ENV, timeout=60)
    assert r.returncode != 0 and "plain HTTP" in r.stderr and "server.tls = true" in r.stderr
