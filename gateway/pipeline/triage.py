"""Triage: Drain3 template mining (state persisted in the data dir), per-template counts, and the
alert decisions (a template new against its source's baseline, grouped: gateway/pipeline/baseline.py;
severity >= a threshold, the header's level counted; configured rules with de-duplication and flap
suppression). Knows nothing about the store, the bus or the model.

Rules file (TOML), one table per rule:

    [[rule]]
    name = "jam"                  # required, unique
    match = "(?i)\\bjam\\b"       # regex on the line text ... or: template_id = 12
    host = "^line3/"              # optional regex on the host
    min_severity = "info"         # lines at least this severe count (default: debug = all)
    count = 3                     # fire when >= count matching lines ...
    window_s = 60                 # ... fall within window_s seconds (of record time)
    severity = "error"            # the alert's severity
    cooldown_s = 300              # de-dup: at most one alert per cooldown
    flap_max = 3                  # more activations than this within flap_window_s ...
    flap_window_s = 600           # ... and the rule is suppressed until it has been quiet that long
"""

from __future__ import annotations

import collections
import json
import logging
import os
import re
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from drain3.persistence_handler import PersistenceHandler
from drain3.template_miner_config import TemplateMinerConfig

from gateway.ingest.header import Header, stored_level
from gateway.ingest.source_format import SourceFormats
from gateway.pipeline.alerts import Alert, MAX_ALERT_LINES
from gateway.pipeline.baseline import BASELINE_FILE, BASELINE_LINES, BASELINE_S, Baselines, NewKind
from gateway.pipeline.fields import LineFields, named_params
from gateway.pipeline.masking import instructions
from gateway.pipeline.templates import CREATED, OVERFLOW, BoundedMiner
from gateway.ingest.record import LogRecord, Severity, parse_severity, parse_severity_strict, severity_name

log = logging.getLogger(__name__)

STATE_FILE = "drain3_state.bin"
CLOCK_BACK_S = 5.0                     # a line this much older than the rule's newest: the clock went back
HEADERS_FILE = "header_columns.json"   # each source's learned format (kept across restarts)
SNAPSHOT_INTERVAL_S = 30.0      # template *changes* are saved at most this often
SAVE_MIN_INTERVAL_S = 1.0       # new templates: saved at once, at most this often (ids are reserved ahead)
CALL_BUDGET_S = 2.0             # mining seconds one classify() call may spend (issue 30: bounded work)
BUDGET_PER_S = 0.5              # mining seconds per second, all callers together ...
BUDGET_BURST_S = 4.0            # ... saved up to this much
CHECK_EVERY = 16                # lines between budget / close checks
MAX_CLUSTERS = 20_000           # Drain's LRU bound: memory stays bounded on hostile input
# Drain keyed on token count only (depth 3: a first token that is a value, "admin acknowledged ...", no
# longer splits a template), with templates' proven plain words kept apart (templates.PROVEN_SIZE);
# chosen on the tune part of tools/bench/split.py (docs/perf/2026-12-04-any-format.md#the-miner).
DRAIN_SIM_TH = 0.5
DRAIN_DEPTH = 3
MAX_RULES = 256


def grouping_accuracy(pred: Sequence, truth: Sequence) -> float:
    """Grouping accuracy of Zhu et al. (Loghub benchmark): a line counts as correct when its
    predicted group holds exactly the lines of its ground-truth group."""
    groups: dict = collections.defaultdict(list)
    for i, p in enumerate(pred):
        groups[p].append(i)
    size = collections.Counter(truth)
    ok = 0
    for idx in groups.values():
        if len({truth[i] for i in idx}) == 1 and size[truth[idx[0]]] == len(idx):
            ok += len(idx)
    return ok / len(truth) if truth else 0.0


