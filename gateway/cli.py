"""The `linegate` command: a thin dispatcher; each component adds its own sub-commands.

A component module exposes `add_commands(subparsers)`; it registers parsers whose
`func(args) -> int` does the work. This file knows nothing about what they do.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules that contribute sub-commands, in help order.
COMMAND_MODULES = (
    "gateway.llm.models",          # models pull | list
    "gateway.llm.gguf",            # gguf inspect
    "gateway.llm.generate",        # generate
    "gateway.server.cli",      # serve, keys
    "gateway.server.doctor",   # doctor [--calibrate]
    "gateway.ingest.cli",      # replay
    "gateway.fleet.cli",       # fleet init | ship | status
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="linegate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):  # component not built yet
                continue
            raise
        module.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
