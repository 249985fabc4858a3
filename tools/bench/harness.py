"""What every benchmark shares: a served appliance (`linegate serve` as a subprocess with its own data
dir on a free port, started once /health answers), free ports, RSS, the facts about the host the
figures come from (the core's model, family and SIMD flags; CPU time the hypervisor stole) and the
closing JSON line. Stdlib only (tools/boot_test.py runs it from any python3); knows nothing about
engines or the loads a benchmark drives.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 600.0      # the engine's load and its probe generate, on a slow core
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # 127.0.0.1: never through a proxy


# --- the closing line ----------------------------------------------------------------------------

def print_result(result, *, ensure_ascii: bool = True) -> None:
    """The benchmark's last line of output: one JSON object (what docs/perf and the A/B scripts read)."""
    print(json.dumps(result, ensure_ascii=ensure_ascii), flush=True)


# --- ports and memory ----------------------------------------------------------------------------

def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port on 127.0.0.1 that is free now (TCP by default; socket.SOCK_DGRAM for UDP)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status_mb(pid: int | str, field: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size (VmRSS) of a process, this one by default, in MiB; NaN for a process that has
    none (a zombie)."""
    return _status_mb(pid, "VmRSS")


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that across exec from the parent."""
    peak = _status_mb("self", "VmHWM")
    if peak != peak:
        raise RuntimeError("no VmHWM in /proc/self/status")
    return peak


# --- the host ------------------------------------------------------------------------------------

CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


def cpu_identity(cpuinfo: str) -> dict:
    """What kind of core the figures come from (/proc/cpuinfo text): model name, family/model, and the SIMD
    flags the kernels choose between. Hosts differ between runs (a Zen 3 without AVX-512, a Zen 5 with it)."""
    first: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if first:
                break
            continue
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    flags = set(first.get("flags", first.get("Features", "")).split())
    return {"model_name": first.get("model name", first.get("CPU part", "unknown")),
            "family": first.get("cpu family"), "model": first.get("model"),
            "simd_flags": [f for f in CPU_FLAGS_OF_INTEREST if f in flags]}


def cpu_ticks(stat: str) -> tuple[int, int]:
    """(total, steal) jiffies of the 'cpu' line of /proc/stat text (steal: time the hypervisor ran others)."""
    for line in stat.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(v) for v in parts[1:9]]
            values += [0] * (8 - len(values))
            return sum(values), values[7]
    raise ValueError("no 'cpu' line in /proc/stat")


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Share of CPU time stolen by the hypervisor between two cpu_ticks readings, in percent."""
    total = after[0] - before[0]
    return 100.0 * (after[1] - before[1]) / total if total > 0 else 0.0


def read_text(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def cpu_here() -> dict:
    """cpu_identity of this machine's /proc/cpuinfo."""
    return cpu_identity(read_text("/proc/cpuinfo") or "")


def cpu_model() -> str:
    """This machine's CPU model name ("unknown" where /proc/cpuinfo names none)."""
    return cpu_here()["model_name"]


# --- a served appliance --------------------------------------------------------------------------

class Served:
    """`python -m gateway serve` as a subprocess: a settings file with `config` in it, its own data dir,
    one API key, a free port on 127.0.0.1, its output in a log file. Started by the constructor, ready
    when /health answers 200; a context manager that always stops it.

    `cwd` is the checkout that serves (`python -m gateway` imports the gateway found there), so a
    benchmark can serve another checkout with the same loads; `linegate`, an installed `linegate`
    executable to run instead of `python -m gateway` (its venv decides which gateway serves)."""

    def __init__(self, workdir: Path, config: str = "", *, python: str = sys.executable, cwd: Path = REPO,
                 data_dir: Path | None = None, log_path: Path | None = None, env: dict | None = None,
                 key_name: str | None = None, ready_timeout_s: float = READY_TIMEOUT_S,
                 linegate: str | None = None) -> None:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir or workdir / "data"
        self.config = workdir / "linegate.toml"
        self.config.write_text(config, encoding="utf-8")
        self.log_path = log_path or workdir / "server.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        base = [linegate] if linegate else [python, "-m", "gateway"]
        where = ["--config", str(self.config), "--data-dir", str(self.data_dir)]
        keys = subprocess.run(base + ["keys", "create", *where] + (["--name", key_name] if key_name else []),
                              cwd=cwd, env=env, capture_output=True, text=True)
        if keys.returncode != 0:
            raise RuntimeError(f"linegate keys create failed: {keys.stderr.strip()[-500:]}")
        self.key = keys.stdout.strip().splitlines()[0].strip()
        self.auth = {"Authorization": f"Bearer {self.key}"}
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(base + ["serve", *where, "--host", "127.0.0.1", "--port", str(self.port)],
                                     cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self.ready_s = self.wait_healthy(ready_timeout_s)   # seconds from start to the first healthy answer
        except BaseException:
            self.stop(timeout_s=10)
            raise

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_healthy(self, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Seconds until /health answered 200; RuntimeError if the process exits or time runs out."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if not self.alive():
                raise RuntimeError(f"linegate serve exited (rc {self.proc.returncode}); see {self.log_path}")
            try:
                with _DIRECT.open(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - t0
            except OSError:           # not listening yet, or an HTTP error status (urllib's HTTPError)
                pass
            time.sleep(0.5)
        raise RuntimeError(f"linegate serve not ready in {timeout_s:.0f} s; see {self.log_path}")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> float | None:
        """Send `sig` (SIGTERM: the appliance's graceful stop); seconds until the process is gone, or None
        where it was killed after `timeout_s` or had already exited."""
        took = None
        if self.alive():
            t0 = time.monotonic()
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
                took = time.monotonic() - t0
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()
        return took
