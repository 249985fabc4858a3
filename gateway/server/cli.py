"""`linegate serve` (the whole appliance behind the API and web UI, under uvicorn) and `linegate keys create`.

Knows how to wire settings -> appliance -> app -> uvicorn; knows nothing about what the parts do inside.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gateway.appliance import Appliance
from gateway.server.app import create_app
from gateway.server.auth import KeyStore
from gateway.server.settings import ServerSettings, is_loopback
from gateway.server.tls import TlsError, cert_files, fingerprint
from gateway.settings import SettingsError, load


GRACEFUL_S = 3    # SIGTERM: requests get this long, then the appliance stops (within 5 s in all)


def _load_settings(args: argparse.Namespace):
    overrides: dict = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    try:
        settings = load(getattr(args, "config", None), **overrides)
        server = settings.server.model_dump()
        if getattr(args, "host", None):
            server["host"] = args.host
        if getattr(args, "port", None):
            server["port"] = args.port
        settings.server = ServerSettings.model_validate(server)
    except (SettingsError, ValueError) as exc:
        raise SystemExit(f"linegate: {exc}") from None
    return settings


def ui_url(host: str, port: int, key: str | None, scheme: str = "http") -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"{scheme}://{shown}:{port}/" + (f"#key={key}" if key else "")


def serve(args: argparse.Namespace) -> int:
    import uvicorn   # heavy (the ASGI server and its event loop): only `linegate serve` needs it

    from gateway.server.timeouts import KEEP_ALIVE_S, TimedH11Protocol

    settings = _load_settings(args)
    server = settings.server
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    keys = KeyStore(server.key_path(settings.data_dir))
    new_key = None
    if server.require_key and len(keys) == 0:
        new_key = keys.create(name="first start")
    if server.require_key and not is_loopback(server.host) and len(keys) == 0:
        raise SystemExit(f"linegate: refusing to listen on {server.host} without an API key "
                         f"(key file {keys.path} is empty)")
    tls: dict = {}
    scheme, shown_fp = "http", ""
    if server.tls:
        try:
            cert, key = cert_files(server, settings.data_dir)
        except TlsError as exc:
            raise SystemExit(f"linegate: {exc}") from None
        tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        scheme, shown_fp = "https", f" (certificate SHA-256 {fingerprint(cert)})"
    appliance = Appliance(settings)
    app = create_app(appliance, settings, manage_appliance=True)
    if new_key:
        print(f"linegate: first start: created an API key (only its sha256 is stored, in {keys.path}).\n"
              f"Open the UI with it (shown once):\n\n    {ui_url(server.host, server.port, new_key, scheme)}"
              f"{shown_fp}\n", flush=True)
    else:
        print(f"linegate: UI at {ui_url(server.host, server.port, None, scheme)}{shown_fp} "
              f"(keys: {len(keys)} in {keys.path}; new one: linegate keys create --data-dir {settings.data_dir})",
              flush=True)
    uvicorn.run(app, host=server.host, port=server.port, log_level="info", access_log=False,
                timeout_graceful_shutdown=GRACEFUL_S, http=TimedH11Protocol, timeout_keep_alive=KEEP_ALIVE_S,
                **tls)
    return 0


def keys_create(args: argparse.Namespace) -> int:
    settings = _load_settings(args)
    keys = KeyStore(settings.server.key_path(settings.data_dir))
    key = keys.create(name=args.name or "")
    print(key)
    print(f"(stored its sha256 in {keys.path}; the key itself is not kept anywhere)", file=sys.stderr)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the appliance with its API and web UI")
    p.add_argument("--config", type=Path, help="settings TOML file")
    p.add_argument("--data-dir", help="folder for all state (store, keys, triage state)")
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port (default 8080)")
    p.set_defaults(func=serve)

    k = sub.add_parser("keys", help="API keys")
    ksub = k.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    c = ksub.add_parser("create", help="print a new API key and store its hash")
    c.add_argument("--data-dir", help="folder holding the key hash file")
    c.add_argument("--config", type=Path, help="settings TOML file")
    c.add_argument("--name", help="a label for the key")
    c.set_defaults(func=keys_create)
