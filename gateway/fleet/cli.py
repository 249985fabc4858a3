"""`linegate fleet init | ship | status`: create the fleet's ClickHouse tables, ship a box's store (a running
appliance ships by itself; this ships a store on its own, e.g. a dead box's disk), show what is shipped.
Settings come from the config file's `[fleet]` table, then the options. Knows nothing about serving.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import tomllib
from pathlib import Path

from gateway.fleet.schema import init_schema
from gateway.fleet.settings import FleetSettings
from gateway.fleet.shipper import Shipper


def load_settings(args: argparse.Namespace) -> FleetSettings:
    """[fleet] of --config (if any), overridden by --url / --box-id / --cluster / --database."""
    data: dict = {}
    if getattr(args, "config", None):
        data = dict(tomllib.loads(Path(args.config).read_text(encoding="utf-8")).get("fleet", {}))
    for key in ("box_id", "cluster", "database", "user", "password"):
        if getattr(args, key, None) is not None:
            data[key] = getattr(args, key)
    if getattr(args, "url", None):
        data["urls"] = args.url
    return FleetSettings(**data)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, help="TOML file with a [fleet] table")
    p.add_argument("--url", action="append", help="a ClickHouse HTTP URL (repeat for each node)")
    p.add_argument("--cluster", help="the remote_servers name the Distributed tables span ('' for none)")
    p.add_argument("--database")
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--box-id", dest="box_id")


def _store_paths(data_dir: Path) -> tuple[Path, Path]:
    return data_dir / "logs.db", data_dir / "alerts.db"


def cmd_init(args: argparse.Namespace) -> int:
    for line in init_schema(load_settings(args)):
        print(line)
    return 0


def cmd_ship(args: argparse.Namespace) -> int:
    """Ships until caught up (--once) or until SIGTERM / Ctrl-C; prints the figures as JSON at the end."""
    settings = load_settings(args)
    store, alerts = _store_paths(args.data_dir)
    shipper = Shipper(settings, args.store or store, alerts if alerts.exists() else None,
                      args.data_dir / "fleet_cursor.json")
    if args.once:
        while shipper.ship_once() >= settings.batch_lines:
            pass
    else:
        done = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: done.set())
        shipper.start()
        try:
            done.wait()
        except KeyboardInterrupt:
            pass
    shipper.stop()
    print(json.dumps(shipper.figures()))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    store, _ = _store_paths(args.data_dir)
    shipper = Shipper(settings, args.store or store, None, args.data_dir / "fleet_cursor.json")
    shipper._refresh()
    print(json.dumps(shipper.figures()))
    shipper.stop()
    return 0


def add_commands(sub) -> None:
    """Registers `fleet` under the `linegate` command's sub-commands (gateway/cli.py)."""
    p = sub.add_parser("fleet", help="ship to and set up the plant's ClickHouse (docs/fleet.md)")
    fleet = p.add_subparsers(dest="fleet_command", metavar="FLEET_COMMAND", required=True)
    q = fleet.add_parser("init", help="create the tables (local and Distributed) on every node")
    _common(q)
    q.set_defaults(func=cmd_init)
    for name, func, text in (("ship", cmd_ship, "ship a box's store"), ("status", cmd_status, "what is shipped")):
        q = fleet.add_parser(name, help=text)
        _common(q)
        q.add_argument("--data-dir", type=Path, required=True, help="the box's data folder (logs.db, alerts.db)")
        q.add_argument("--store", type=Path, help="the store, when not <data-dir>/logs.db")
        if name == "ship":
            q.add_argument("--once", action="store_true", help="stop once every line is shipped")
        q.set_defaults(func=func)


def main(argv: list[str] | None = None) -> int:
    """`python -m gateway.fleet.cli init ...` (the same as `linegate fleet init ...`)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="linegate")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["fleet", *(argv if argv is not None else sys.argv[1:])])
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError) as exc:
        print(f"linegate fleet: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