def miner_config() -> TemplateMinerConfig:
    cfg = TemplateMinerConfig()
    cfg.masking_instructions = instructions()      # gateway.pipeline.masking (MASKING)
    cfg.drain_sim_th = DRAIN_SIM_TH
    cfg.drain_depth = DRAIN_DEPTH
    cfg.drain_max_clusters = MAX_CLUSTERS
    cfg.snapshot_interval_minutes = 1e9    # saving is driven by Triage, per batch
    return cfg


def _year(ts: float) -> int | None:
    try:
        return time.gmtime(ts).tm_year
    except (OverflowError, OSError, ValueError):
        return None


class _AtomicFile(PersistenceHandler):
    """Drain3 state in one file, replaced atomically (write, fsync, rename): kill -9 leaves the old
    or the new state, never half of one."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def save_state(self, state: bytes) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(state)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def load_state(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None


def _load_columns(path: Path) -> dict[str, dict | list]:
    """The saved source formats (gateway.ingest.source_format; a list: induced columns alone, as
    earlier versions saved them); {} (and one log line) when the file is unreadable."""
    raw = _AtomicFile(path).load_state()
    if raw is None:
        return {}
    try:
        d = json.loads(raw)
        if isinstance(d, dict) and all(isinstance(k, str) and _format_ok(v) for k, v in d.items()):
            return d
    except ValueError:
        pass
    log.warning("ignoring unreadable header columns in %s", path)
    return {}


def _format_ok(v: object) -> bool:
    cols = v.get("columns", []) if isinstance(v, dict) else v
    return isinstance(cols, list) and all(isinstance(x, str) for x in cols)


def line_severity(rec: LogRecord, cl: "Classified") -> int:
    """A line's severity for alerts: the source's, raised to the header's level when the source gave
    the default (INFO, also LogRecord.make's when the text names no level), so that `<ALARM>`,
    "lvl": "F" or 警告 alert as ERROR does."""
    if rec.severity != Severity.INFO:
        return rec.severity
    lvl = cl.level
    if lvl is None and cl.fields is not None and cl.fields.level:
        lvl = parse_severity(cl.fields.level, None)
    return min(rec.severity, lvl) if lvl is not None else rec.severity


class TriageClosed(RuntimeError):
    pass


@dataclass
class Rule:
    name: str
    pattern: re.Pattern | None = None
    template_id: int | None = None
    host: re.Pattern | None = None
    min_severity: Severity = Severity.DEBUG
    count: int = 1
    window_s: float = 60.0
    severity: Severity = Severity.WARNING
    cooldown_s: float = 300.0
    flap_max: int = 3
    flap_window_s: float = 600.0
    # state
    hits: collections.deque = field(default_factory=collections.deque)         # (ts, id, text)
    activations: collections.deque = field(default_factory=collections.deque)  # ts
    active: bool = False
    last_fired: float = float("-inf")
    suppressed: int = 0

    def matches(self, rec: LogRecord, template_id: int | None, severity: int | None = None) -> bool:
        if (rec.severity if severity is None else severity) > self.min_severity:
            return False
        if self.host is not None and not self.host.search(rec.host):
            return False
        if self.template_id is not None and template_id != self.template_id:
            return False
        return self.pattern is None or self.pattern.search(rec.text) is not None


_RULE_KEYS = {"name", "match", "template_id", "host", "min_severity", "count", "window_s", "severity",
              "cooldown_s", "flap_max", "flap_window_s"}


def load_rules(path: str | Path) -> list[Rule]:
    """Rules from a TOML file; ValueError naming the file, the rule and the key on any mistake."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"rules file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"rules file {path} is not valid TOML: {exc}") from None
    extra = set(doc) - {"rule"}
    if extra:
        raise ValueError(f"rules file {path}: unknown top-level keys {sorted(extra)} (use [[rule]] tables)")
    raw = doc.get("rule", [])
    if len(raw) > MAX_RULES:
        raise ValueError(f"rules file {path}: {len(raw)} rules, the limit is {MAX_RULES}")
    rules, names = [], set()
    for i, r in enumerate(raw):
        where = f"rules file {path}, rule #{i + 1}"
        try:
            unknown = set(r) - _RULE_KEYS
            if unknown:
                raise ValueError(f"unknown keys {sorted(unknown)}")
            name = str(r["name"]) if "name" in r else ""
            if not name:
                raise ValueError("'name' is required")
            if name in names:
                raise ValueError(f"duplicate rule name {name!r}")
            where = f"rules file {path}, rule {name!r}"
            if ("match" in r) == ("template_id" in r):
                raise ValueError("give exactly one of 'match' (regex) or 'template_id'")
            rule = Rule(
                name=name,
                pattern=re.compile(r["match"]) if "match" in r else None,
                template_id=int(r["template_id"]) if "template_id" in r else None,
                host=re.compile(r["host"]) if "host" in r else None,
                min_severity=parse_severity_strict(r.get("min_severity", "debug")),
                count=int(r.get("count", 1)),
                window_s=float(r.get("window_s", 60)),
                severity=parse_severity_strict(r.get("severity", "warning")),
                cooldown_s=float(r.get("cooldown_s", 300)),
                flap_max=int(r.get("flap_max", 3)),
                flap_window_s=float(r.get("flap_window_s", 600)),
            )
            if rule.count < 1 or rule.window_s <= 0 or rule.cooldown_s < 0 or rule.flap_max < 1:
                raise ValueError("count >= 1, window_s > 0, cooldown_s >= 0, flap_max >= 1 are required")
        except re.error as exc:
            raise ValueError(f"{where}: bad regex: {exc}") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        names.add(name)
        rules.append(rule)
    return rules


