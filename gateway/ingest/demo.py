"""The demo source: a simulated bottle-packaging line (filler -> capper -> labeler -> case packer)
with PLC states, sensor readings, cycle counts, alarms, operator actions, and faults injected on
a schedule (jam, over-temperature, E-stop). Deterministic for a seed. Knows nothing of the store.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from gateway.ingest.record import LogRecord, Severity, SourceCounters

log = logging.getLogger(__name__)

SOURCE = "demo"
STATIONS = ("filler", "capper", "labeler", "casepacker")
OPERATORS = ("O-117", "O-203", "O-342")
HEATER_LIMIT_C = 85.0
FAULT_CYCLES = 4          # a fault stays active this many cycles before the operator clears it


@dataclass
class Fault:
    kind: str             # "jam" | "overtemp" | "estop"
    station: str
    started_cycle: int


class DemoLine:
    """cycle(ts) -> records of one machine cycle. Faults start at first_fault_s + k * every_s of
    simulated time (cycle index * cycle_s), so a run is reproducible for a seed."""

    def __init__(self, line: str = "line3", seed: int = 7, cycle_s: float = 2.0,
                 jam_every_s: float | None = 90.0, overtemp_every_s: float | None = 150.0,
                 estop_every_s: float | None = 240.0, first_fault_s: float = 20.0) -> None:
        self.line = line
        self.rng = random.Random(seed)
        self.cycle_s = cycle_s
        self.schedule = {"jam": jam_every_s, "overtemp": overtemp_every_s, "estop": estop_every_s}
        self.first_fault_s = first_fault_s
        self.n = 0                   # cycles run
        self.count = 0               # bottles through the line
        self.temp_c = 78.0           # filler heater zone 2
        self.state = "RUNNING"
        self.fault: Fault | None = None
        self._next_fault = {k: first_fault_s + i * 0.5 * cycle_s for i, (k, v) in enumerate(self.schedule.items()) if v}

    @classmethod
    def from_settings(cls, s) -> "DemoLine":
        return cls(line=s.line, seed=s.seed, cycle_s=s.cycle_s, jam_every_s=s.jam_every_s,
                   overtemp_every_s=s.overtemp_every_s, estop_every_s=s.estop_every_s, first_fault_s=s.first_fault_s)

    def _rec(self, ts: float, unit: str, text: str, sev: Severity) -> LogRecord:
        return LogRecord(ts=ts, source=SOURCE, host=f"{self.line}/{unit}", severity=int(sev), text=text)

    def cycle(self, ts: float) -> list[LogRecord]:
        r = self.rng
        out: list[LogRecord] = []
        sim_t = self.n * self.cycle_s
        if self.fault is None:
            for kind, due in sorted(self._next_fault.items(), key=lambda kv: kv[1]):
                if sim_t >= due:
                    self._next_fault[kind] = due + self.schedule[kind]   # type: ignore[operator]
                    out += self._start_fault(ts, kind)
                    break
        if self.fault is not None:
            out += self._fault_cycle(ts)
        else:
            made = r.randint(22, 26)
            self.count += made
            speed = r.gauss(720.0, 6.0)
            out.append(self._rec(ts, "plc", f"INFO cycle {self.n} complete: {made} bottles, total {self.count}, "
                                             f"line speed {speed:.0f} bph", Severity.INFO))
            self.temp_c += (80.0 - self.temp_c) * 0.3 + r.gauss(0, 0.4)
            out.append(self._rec(ts, "filler", f"INFO heater zone 2 temperature {self.temp_c:.1f} C, "
                                                f"fill level {r.gauss(500.0, 0.8):.1f} ml", Severity.INFO))
            out.append(self._rec(ts, "capper", f"INFO torque {r.gauss(2.10, 0.03):.2f} Nm, "
                                                f"caps applied {made}", Severity.INFO))
            if r.random() < 0.15:
                out.append(self._rec(ts, "labeler", f"NOTICE label roll {r.randint(10, 95)}% remaining",
                                     Severity.NOTICE))
            if r.random() < 0.05:
                op = r.choice(OPERATORS)
                out.append(self._rec(ts, "hmi", f"INFO operator {op} acknowledged shift checklist", Severity.INFO))
        self.n += 1
        return out

    def _start_fault(self, ts: float, kind: str) -> list[LogRecord]:
        r = self.rng
        if kind == "jam":
            st = r.choice(("labeler", "capper", "casepacker"))
            self.fault = Fault(kind, st, self.n)
            self.state = "FAULTED"
            return [self._rec(ts, st, f"ERROR JAM detected at infeed photoeye PE-{r.randint(10, 19)}: "
                                      f"bottles backed up, conveyor stopped", Severity.ERROR),
                    self._rec(ts, "plc", "WARNING state RUNNING -> FAULTED (jam)", Severity.WARNING)]
        if kind == "overtemp":
            self.fault = Fault(kind, "filler", self.n)
            self.temp_c = HEATER_LIMIT_C + r.uniform(3, 9)
            return [self._rec(ts, "filler", f"WARNING heater zone 2 over-temperature: {self.temp_c:.1f} C "
                                            f"above limit {HEATER_LIMIT_C:.1f} C", Severity.WARNING)]
        self.fault = Fault(kind, r.choice(STATIONS), self.n)
        self.state = "ESTOP"
        return [self._rec(ts, "plc", f"CRITICAL E-STOP pressed at station {self.fault.station}: "
                                     f"all drives de-energized", Severity.CRITICAL),
                self._rec(ts, "plc", "WARNING state RUNNING -> ESTOP", Severity.WARNING)]

    def _fault_cycle(self, ts: float) -> list[LogRecord]:
        f = self.fault
        assert f is not None
        r = self.rng
        age = self.n - f.started_cycle
        out: list[LogRecord] = []
        if f.kind == "jam":
            out.append(self._rec(ts, f.station, "ERROR JAM alarm active, waiting for operator", Severity.ERROR))
        elif f.kind == "overtemp":
            self.temp_c -= r.uniform(0.5, 2.0)
            out.append(self._rec(ts, "filler", f"WARNING heater zone 2 over-temperature: {self.temp_c:.1f} C "
                                                f"above limit {HEATER_LIMIT_C:.1f} C", Severity.WARNING))
        else:
            out.append(self._rec(ts, "plc", "ERROR E-STOP circuit open, restart inhibited", Severity.ERROR))
        if age >= FAULT_CYCLES:
            op = r.choice(OPERATORS)
            if f.kind == "jam":
                out.append(self._rec(ts, "hmi", f"INFO operator {op} cleared jam at {f.station}", Severity.INFO))
            elif f.kind == "overtemp":
                self.temp_c = 80.0
                out.append(self._rec(ts, "hmi", f"INFO operator {op} reduced heater zone 2 setpoint", Severity.INFO))
            else:
                out.append(self._rec(ts, "hmi", f"INFO operator {op} reset E-STOP at station {f.station}",
                                     Severity.INFO))
            if self.state != "RUNNING":
                out.append(self._rec(ts, "plc", f"NOTICE state {self.state} -> RUNNING", Severity.NOTICE))
            self.state = "RUNNING"
            self.fault = None
        return out

    def records(self, n_cycles: int, start_ts: float = 0.0) -> Iterator[LogRecord]:
        for i in range(n_cycles):
            yield from self.cycle(start_ts + i * self.cycle_s)


class DemoSource:
    """Runs a DemoLine in real time: one cycle every cycle_s, handed to `sink`."""

    def __init__(self, line: DemoLine, sink: Callable[[list[LogRecord]], list[int]],
                 counters: SourceCounters) -> None:
        self.line, self.sink, self.counters = line, sink, counters
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="source-demo", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            recs = self.line.cycle(time.time())
            try:
                self.sink(recs)
                self.counters.add(SOURCE, "lines", len(recs))
            except Exception as exc:   # the store refused (closing); keep the line running
                self.counters.add(SOURCE, "sink_errors")
                if self._stop.is_set():
                    return
                log.warning("demo: ingest failed: %s", exc)
            next_t += self.line.cycle_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))
