"""Boot the arm64 image in qemu-system-aarch64 and check the appliance from the host (tools/boot_test.sh).

-M virt -cpu cortex-a76, Debian's arm64 kernel and the initramfs the image made for itself. From the host,
through forwarded ports: /health turns 200, a syslog line appears in /api/logs/search, a chat answer comes
back, /api/stats names the drafter and shows q8 activations (engine.act_precision "auto" on arm64); then a
power cut (system_reset from the QEMU monitor while NDJSON lines stream in over HTTP) and, after the reboot,
every acknowledged line must be in the store. Ends with one JSON line (`failed_checks` names what failed;
the exit status is 0 when nothing did). Stdlib only: it runs from any python3.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a file: the tools package
from tools.bench.harness import free_port, print_result  # noqa: E402

HEALTH_TIMEOUT_S = 2400      # TCG emulation: the first boot, the engine load and its probe generate
REQUEST_TIMEOUT_S = 600
STREAM_TIMEOUT_S = 20        # an ingest request during the power cut: the box may be gone
PART_OFFSET = 16 * 1024 * 1024   # the root partition (tools/build_image.sh)


class Box:
    """One qemu-system-aarch64 process, its monitor socket and the forwarded ports."""

    def __init__(self, work: Path, image: Path, key: str, log) -> None:
        self.work, self.image, self.key, self.log = work, image, key, log
        self.http, self.syslog = free_port(), free_port()
        self.monitor = work / "monitor.sock"
        self.proc: subprocess.Popen | None = None
        self.reset_at = 0.0

    def start(self) -> None:
        kver = next(self.work.glob("vmlinuz-*")).name.removeprefix("vmlinuz-")
        cmd = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a76", "-smp", "4", "-m", "3072",
               "-kernel", str(self.work / f"vmlinuz-{kver}"), "-initrd", str(self.work / f"initrd.img-{kver}"),
               "-append", "console=ttyAMA0 root=LABEL=linegate-root ro",
               # writeback on the host: a guest reset loses only what the guest had not flushed (its page cache)
               "-drive", f"file={self.image},format=raw,if=virtio,cache=writeback",
               "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{self.http}-:8080,"
                          f"hostfwd=udp:127.0.0.1:{self.syslog}-:5514",
               "-device", "virtio-net-pci,netdev=n0,romfile=",   # no PXE option ROM: booted by -kernel
               "-monitor", f"unix:{self.monitor},server,nowait", "-display", "none",
               "-serial", f"file:{self.work / 'console.log'}"]
        self.log(f"boot: {' '.join(cmd)}")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def monitor_cmd(self, line: str) -> None:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.monitor))
            s.sendall(line.encode() + b"\n")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.monitor_cmd("quit")
            self.proc.wait(30)

    def request(self, path: str, body: bytes | None = None, ctype: str = "application/json",
                timeout_s: float = REQUEST_TIMEOUT_S) -> tuple[int, bytes]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}", data=body,
                                     headers={"Authorization": f"Bearer {self.key}", "Content-Type": ctype})
        for _ in range(30):                   # rate-limited (429): wait as told and ask again
            try:
                with urllib.request.urlopen(req, timeout=timeout_s) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as e:
                if e.code != 429:
                    return e.code, e.read()
                time.sleep(float(e.headers.get("Retry-After") or 1))
        return 429, b""

    def wait_healthy(self, timeout_s: float) -> float | None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                return None
            try:
                if self.request("/health")[0] == 200:
                    return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(2)
        return None


def check_syslog(box: Box, log) -> bool:
    marker = f"boottest{int(time.time())}"
    line = f"<11>Dec  2 06:00:00 plc7 conveyor[42]: jam at station 4 {marker}".encode()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(line, ("127.0.0.1", box.syslog))
    for _ in range(60):
        status, body = box.request(f"/api/logs/search?q={marker}")
        if status == 200 and json.loads(body)["count"] >= 1:
            return True
        time.sleep(2)
    log(f"syslog: {marker} not found ({status} {body[:200]!r})")
    return False


def check_chat(box: Box, log) -> bool:
    body = json.dumps({"model": "linegate", "max_tokens": 8,
                       "messages": [{"role": "user", "content": "What happened at station 4?"}]}).encode()
    status, out = box.request("/v1/chat/completions", body)
    log(f"chat: {status} {out[:300]!r}")
    return status == 200 and bool(json.loads(out)["choices"][0]["message"]["content"])


def power_cut(box: Box, log, stream_s: float) -> tuple[list[str], threading.Thread]:
    """NDJSON batches over HTTP until the box dies; system_reset after stream_s. -> the acknowledged texts."""
    acked: list[str] = []
    stop = threading.Event()
    run = f"run{int(time.time())}"   # this run's lines, apart from an earlier run's on the same image

    def stream() -> None:
        n = 0
        while not stop.is_set():
            texts = [f"powercut {run} line {n + i} seq{n + i:06d}" for i in range(20)]
            body = "\n".join(json.dumps({"text": t, "host": "line3/plc"}) for t in texts).encode()
            try:
                status, out = box.request("/api/ingest", body, "application/x-ndjson", timeout_s=STREAM_TIMEOUT_S)
            except OSError:
                continue                      # the box is down: nothing was acknowledged
            if status == 200 and json.loads(out)["accepted"] == len(texts):
                acked.extend(texts)
            n += len(texts)
    t = threading.Thread(target=stream, daemon=True)
    t.start()
    time.sleep(stream_s)
    log(f"power cut: system_reset with {len(acked)} lines acknowledged so far")
    box.monitor_cmd("system_reset")
    box.reset_at = time.monotonic()
    time.sleep(5)
    stop.set()
    t.join(STREAM_TIMEOUT_S + 5)
    return acked, run


def lost_lines(box: Box, acked: list[str], run: str) -> int:
    found: set[str] = set()
    after = 0
    while True:
        status, body = box.request(f"/api/logs/search?q=powercut+{run}&after_id={after}&limit=1000")
        if status != 200:
            raise RuntimeError(f"search after a power cut: {status} {body[:200]!r}")
        rows = json.loads(body)["results"]
        if not rows:
            break
        found.update(r["text"] for r in rows)
        after = rows[-1]["id"]
    return sum(1 for t in acked if t not in found)


def journal_units(image: Path, work: Path, log) -> dict:
    """systemd's own record, read from the image's persistent journal after the machine stopped (the host
    has no `systemctl` into the emulated box): boots, the boots in which linegate.service started, and
    every unit that failed."""
    out = work / "journal"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    out.mkdir(parents=True)
    r = subprocess.run(["debugfs", "-R", f"rdump /var/log/journal {out}", f"{image}?offset={PART_OFFSET}"],
                       capture_output=True, text=True)
    if r.returncode:
        log(f"journal: debugfs failed: {r.stderr[-500:]}")
        return {"boots": None, "linegate_started": None, "units_failed": None}
    jdir = next(out.glob("journal/*"), None)
    if jdir is None:
        log("journal: no persistent journal in the image")
        return {"boots": None, "linegate_started": None, "units_failed": None}

    def journal(*args: str) -> str:
        return subprocess.run(["journalctl", f"--directory={jdir}", "--no-pager", "-o", "short", *args],
                              capture_output=True, text=True).stdout
    boots = len([ln for ln in journal("--list-boots").splitlines() if ln.strip() and not ln.startswith("IDX")])
    started = journal("-u", "linegate.service").count("Started linegate.service")
    failed = sorted(set(re.findall(r"systemd\[1\]: (\S+): Failed with result", journal())))
    log(f"journal: {boots} boots, linegate.service started in {started}, failed units {failed}")
    return {"boots": boots, "linegate_started": started, "units_failed": failed}


def failed_checks(result: dict) -> list[str]:
    """The checks a run failed; none: it passed. Each boot is judged by what survives a power cut: /health
    answering is the proof that linegate.service started, in the first boot and in the one after the reset.
    The image's journal counts where it speaks (a unit that failed fails the run; an unreadable journal too),
    not by what it lacks: the boot cut by system_reset loses the journal's unflushed tail (journald syncs
    every few minutes), so its "Started linegate.service" may be gone although the service answered.
    `linegate_started` and `boots` stay in the JSON as information."""
    checks = {
        "booted": result["booted"],
        "syslog_ok": result["syslog_ok"],
        "chat_ok": result["chat_ok"],
        "act_precision_q8": result["act_precision"] == "q8",
        "healthy_after_reset": result["health_after_reset_s"] is not None,
        "none_lost_after_reset": result["lost_after_reset"] == 0,
        "no_failed_units": result["units_failed"] == [],
    }
    return [name for name, ok in checks.items() if not ok]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="build_image.sh's work folder (kernel, initrd, key)")
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--stream-s", type=float, default=30.0)
    args = ap.parse_args()
    args.log.parent.mkdir(parents=True, exist_ok=True)
    logf = args.log.open("w")

    def log(msg: str) -> None:
        logf.write(f"{time.strftime('%H:%M:%S')} {msg}\n")
        logf.flush()
    result = {"booted": False, "health_s": None, "chat_ok": False, "syslog_ok": False, "drafter": None,
              "acked": 0, "lost_after_reset": None, "health_after_reset_s": None, "boots": None,
              "linegate_started": None, "units_failed": None, "simd": None, "act_precision": None}
    box = Box(args.work, args.image, (args.work / "first-key").read_text().strip(), log)
    try:
        box.start()
        result["health_s"] = box.wait_healthy(HEALTH_TIMEOUT_S)
        result["booted"] = result["health_s"] is not None
        if result["booted"]:
            result["syslog_ok"] = check_syslog(box, log)
            result["chat_ok"] = check_chat(box, log)
            status, body = box.request("/api/stats")
            stats = json.loads(body) if status == 200 else {}
            result["drafter"] = stats.get("drafter")
            engine = stats.get("engine") or {}   # the kernels the box picked, and "auto" precision resolved (q8 on arm64)
            result["simd"], result["act_precision"] = engine.get("simd"), engine.get("act_precision")
            acked, run = power_cut(box, log, args.stream_s)
            result["acked"] = len(acked)
            if box.wait_healthy(HEALTH_TIMEOUT_S) is not None:
                result["health_after_reset_s"] = time.monotonic() - box.reset_at
                result["lost_after_reset"] = lost_lines(box, acked, run)
    finally:
        box.stop()
        console = (args.work / "console.log").read_text(errors="replace") if (args.work / "console.log").exists() else ""
        log("console:\n" + console[-20000:])
        result.update(journal_units(args.image, args.work, log))
        result["failed_checks"] = failed_checks(result)
        log(json.dumps(result))
    print_result(result)
    return 1 if result["failed_checks"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