@dataclass(slots=True)
class Classified:
    template_id: int
    template: str
    is_new: bool
    fields: LineFields | None = None
    overflow: bool = False          # the line joined its source's overflow template (not mined)
    overflow_new: bool = False      # ... and opened it: one template_overflow alert
    level: int | None = None        # the header's level as a Severity (None: the line has none)


class Triage:
    """classify(records) -> [Classified]  (finds each line's header, mines templates on the message
                                          and extracts the template's parameters; call before
                                          storing: ids and fields go with the rows)
    evaluate(records, ids, classified) -> [Alert]  (alerts to publish; stateful: dedup, windows, flaps,
                                                  each source's baseline and new-kind groups)
    new_kind_alerts(now) (grouped new-kind alerts still held), templates(limit), template(id),
    stats() (a snapshot, with the sources still learning), save(), close().   Thread-safe: one
    lock held for one line's tree update, another for the alert state."""

    def __init__(self, data_dir: str | Path | None, rules: Sequence[Rule] = (), *,
                 new_template_alerts: bool = True, min_alert_severity: int | str = Severity.WARNING,
                 dedup_s: float = 60.0, baseline_lines: int = BASELINE_LINES,
                 baseline_s: float = BASELINE_S, find_headers: bool = True,
                 header_patterns: dict[str, str] | None = None) -> None:
        self._lock = threading.Lock()          # the miner: held for one line's tree update
        self._alert_lock = threading.Lock()    # the alert state (evaluate)
        self._closing = False
        self._budget_s, self._budget_t = BUDGET_BURST_S, time.monotonic()
        self._persist = _AtomicFile(Path(data_dir) / STATE_FILE) if data_dir is not None else None
        if self._persist is not None:
            self._persist.path.parent.mkdir(parents=True, exist_ok=True)
        self.miner = BoundedMiner(self._persist, miner_config())   # loads the saved state, if any
        self.headers = SourceFormats(header_patterns) if find_headers else None   # None: mine the whole text
        self._saved_columns: dict = {}
        if self.headers is not None and self._persist is not None:
            self._saved_columns = _load_columns(self._persist.path.with_name(HEADERS_FILE))
            self.headers.set_formats(self._saved_columns)
        self.rules = list(rules)
        self.new_template_alerts = new_template_alerts
        self.min_alert_severity = parse_severity_strict(min_alert_severity)
        self.dedup_s = dedup_s
        # each source's baseline (no new-kind alerts while it learns) and the new-kind grouping
        self.baselines = Baselines(_AtomicFile(Path(data_dir) / BASELINE_FILE) if data_dir is not None else None,
                                   baseline_lines, baseline_s)
        self._baseline_figures = self.baselines.figures()   # (made under the alert lock; read by stats)
        self._dirty = False
        self._last_save = float("-inf")
        self._sev_last: dict[tuple[int, str], float] = {}        # (template, host) -> last alert ts
        self._sev_pending: collections.Counter = collections.Counter()   # suppressed since then
        self.counts = collections.Counter()    # mining figures (under _lock)
        self._acounts = collections.Counter()  # alert figures (under _alert_lock)
        self._snapshot: dict = {}
        self._publish_locked()

    # --- mining ----------------------------------------------------------------------------
    def classify(self, records: Sequence[LogRecord], deadline: float | None = None) -> list[Classified]:
        """Headers, masking and parameters run outside the lock; the lock covers one line's tree
        update. Past the work budget (CALL_BUDGET_S per call, BUDGET_PER_S per second, and the
        caller's `deadline`, time.monotonic()) a line is not mined: it joins its source's overflow
        template (counted as unmined); it is still stored."""
        if self._closing:
            raise TriageClosed("triage is closed")
        out = []
        created = False
        t_start = time.monotonic()
        end = t_start + min(CALL_BUDGET_S, self._refill(t_start))
        if deadline is not None:
            end = min(end, deadline)
        for i in range(0, len(records), CHECK_EVERY):
            if self._closing:
                raise TriageClosed("triage closed during classification")
            if time.monotonic() > end:
                out.extend(self._unmined(records[i:]))
                break
            created |= self._classify_chunk(records[i:i + CHECK_EVERY], out)
        spent = time.monotonic() - t_start
        with self._lock:
            self._budget_s -= spent
            self._dirty |= created or any(c.is_new or c.overflow for c in out)
            self.counts["lines"] += len(records)
            self.counts["mining_s"] += spent
            if self._persist is not None and self._dirty and time.monotonic() - self._last_save >= (
                    SAVE_MIN_INTERVAL_S if created else SNAPSHOT_INTERVAL_S):
                self._save_locked()
            self._publish_locked()
        return out

    def _classify_chunk(self, chunk: Sequence[LogRecord], out: list[Classified]) -> bool:
        """CHECK_EVERY lines, one step at a time over all of them (headers, masks, the tree, parameters):
        each step's code stays hot in the CPU's caches, about a quarter less time per line than
        taking each line through every step; the same results, as no step reads a later one's.
        Appends to `out`; True when a template was created."""
        if self.headers is not None:
            parse = self.headers.parse
            heads = [parse(rec.text, rec.source, _year(rec.ts)) for rec in chunk]
        else:
            heads = [Header(rec.text) for rec in chunk]
        mask, mine = self.miner.mask, self.miner.mine
        tokens = [mask(h.message) for h in heads]
        mined = []
        for rec, toks in zip(chunk, tokens):
            with self._lock:
                mined.append(mine(toks, rec.source))
        created = False
        for h, m in zip(heads, mined):
            created |= m.kind == CREATED
            params = named_params(m.template, h.message) if m.kind != OVERFLOW else []
            f = LineFields(time=h.ts, time_text=h.ts_text, host=h.host, component=h.component, pid=h.pid,
                           level=stored_level(h), template=m.template, params=params)
            out.append(Classified(m.cluster_id, m.template, m.kind == CREATED, f, m.kind == OVERFLOW, m.overflow_new,
                                  parse_severity(h.level, None) if h.level else None))
        return created

    def _refill(self, now: float) -> float:
        """The per-second work budget (a bucket of mining seconds): the seconds left to spend now."""
        with self._lock:
            self._budget_s = min(BUDGET_BURST_S, self._budget_s + (now - self._budget_t) * BUDGET_PER_S)
            self._budget_t = now
            return max(0.0, self._budget_s)

    def _unmined(self, records: Sequence[LogRecord]) -> list[Classified]:
        out = []
        with self._lock:
            for rec in records:
                m = self.miner.unmined(rec.source)
                out.append(Classified(m.cluster_id, m.template, False, LineFields(template=m.template), True,
                                      m.overflow_new))
            self.counts["unmined_lines"] += len(records)
        return out

    def _publish_locked(self) -> None:
        """The figures stats() returns: a fresh dict swapped in, so readers never take the lock."""
        d = dict(self.counts) | dict(self._acounts)
        d["templates"] = len(self.miner.drain.id_to_cluster)
        d["rules"] = len(self.rules)
        d.update(self.miner.overflow_figures())
        d.update(self._baseline_figures)
        self._snapshot = d

    def _save_locked(self) -> None:
        self.miner.save_state("triage")
        if self.headers is not None and (cols := self.headers.formats()) != self._saved_columns:
            _AtomicFile(self._persist.path.with_name(HEADERS_FILE)).save_state(json.dumps(cols).encode())
            self._saved_columns = cols
        self._dirty = False
        self._last_save = time.monotonic()

    def save(self) -> None:
        with self._lock:
            if self._persist is not None and self._dirty:
                self._save_locked()
        with self._alert_lock:
            self.baselines.save(force=True)

    def close(self) -> None:
        """Stops classification (a call in progress ends at its next line check) and saves."""
        self._closing = True
        self.save()

    def template(self, template_id: int) -> str | None:
        with self._lock:
            c = self.miner.drain.id_to_cluster.get(template_id)
            return c.get_template() if c else None

    def templates(self, limit: int = 100) -> list[dict]:
        """Templates by line count, largest first: {id, template, count}."""
        with self._lock:
            cs = list(self.miner.drain.clusters)
        cs = sorted(cs, key=lambda c: -c.size)[:limit]
        return [{"id": c.cluster_id, "template": c.get_template(), "count": c.size} for c in cs]

    # --- alert decisions -------------------------------------------------------------------
    def evaluate(self, records: Sequence[LogRecord], ids: Sequence[int],
                 classified: Sequence[Classified], new_kinds: set[int] | None = None) -> list[Alert]:
        """The alerts these lines raise now. new_kinds, if given, gets the ids of the lines judged new
        kinds: their alert may come later, grouped with the source's others, but they matter now (the
        KV cache keeps them: gateway/appliance.py)."""
        alerts: list[Alert] = []
        with self._alert_lock:
            now = float("-inf")              # the newest record time: closes new-kind groups
            for rec, line_id, cl in zip(records, ids, classified):
                self._acounts["seen"] += 1
                if cl.overflow_new:
                    alerts.append(self._alert("template_overflow", rec, line_id, cl, Severity.WARNING))
                now = max(now, rec.ts)
                sev = line_severity(rec, cl)
                new_kind = not cl.overflow and self.baselines.see(rec.source, rec.ts, cl.template_id, cl.is_new)
                if sev <= self.min_alert_severity:
                    a = self._severity_alert(rec, line_id, cl, sev)
                    if a is not None:
                        alerts.append(a)
                elif new_kind and self.new_template_alerts:
                    if new_kinds is not None:
                        new_kinds.add(line_id)
                    kind = NewKind(cl.template_id, cl.template, rec.text, line_id, rec.ts, rec.host, sev)
                    alerts += [self._new_kind_alert(*g) for g in self.baselines.group(rec.source, kind)]
                for rule in self.rules:
                    if rule.matches(rec, cl.template_id, sev):
                        a = self._rule_hit(rule, rec, line_id, cl)
                        if a is not None:
                            alerts.append(a)
            alerts += self._due_locked(now)
        with self._lock:
            self._publish_locked()
        return alerts

    def new_kind_alerts(self, now: float = float("inf")) -> list[Alert]:
        """The grouped new-kind alerts whose window has ended by record time `now` (default: all held).
        evaluate() releases them as lines arrive; this is for a quiet stream's end (a replay, a test)."""
        with self._alert_lock:
            alerts = self._due_locked(now)
        with self._lock:
            self._publish_locked()
        return alerts

    def _due_locked(self, now: float) -> list[Alert]:
        alerts = [self._new_kind_alert(*g) for g in self.baselines.due(now)]
        self.baselines.save()
        self._baseline_figures = self.baselines.figures()
        return alerts

    def _new_kind_alert(self, source: str, kinds: list[NewKind], more: int) -> Alert:
        """One alert for one new kind, or for several of one source: listed (templates, one line
        each), the rest counted."""
        self._acounts["alert_new_template"] += 1
        k0 = kinds[0]
        listed = "\n".join(k.template for k in kinds) + (f"\n+{more}" if more else "")
        return Alert(kind="new_template", severity=severity_name(min(k.severity for k in kinds)), host=k0.host,
                     source=source, template_id=k0.template_id, template=listed, ts=kinds[-1].ts,
                     lines=[k.text for k in kinds[:MAX_ALERT_LINES]],
                     line_ids=[k.line_id for k in kinds[:MAX_ALERT_LINES]], count=len(kinds) + more)

    def _alert(self, kind: str, rec: LogRecord, line_id: int, cl: Classified, sev: int, **kw) -> Alert:
        self._acounts[f"alert_{kind}"] += 1
        kw.setdefault("lines", [rec.text])
        kw.setdefault("line_ids", [line_id])
        return Alert(kind=kind, severity=severity_name(sev), host=rec.host, source=rec.source,
                     template_id=cl.template_id, template=cl.template, ts=rec.ts, **kw)

    def _severity_alert(self, rec: LogRecord, line_id: int, cl: Classified, sev: int) -> Alert | None:
        """One alert per (template, host) per dedup_s; the next one carries the suppressed count."""
        key = (cl.template_id, rec.host)
        last = self._sev_last.get(key)
        if last is not None and 0.0 <= rec.ts - last < self.dedup_s:     # a clock set back: not a repeat
            self._sev_pending[key] += 1
            self._acounts["dedup_suppressed"] += 1
            return None
        self._sev_last[key] = rec.ts
        count = 1 + self._sev_pending.pop(key, 0)
        return self._alert("severity", rec, line_id, cl, sev, count=count)

    def _rule_hit(self, rule: Rule, rec: LogRecord, line_id: int, cl: Classified) -> Alert | None:
        t = rec.ts
        if rule.hits and t < rule.hits[-1][0] - CLOCK_BACK_S:    # the clock went back: start the rule afresh
            rule.hits.clear()                                    # (else its window and cooldown hold for
            rule.activations.clear()                             # as long as the jump)
            rule.active, rule.last_fired = False, float("-inf")
        rule.hits.append((t, line_id, rec.text))
        while rule.hits and t - rule.hits[0][0] > rule.window_s:
            rule.hits.popleft()
        if len(rule.hits) < rule.count:
            rule.active = False          # the condition cleared
            return None
        if rule.active:
            return None                  # still the same episode
        rule.active = True
        rule.activations.append(t)
        while rule.activations and t - rule.activations[0] > rule.flap_window_s:
            rule.activations.popleft()
        if len(rule.activations) > rule.flap_max:
            rule.suppressed += 1         # flapping: silent until quiet for flap_window_s
            self._acounts["flap_suppressed"] += 1
            return None
        if t - rule.last_fired < rule.cooldown_s:
            rule.suppressed += 1
            self._acounts["dedup_suppressed"] += 1
            return None
        rule.last_fired = t
        recent = list(rule.hits)[-MAX_ALERT_LINES:]
        count = len(rule.hits) + rule.suppressed
        rule.suppressed = 0
        return self._alert("rule", rec, line_id, cl, rule.severity, rule=rule.name, count=count,
                           lines=[x[2] for x in recent], line_ids=[x[1] for x in recent])

    def stats(self) -> dict:
        """The figures as of the last classify/evaluate call (a snapshot: never waits for ingest)."""
        return dict(self._snapshot)
