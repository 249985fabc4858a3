"""`linegate replay FILE --rate N --url URL [--key KEY]`: post a log file's lines to a running
appliance. Knows nothing about the appliance beyond its ingest endpoint."""

from __future__ import annotations

import argparse
import json
import os
import sys

from gateway.ingest.replay import http_sender, paced, read_lines


def replay(args: argparse.Namespace) -> int:
    key = args.key or os.environ.get("LINEGATE_API_KEY")
    try:
        result = paced(read_lines(args.file, loop=args.loop), args.rate,
                       http_sender(args.url, key, args.host), max_lines=args.max_lines)
    except (FileNotFoundError, ValueError, RuntimeError, OSError) as exc:
        print(f"linegate replay: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0 if result["acknowledged"] == result["sent"] else 1


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="post a log file's lines to a running appliance at N lines/s")
    p.add_argument("file", help="log file (any text; e.g. a Loghub *_2k.log)")
    p.add_argument("--rate", type=float, default=100.0, help="lines per second (default 100)")
    p.add_argument("--url", default="http://127.0.0.1:8080", help="appliance base URL")
    p.add_argument("--key", default=None, help="API key (default: $LINEGATE_API_KEY)")
    p.add_argument("--host", default="replay", help="host name given to the lines")
    p.add_argument("--loop", action="store_true", help="start over at the end of the file")
    p.add_argument("--max-lines", type=int, default=None, help="stop after this many lines")
    p.set_defaults(func=replay)
