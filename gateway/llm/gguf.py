"""GGUF files from Python: the native reader (gateway._native.GGUFFile) and `linegate gguf inspect`.

Parsing lives in native/gguf.cpp; this module only summarizes and prints. Knows nothing about models.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway._native import GGUFError, GGUFFile

__all__ = ["GGUFError", "GGUFFile", "open_gguf", "summarize", "add_commands"]

ARRAY_INLINE_MAX = 16   # arrays up to this length are shown whole
ARRAY_HEAD = 8          # items shown of a longer array (vocab, merges, token types)
STRING_SHOWN_MAX = 200  # characters of a long string value (chat templates) in text output


def open_gguf(path: str | Path) -> GGUFFile:
    """Open and validate a GGUF file; raises GGUFError naming the file and the problem."""
    return GGUFFile(str(path))


def summarize(f: GGUFFile, array_inline_max: int = ARRAY_INLINE_MAX, array_head: int = ARRAY_HEAD) -> dict[str, Any]:
    """A JSON-ready description: header, metadata (long arrays summarized) and tensor infos.

    Tensor `offset` is relative to `data_offset`, as stored in the file; `shape` is in ggml
    order (shape[0] is the row length).
    """
    metadata: dict[str, Any] = {}
    for key in f.keys():
        vtype, elem_type, length = f.value_type(key)
        if vtype == "ARRAY" and length > array_inline_max:
            metadata[key] = {
                "type": "array",
                "elem_type": elem_type.lower(),
                "len": length,
                "head": f.array_head(key, array_head),
            }
        else:
            metadata[key] = f.get(key)
    return {
        "path": f.path,
        "version": f.version,
        "alignment": f.alignment,
        "data_offset": f.data_offset,
        "file_size": f.file_size,
        "metadata": metadata,
        "tensors": [
            {"name": t.name, "shape": t.shape, "type": t.type, "offset": t.offset, "nbytes": t.nbytes}
            for t in f.tensors
        ],
    }


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= STRING_SHOWN_MAX else text[:STRING_SHOWN_MAX] + f"... ({len(text)} chars)"


def _print_text(summary: dict[str, Any], out) -> None:
    print(f"{summary['path']}: GGUF v{summary['version']}, {summary['file_size']} bytes, "
          f"alignment {summary['alignment']}, data at {summary['data_offset']}", file=out)
    print(f"metadata ({len(summary['metadata'])} keys):", file=out)
    for key, value in summary["metadata"].items():
        if isinstance(value, dict) and value.get("type") == "array":
            shown = f"[{value['elem_type']} x {value['len']}] {_short(value['head'])}..."
        else:
            shown = _short(value)
        print(f"  {key} = {shown}", file=out)
    print(f"tensors ({len(summary['tensors'])}):", file=out)
    for t in summary["tensors"]:
        print(f"  {t['name']:<40} {t['type']:<6} {str(t['shape']):<20} offset {t['offset']}", file=out)


def _inspect(args: argparse.Namespace) -> int:
    try:
        summary = summarize(open_gguf(args.path))
    except GGUFError as exc:
        print(f"linegate gguf inspect: {exc}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print_text(summary, sys.stdout)
    return 0


def add_commands(subparsers) -> None:
    gguf = subparsers.add_parser("gguf", help="read GGUF files")
    sub = gguf.add_subparsers(dest="gguf_command", metavar="SUBCOMMAND", required=True)
    inspect = sub.add_parser("inspect", help="print a GGUF file's header, metadata and tensors")
    inspect.add_argument("path", help="GGUF file")
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    inspect.set_defaults(func=_inspect)
