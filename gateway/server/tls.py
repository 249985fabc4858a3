"""HTTPS for the API: the certificate the user supplies, or a self-signed one made on first start
(openssl, EC P-256, 10 years) under the data dir, and the SHA-256 fingerprint an operator compares
when the browser asks.

Knows nothing about uvicorn or the routes: serve() passes the paths on.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

from gateway.server.settings import ServerSettings

SELF_SIGNED_DIR = "tls"          # under the data dir: cert.pem, key.pem
SELF_SIGNED_DAYS = 3650
OPENSSL_TIMEOUT_S = 60


class TlsError(RuntimeError):
    pass


def cert_files(server: ServerSettings, data_dir: str | Path) -> tuple[Path, Path]:
    """(certificate, key) to serve with: the configured ones (checked to exist and load), else the
    self-signed pair under data_dir/tls, made now if missing."""
    data_dir = Path(data_dir)
    if server.tls_cert is not None and server.tls_key is not None:
        cert, key = (p if p.is_absolute() else data_dir / p for p in (Path(server.tls_cert), Path(server.tls_key)))
        for name, p in (("server.tls_cert", cert), ("server.tls_key", key)):
            if not p.is_file():
                raise TlsError(f"{name} = {str(p)!r}: no such file")
    else:
        folder = data_dir / SELF_SIGNED_DIR
        cert, key = folder / "cert.pem", folder / "key.pem"
        if not (cert.is_file() and key.is_file()):
            make_self_signed(cert, key, server.host)
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise TlsError(f"certificate {cert} with key {key} does not load: {exc}") from None
    return cert, key


def make_self_signed(cert: Path, key: Path, host: str) -> None:
    """A self-signed certificate for localhost, this machine's name and `host` (when it is an address)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError("server.tls = true without tls_cert needs the `openssl` command to make a self-signed "
                       "certificate: install openssl, or give server.tls_cert and server.tls_key")
    names = {"DNS:localhost", "IP:127.0.0.1", "IP:::1", f"DNS:{socket.gethostname()}"}
    try:
        names.add(f"IP:{ipaddress.ip_address(host)}")
    except ValueError:
        if host:
            names.add(f"DNS:{host}")
    names.discard("IP:0.0.0.0")
    names.discard("IP:::")
    cert.parent.mkdir(parents=True, exist_ok=True)
    tmp_key = key.with_suffix(".tmp")
    old = os.umask(0o077)                          # the key is readable by its owner only
    try:
        r = subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-nodes", "-days", str(SELF_SIGNED_DAYS), "-subj", "/CN=linegate",
                            "-addext", "subjectAltName=" + ",".join(sorted(names)),
                            "-keyout", str(tmp_key), "-out", str(cert.with_suffix(".tmp"))],
                           capture_output=True, text=True, timeout=OPENSSL_TIMEOUT_S)
    finally:
        os.umask(old)
    if r.returncode != 0:
        raise TlsError(f"openssl could not make a self-signed certificate: {r.stderr.strip()}")
    os.replace(tmp_key, key)
    os.replace(cert.with_suffix(".tmp"), cert)


def fingerprint(cert: Path) -> str:
    """SHA-256 of the (first) certificate's DER, as browsers show it: 'AB:CD:...'."""
    pem = cert.read_text()
    end = pem.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")
    der = ssl.PEM_cert_to_DER_cert(pem[pem.index("-----BEGIN CERTIFICATE-----"):end] + "\n")
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())
