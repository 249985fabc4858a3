"""Header fields of self-describing lines: a JSON object per line, or logfmt (key=value pairs). The
line names its own fields, so no column is guessed: keys are read by a fixed vocabulary of field
names (the names log libraries use), and a key outside it by the type of its value (a timestamp, a
level word). Knows nothing about text headers (gateway.ingest.header) or sources.

The message is the message key's value, followed by the remaining scalar pairs as "key=value"
tokens, so that the template miner sees them as named parameters (`duration=<*>`); keys starting
with "_" or "@" are the shipper's metadata (journald's __CURSOR, _BOOT_ID; @version) and left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

MAX_PAIRS = 48                      # keys read from one line
MAX_JSON_CHARS = 16_384             # longer "JSON" lines are read as text

# Field names as log libraries write them (lower-cased, "_" and "." and "@" removed before lookup).
TIME_KEYS = ("time", "timestamp", "ts", "t", "datetime", "date", "realtimetimestamp", "eventtime", "logtime",
             "created", "asctime", "when", "at", "timegenerated", "timecreated")
LEVEL_KEYS = ("level", "lvl", "severity", "sev", "loglevel", "levelname", "priority", "prio", "pri", "lev")
MESSAGE_KEYS = ("message", "msg", "text", "txt", "log", "body", "event", "description", "desc", "content",
                "short_message", "shortmessage", "details")
HOST_KEYS = ("host", "hostname", "node", "nodename", "machine", "device", "unit", "station", "cell", "line",
             "equipment", "hostname_", "server", "instance", "robot", "plc", "asset")
COMPONENT_KEYS = ("component", "logger", "loggername", "module", "mod", "source", "src", "app", "application",
                  "service", "program", "syslogidentifier", "ident", "tag", "name", "caller", "unitname",
                  "subsystem", "category", "class")
PID_KEYS = ("pid", "processid", "process", "syslogpid")
SYSLOG_SEVERITIES = ("emergency", "alert", "critical", "error", "warning", "notice", "info", "debug")
_KV = re.compile(r'([A-Za-z_@][\w.@\-]*)=("(?:[^"\\]|\\.)*"|\S*)')


def _norm(key: str) -> str:
    return key.lower().replace("_", "").replace(".", "").replace("@", "").replace("-", "")


_RANK = {}
for _rank, _keys in enumerate((TIME_KEYS, LEVEL_KEYS, MESSAGE_KEYS, HOST_KEYS, COMPONENT_KEYS, PID_KEYS)):
    for _i, _k in enumerate(_keys):
        _RANK.setdefault(_norm(_k), (_rank, _i))
_FIELDS = ("time", "level", "message", "host", "component", "pid")


def pairs_of(line: str) -> dict[str, object] | None:
    """The line's key/value pairs when it is a JSON object or logfmt (>= 3 pairs covering most of the
    line); None for any other line."""
    s = line.strip()
    if s.startswith("{") and s.endswith("}") and len(s) <= MAX_JSON_CHARS:
        try:
            obj = json.loads(s)
        except ValueError:
            return None
        if isinstance(obj, dict):
            return _flatten(obj)
        return None
    if "=" not in s[:64] or not _KV.match(s):       # logfmt starts with its first pair
        return None
    found = list(_KV.finditer(s))
    if len(found) < 3 or found[0].start() != 0:
        return None
    covered = sum(m.end() - m.start() for m in found)
    if covered < 0.8 * len(s.replace(" ", "")):
        return None
    out: dict[str, object] = {}
    for m in found[:MAX_PAIRS]:
        v = m.group(2)
        if v.startswith('"') and v.endswith('"') and len(v) >= 2:
            v = v[1:-1].replace('\\"', '"')
        out[m.group(1)] = v
    return out


def _flatten(obj: dict, prefix: str = "") -> dict[str, object]:
    """Nested objects one level deep as "outer.inner" keys; lists as their JSON text."""
    out: dict[str, object] = {}
    for k, v in obj.items():
        if len(out) >= MAX_PAIRS:
            break
        key = f"{prefix}{k}"
        if isinstance(v, dict) and not prefix:
            out.update(_flatten(v, key + "."))
        elif isinstance(v, (list, dict)):
            out[key] = json.dumps(v, ensure_ascii=False)
        else:
            out[key] = v
    return out


def roles(pairs: dict[str, object], is_time: Callable[[str], bool], is_level: Callable[[str], bool]) -> dict[str, str]:
    """field -> key: by name first (the vocabulary above, first-listed name wins), then by value: a
    key whose value reads as a time, a level word, or, for the message, the longest text value."""
    best: dict[str, tuple[tuple[int, int], str]] = {}
    for k in pairs:
        nk = _norm(k.rsplit(".", 1)[-1]) if "." in k else _norm(k)
        r = _RANK.get(nk)
        if r is None:
            continue
        field = _FIELDS[r[0]]
        if field not in best or r < best[field][0]:
            best[field] = (r, k)
    out = {f: k for f, (_, k) in best.items()}
    taken = set(out.values())
    for k, v in pairs.items():
        if k in taken or not isinstance(v, (str, int, float)) or isinstance(v, bool):
            continue
        sv = str(v)
        if "time" not in out and is_time(sv):
            out["time"] = k
            taken.add(k)
        elif "level" not in out and isinstance(v, str) and is_level(sv):
            out["level"] = k
            taken.add(k)
    if "message" not in out:
        texts = [(len(str(v)), k) for k, v in pairs.items() if k not in taken and isinstance(v, str) and " " in v]
        if texts:
            out["message"] = max(texts)[1]
    return out


def level_value(v: object) -> str | None:
    """A numeric level as syslog's priority (journald's PRIORITY "3" -> error); None otherwise."""
    s = str(v).strip()
    if s.isdigit() and len(s) == 1:
        return SYSLOG_SEVERITIES[int(s)]
    return None


def message_of(pairs: dict[str, object], role: dict[str, str]) -> str:
    """The message value, then every other scalar pair outside the header fields as key=value."""
    head = {role[f] for f in ("time", "level", "host", "component", "pid", "message") if f in role}
    msg = str(pairs.get(role["message"], "")) if "message" in role else ""
    rest = [f"{k}={_scalar(v)}" for k, v in pairs.items()
            if k not in head and v is not None and v != "" and not k.startswith(("_", "@"))]   # "_", "@": metadata
    return " ".join(p for p in [msg, *rest] if p)


def _scalar(v: object) -> str:
    s = json.dumps(v) if isinstance(v, bool) else str(v)
    return s if " " not in s else '"' + s + '"'
