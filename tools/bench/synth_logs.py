"""Synthetic log lines in many device/application shapes, with ground truth.

Written independently of the parser (an evaluation corpus): every line comes
with its timestamp, canonical level, host, component, message, template id
and template parameters.

    python tools/bench/synth_logs.py --shape logcat --n 100 --seed 1   # JSONL

Truth conventions:
- ts: UTC epoch seconds; a time with no zone is read as UTC, no year -> 2026.
- level: debug/info/notice/warning/error/critical/alert/emergency, or None.
- host: the machine/unit the line is about (k8s: the pod's node, else None).
- message: the free text after the header (JSON: the message field's value;
  nginx_access: everything after the bracketed time).
- template_id: "<shape>/<key>", the same for every line of one message template.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import uuid
import zlib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

UTC = timezone.utc
CET = timezone(timedelta(hours=1))          # a zoned local time (no DST in December)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BASE = datetime(2026, 12, 4, 10, 1, 2, tzinfo=UTC)
MON = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
CODE = dict(zip("DINWECAX", LEVELS))        # level codes used in the template tables
SEV = {name: 7 - k for k, name in enumerate(LEVELS)}   # syslog severity numbers


@dataclass
class SynthLine:
    raw: str
    ts: float | None
    level: str | None
    host: str | None
    component: str | None
    message: str
    template_id: str
    params: dict[str, str] = field(default_factory=dict)


# ---- parameter kinds: {name}, {name:kind} or {name:kind:arg} in a template ----
PICKS = {k: v.split("|") for k, v in (ln.split(" = ", 1) for ln in r"""
user = root|alice|bob|operator|jdoe|svc_backup|admin|mes|wang.li
svc = nginx|mosquitto|opcua-gw|influxdb|node-red|telegraf
pkg = com.factory.scanner|com.factory.mes|com.android.chrome|com.android.settings|com.zebra.datawedge
ns = default|kube-system|mes|monitoring|ingress
image = registry.plant.example/mes/api:2.14.1|docker.io/library/nginx:1.27|ghcr.io/acme/opc-gw:0.9.3
container = api|worker|opc-gw|sidecar|nginx|exporter
line = L1|L2|L3|L4
iface = eth0|eth1|enp3s0|wlan0
mount = /|/var|/data|/var/lib/influxdb
path = /var/log/messages|/data/hist/2026/12/04.seg|/etc/opcua/server.xml|/opt/mes/recipes/HOOD-L.rcp|/var/lib/influxdb/engine/wal/_000123.wal|/home/operator/export.csv|/tmp/upload-7f3a.bin
referer = -|-|https://mes.plant.example/dashboard|https://mes.plant.example/orders
agent = Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36|curl/8.5.0|python-requests/2.32.3|Go-http-client/1.1|Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0
ssid = PLANT-IOT|PLANT-GUEST|Hall-B-AP
""".strip().splitlines())}


def _span(arg):                             # "lo-hi", either may be negative
    return re.fullmatch(r"(-?[\d.]+)-(-?[\d.]+)", arg).groups()


def _chars(r, n, alphabet):
    return "".join(r.choice(alphabet) for _ in range(n))


def _ip(r):                                 # mostly plant-internal, some public
    net = r.choice(("10.3", "10.12", "10.20", "192.168", "192.168", "203.0", "185.220"))
    return f"{net}.{r.randint(0, 255)}.{r.randint(1, 254)}"


FUNCS = {
    "ip": lambda r, a: _ip(r),
    "port": lambda r, a: str(r.randint(1024, 65535)),
    "pid": lambda r, a: str(r.randint(200, 32768)),
    "ms": lambda r, a: str(r.choice((r.randint(1, 99), r.randint(100, 9999)))),
    "dur": lambda r, a: r.choice((f"{r.randint(1, 999)} ms", f"{r.uniform(1, 60):.2f} s")),
    "size": lambda r, a: f"{r.uniform(0.5, 999):.1f} {r.choice(('KB', 'MB', 'GB'))}",
    "int": lambda r, a: str(r.randint(*map(int, _span(a)))),
    "hex": lambda r, a: _chars(r, int(a or 8), "0123456789abcdef"),
    "id": lambda r, a: _chars(r, int(a or 6), "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"),
    "uuid": lambda r, a: str(uuid.UUID(int=r.getrandbits(128), version=4)),
    "mac": lambda r, a: ":".join(f"{r.randint(0, 255):02x}" for _ in range(6)),
    "pick": lambda r, a: r.choice(a.split("|")),
    "pod": lambda r, a: f"{r.choice(('mes-api', 'opc-gw', 'grafana', 'historian'))}-"
                        f"{_chars(r, 10, '0123456789abcdef')}-{_chars(r, 5, 'bcdfghjklmnpqrstvwxz2456789')}",
    "rs": lambda r, a: f"{r.choice(('mes-api', 'opc-gw', 'grafana'))}-{_chars(r, 10, '0123456789abcdef')}",
    "order": lambda r, a: f"ORD-{r.randint(100000, 999999)}",
    "sku": lambda r, a: f"SKU-{r.randint(1000, 9999)}-{r.choice('ABCDEF')}",
    "wo": lambda r, a: f"WO-2026-{r.randint(1, 9999):05d}",
    "barcode": lambda r, a: str(r.randint(10 ** 12, 10 ** 13 - 1)),
    "url": lambda r, a: f"https://mes.plant.example/api/v2/scans?batch={r.randint(1, 9999)}",
}
_PH = re.compile(r"\{(\w+)(?::(\w+)(?::([^{}]*))?)?\}")


def _value(r, kind, arg, hosts):
    m = re.fullmatch(r"(f|dc)(\d)", kind)
    if m:                                   # fN: N decimals; dcN: decimal comma
        lo, hi = map(float, _span(arg))
        s = f"{r.uniform(lo, hi):.{m[2]}f}"
        return s.replace(".", ",") if m[1] == "dc" else s
    if kind == "host":
        return r.choice(hosts)
    if kind in PICKS:
        return r.choice(PICKS[kind])
    return FUNCS[kind](r, arg)


# ---- header formatters: c has dt, us, ymd, ms, seq, rng, lvl (native), level, host, comp, key, msg, params ----
def _pid(name):                             # a stable pid per program
    return 1 if name == "systemd" else 300 + zlib.crc32(name.encode()) % 9000


FAC = {"sshd": 4, "su": 4, "sudo": 10, "CRON": 9, "kernel": 0, "postfix/smtp": 2, "systemd": 3,
       "ntpd": 3, "dhcpd": 3, "snmpd": 3, "NetworkManager": 3, "dockerd": 3, "systemd-logind": 4}


def f_rfc5424(c):
    k = c.rng.random()                      # structured data on some lines only
    sd = ("-" if k < 0.65 else f'[meta sequenceId="{c.seq}"]' if k < 0.85
          else f'[origin ip="{_ip(c.rng)}" software="{c.comp}"][meta sequenceId="{c.seq}"]')
    procid = "-" if c.comp == "historian" else _pid(c.comp)
    return (f"<{FAC.get(c.comp, 16) * 8 + SEV[c.level]}>1 {c.dt:%Y-%m-%dT%H:%M:%S}.{c.ms}Z {c.host} "
            f"{c.comp} {procid} {c.rng.choice(('-', '-', 'ID47', 'AUDIT'))} {sd} {c.msg}")


def f_journald(c):
    boot = f"{zlib.crc32(c.host.encode()):08x}" * 4
    mono = c.us - 1796300000000000 + zlib.crc32(c.host.encode()) % 10 ** 9
    d = {"__CURSOR": f"s={boot[::-1]};i={c.seq:x};b={boot};m={mono:x};t={c.us:x};x={c.rng.getrandbits(64):016x}",
         "__REALTIME_TIMESTAMP": str(c.us), "__MONOTONIC_TIMESTAMP": str(mono), "_BOOT_ID": boot,
         "PRIORITY": str(SEV[c.level]), "SYSLOG_FACILITY": str(FAC.get(c.comp, 3)),
         "SYSLOG_IDENTIFIER": c.comp, "_HOSTNAME": c.host, "_MACHINE_ID": boot[::-1], "_TRANSPORT": "kernel"}
    if c.comp != "kernel":
        d.update(_TRANSPORT="syslog", _PID=str(_pid(c.comp)), _UID="0", _GID="0", _COMM=c.comp.lower()[:15])
        if c.comp != "systemd":             # PID 1 has no unit of its own
            d["_SYSTEMD_UNIT"] = f"{c.comp.lower()}.service"
    d["MESSAGE"] = c.msg
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


CALLER = {"kubelet": "kuberuntime/kuberuntime_manager.go", "scheduler": "scheduler/schedule_one.go",
          "controller-manager": "replicaset/replica_set.go", "kube-proxy": "iptables/proxier.go",
          "cert-manager": "certificates/sync.go", "ingress-nginx": "controller/nginx.go"}


def f_k8s(c):
    d = {"ts": round(c.us / 1e6, 3), "level": c.lvl, "logger": c.comp,
         "caller": f"{CALLER[c.comp]}:{100 + zlib.crc32(c.key.encode()) % 1900}", "msg": c.msg}
    c.host = c.params.get("node", c.host) if "pod" in c.params else None
    if c.host:                              # pod lines carry the pod and its node
        d.update(pod=c.params["pod"], node=c.host)
    return json.dumps(d)


THREADS = [f"http-nio-8080-exec-{k}" for k in range(1, 11)] + [
    "scheduling-1", "main", "HikariPool-1 housekeeper", "kafka-coordinator-heartbeat-thread | order-svc"]


def f_log4j(c):
    th = c.rng.choice(THREADS)
    mdc = (f"reqId={_chars(c.rng, 4, '0123456789abcdef')} user={c.rng.choice(PICKS['user'])}"
           if th.startswith("http") else "reqId= user=")     # MDC is empty off request threads
    return f"{c.ymd},{c.ms} [{th}] {c.lvl:<5} {c.comp} [{mdc}] - {c.msg}"


def f_nginx(c):
    loc = c.dt.astimezone(CET)
    user = c.rng.choice(PICKS["user"]) if c.rng.random() < 0.1 else "-"
    return f"{_ip(c.rng)} - {user} [{loc.day:02d}/{MON[loc.month - 1]}/{loc:%Y:%H:%M:%S} +0100] {c.msg}"


def _lf(v):                                 # logfmt: quote only when needed
    if v and not re.search(r'[\s="\\]', v):
        return v
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def f_invented_1(c):
    """PLC event journal: '#record compact-time host <LEVEL> COMP: msg' (FAULT, ALARM, EMERG)."""
    return f"#{c.seq:06d} {c.dt:%Y%m%dT%H%M%S}.{c.ms} {c.host} <{c.lvl}> {c.comp}: {c.msg}"


LOCATION = {"cnc-04": "Hall B / Bay 4", "cnc-05": "Hall B / Bay 5", "mill-2": "Hall A / Bay 1",
            "lathe-1": "Hall A / Bay 3", "cmm-1": "QA Lab"}


def f_invented_2(c):
    """MES gateway TSV export: epoch ms, level, host, location (with spaces), component, msg."""
    return "\t".join((str(c.us // 1000), c.lvl, c.host, LOCATION[c.host], c.comp, c.msg))


def f_invented_3(c):
    """Weld controller file log: file name, day-first date, [time], program - level: msg; no host."""
    return f"weldctl_{c.dt:%Y%m%d}.log {c.dt:%d/%m/%Y} [{c.dt:%H:%M:%S}.{c.ms}] {c.comp} - {c.lvl}: {c.msg}"


def f_invented_4(c):
    """German energy/SCADA export: dd.mm.yyyy;hh:mm:ss;meter;letter (S=Störung);system;msg, decimal commas."""
    return ";".join((f"{c.dt:%d.%m.%Y}", f"{c.dt:%H:%M:%S}", c.host, c.lvl, c.comp, c.msg))


HEADER = {
    "logcat": lambda c: (f"{c.dt:%m-%d %H:%M:%S}.{c.ms} {_pid(c.comp):5d} {_pid(c.comp) + c.rng.randint(0, 60):5d} "
                         f"{c.lvl} {c.comp}: {c.msg}"),
    "rfc5424": f_rfc5424,
    "rfc3164": lambda c: (f"<{FAC.get(c.comp, 16) * 8 + SEV[c.level]}>{MON[c.dt.month - 1]} {c.dt.day:2d} "
                          f"{c.dt:%H:%M:%S} {c.host} {c.comp}{'' if c.comp == 'kernel' else f'[{_pid(c.comp)}]'}: {c.msg}"),
    "journald_json": f_journald,
    "app_json": lambda c: json.dumps({"time": f"{c.dt.astimezone(CET):%Y-%m-%dT%H:%M:%S}.{c.ms}+01:00", "lvl": c.lvl,
                                      "unit": c.host, "mod": c.comp, "text": c.msg, "seq": c.seq}, ensure_ascii=False),
    "k8s_json": f_k8s,
    "chinese": lambda c: f"{c.ymd}.{c.ms} [{c.lvl}] {c.host} {c.comp}: {c.msg}",
    "log4j_mdc": f_log4j,
    "windows_cbs": lambda c: f"{c.ymd}, {c.lvl:<22}{c.comp:<7}{c.msg}",
    "nginx_access": f_nginx,
    "logfmt": lambda c: (f"time={c.dt:%Y-%m-%dT%H:%M:%S}Z level={c.lvl} host={c.host} component={c.comp} "
                         f"msg={_lf(c.msg)} seq={c.seq}"),
    "csv": lambda c: f'{c.ymd},{c.lvl},{c.host},{c.comp},"{c.msg.replace(chr(34), chr(34) * 2)}"',
    "pipe": lambda c: "|".join((f"{c.ymd}.{c.ms}", c.lvl, c.host, c.comp, c.msg)),
    "pipe_spaced": lambda c: " | ".join((f"{c.ymd}.{c.ms}", c.lvl, c.host, c.comp, c.msg)),
    "invented_1": f_invented_1, "invented_2": f_invented_2, "invented_3": f_invented_3, "invented_4": f_invented_4,
}


# ---- templates: "== shape" then "key LEVEL component :: text" rows (LEVEL in DINWECAX or -;
#      component - for none; nginx rows are "request ## status choices") ----
TABLES = r"""
== logcat
am_start I ActivityManager :: Start proc {pid}:{pkg}/u0a{uid:int:10-250} for activity {pkg}/.MainActivity
am_died I ActivityManager :: Process {pkg} (pid {pid}) has died: fg TOP
am_anr E ActivityManager :: ANR in {pkg}, reason: Input dispatching timed out ({ms} ms)
wifi_conn I WifiStateMachine :: Connected to SSID "{ssid}" rssi={rssi:int:-90--30}
wifi_lost W WifiStateMachine :: Lost connection to {bssid:mac}, reason {code:int:1-15}
batt_low W PowerManagerService :: Battery level {pct:int:3-15}% below threshold, temp {temp:f1:30-45} C
pm_install I PackageManager :: Package {pkg} installed, {size} written to /data/app/{dir:id:8}
bt_fail E BluetoothAdapter :: {mac} connect failed: status={code:int:1-140}
input_slow W InputDispatcher :: Window {pkg} is not responding, waited {ms} ms
sigsegv C libc :: Fatal signal 11 (SIGSEGV), code 1, fault addr 0x{addr:hex:8} in tid {tid:int:1000-30000}
scan_ok D ScannerService :: decoded barcode {barcode} in {ms} ms
scan_upload I ScannerService :: {count:int:1-50} scans uploaded to {url}
gc D art :: Background concurrent copying GC freed {objs:int:1000-90000}({size}) AllocSpace objects, paused {dur}
== rfc5424
ssh_fail W sshd :: Failed password for {user} from {ip} port {port} ssh2
ssh_ok I sshd :: Accepted publickey for {user} from {ip} port {port} ssh2: RSA SHA256:{fp:id:43}
sudo N sudo :: {user} : TTY=pts/{tty:int:0-9} ; PWD=/home/{user} ; USER=root ; COMMAND=/usr/bin/systemctl restart {svc}
opc_sub I opcua-gw :: Subscription {sub:int:1-99} created on opc.tcp://{ip}:4840 with {count:int:1-500} monitored items
opc_closed E opcua-gw :: Session {sid:hex:8} closed: BadSecureChannelClosed after {dur}
mqtt_pub D mqtt-bridge :: published {count:int:1-200} messages to plant/{line}/telemetry ({size})
mqtt_lost W mqtt-bridge :: Connection to broker {ip}:1883 lost, retrying in {sec:int:1-30} s
hist_write I historian :: Wrote {count:int:100-90000} samples to {path} in {ms} ms
hist_disk C historian :: Disk usage {pct:int:90-99}% on {mount}, dropping oldest segments
hist_corrupt A historian :: Index file {path} corrupt, archive offline
ntp_step N ntpd :: time reset {offset:f6:-1-1} s
modbus_to E modbusd :: {ip}:502 unit {unit:int:1-247} read holding registers timed out after {ms} ms
estop X safety-plc :: EMERGENCY STOP engaged on line {line} by {source:pick:ES-1|ES-4|light curtain 2}
== rfc3164
cron_cmd I CRON :: ({user}) CMD (/usr/local/bin/{script:pick:rotate-hist.sh|backup.sh|sync-recipes} --quiet)
ssh_invalid W sshd :: Invalid user {baduser:pick:admin|test|oracle|pi|ubnt} from {ip} port {port}
ssh_closed I sshd :: Connection closed by {ip} port {port} [preauth]
pam_fail N sshd :: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost={ip}  user={user}
usb_new I kernel :: usb {bus:int:1-4}-{usbport:int:1-8}: new high-speed USB device number {devnum:int:2-30} using xhci_hcd
link_down W kernel :: e1000e: {iface} NIC Link is Down
oom_kill E kernel :: Out of memory: Killed process {pid} ({proc:pick:java|python3|influxd}) total-vm:{kb:int:100000-9000000}kB
svc_started I systemd :: Started {svc}.
svc_failed E systemd :: {svc}.service: Main process exited, code=exited, status={code:int:1-255}/FAILURE
dhcp_ack I dhcpd :: DHCPACK on {ip} to {mac} via {iface}
mail_deferred W postfix/smtp :: {qid:hex:10}: to=<{user}@plant.example>, relay=none, delay={delay:f1:0-300}, status=deferred (connect to mail.plant.example[{ip}]:25: Connection timed out)
su_root N su :: (to root) {user} on pts/{tty:int:0-9}
trap_down C snmpd :: Received SNMP trap from {ip}: linkDown ifIndex={idx:int:1-48}
== journald_json
nm_dhcp I NetworkManager :: <info>  [{stamp:f4:1796378000-1796379999}] dhcp4 ({iface}): state changed bound -> bound
docker_health W dockerd :: level=warning msg="Health check for container {cid:hex:12} failed: timeout after {sec:int:5-60}s"
shim_gone I containerd :: shim disconnected id={cid:hex:64} namespace=moby
tg_modbus E telegraf :: E! [inputs.modbus] Error in plugin: read tcp {ip}:502: i/o timeout
tg_drop W telegraf :: W! [outputs.influxdb_v2] Metric buffer overflow; {count:int:1-5000} metrics have been dropped
tg_write D telegraf :: D! [outputs.file] Wrote batch of {count:int:1-1000} metrics in {dur}
unit_start I systemd :: Starting {svc}.service - {desc:pick:Telegraf|Node-RED|Mosquitto MQTT Broker}...
unit_oom E systemd :: {svc}.service: A process of this unit has been killed by the OOM killer.
logind N systemd-logind :: New session {session:int:1-999} of user {user}.
thermal C kernel :: CPU{cpu:int:0-7}: Core temperature above threshold, cpu clock throttled (total events = {count:int:1-9999})
ext4_err E kernel :: EXT4-fs error (device {dev:pick:mmcblk0p2|sda1|nvme0n1p3}): ext4_find_entry:1455: inode #{inode:int:2-999999}: comm {proc:pick:influxd|node-red}: reading directory lblock 0
flows I node-red :: [info] Started flows
nr_timeout W node-red :: [warn] [modbus-read:{node:pick:Press 7|Oven 2|Line 3}] Timeout {ms}ms
== app_json
hyd_over W hydraulics :: pressure {bar:f1:180-230} bar above limit {limit:int:150-180} bar
hyd_temp I hydraulics :: oil temperature {temp:f1:35-60} °C
tool_mount I tooling :: tool {tool:id:6} mounted, stroke counter {strokes:int:0-500000}
tool_wear W tooling :: {tool:id:6} wear {pct:int:80-99}% - replace soon
curtain C safety :: light curtain {lc:int:1-4} interrupted during stroke {stroke:int:1-999999}, emergency stop
safety_reset I safety :: safety circuit reset by {user}
recipe_load I recipe :: recipe "{recipe:pick:HOOD-L 2026|DOOR-R v3|BRKT-44}" loaded ({size})
recipe_crc E recipe :: checksum mismatch for {path}: expected {expected:hex:8}, got {got:hex:8}
part_done D counter :: part {count:int:1-99999} done in {cycle:f2:3-15} s
following E motion :: axis {axis:int:1-6} following error {err:f2:0.1-2} mm exceeds {lim:f2:0.05-0.1} mm
flow_low W cooling :: flow {flow:f1:2-9} l/min below setpoint {sp:int:10-12} l/min
plc_link E plc-link :: connection to {ip}:102 lost after {dur}, {count:int:1-40} writes queued
== k8s_json
pull_fail E kubelet :: Failed to pull image "{image}": rpc error: code = NotFound desc = manifest unknown ({pod})
backoff W kubelet :: Back-off restarting failed container {container} in pod {pod}
probe_fail W kubelet :: Readiness probe failed for {pod}: HTTP probe failed with statuscode: {status:pick:500|502|503}
oom_killed E kubelet :: Container {container} in pod {pod} OOMKilled, memory limit {mem:pick:256Mi|512Mi|1Gi|2Gi}
evict W kubelet :: Evicting pod {pod}: ephemeral-storage usage {size} exceeds limit
cm_fail C kubelet :: Failed to start ContainerManager: failed to get rootfs info: {path}: no such file or directory
assigned I scheduler :: Successfully assigned {ns}/{pod} to {node:host}
unschedulable W scheduler :: 0/{nodes:int:3-12} nodes are available: {insufficient:int:1-12} Insufficient memory.
lease I controller-manager :: attempting to acquire leader lease kube-system/kube-controller-manager...
scaled I controller-manager :: Scaled up replica set {rs} to {replicas:int:1-10}
sync D kube-proxy :: syncProxyRules complete, took {ms} ms, {rules:int:100-9000} rules
renewed I cert-manager :: certificate {ns}/{cert:pick:mes-tls|grafana-tls|opc-gw-tls} renewed, expires in {days:int:30-90} days
upstream D ingress-nginx :: upstream {ip}:{port} added for {ns}/{svc}
== chinese
temp_high W 温控模块 :: 加热区{zone:int:1-6} 温度 {temp:f1:80.5-95} ℃ 超过上限 {limit:int:75-80} ℃
temp_ok I 温控模块 :: 加热区{zone:int:1-6} 温度恢复正常 {temp:f1:60-75} ℃
order_start I 工单管理 :: 工单 {wo} 开始生产, 计划数量 {qty:int:10-5000} 件
order_done I 工单管理 :: 工单 {wo} 完成, 合格 {ok:int:10-5000} 件, 不良 {ng:int:0-40} 件
scan_ok D 扫码枪 :: 条码 {barcode} 扫描成功, 耗时 {ms} ms
scan_dup W 扫码枪 :: {barcode} 重复扫码, 已忽略
plc_timeout E PLC通讯 :: PLC 通讯超时 {ms} ms, 地址 {ip}
material_low W 物料管理 :: 物料 {material:pick:M8螺栓|密封圈A|外壳B-02} 库存不足, 剩余 {qty:int:0-50} 件
estop C 安全回路 :: 急停按钮 {button:pick:ES1|ES2|ES3} 被按下, 设备停机
air_low E 安全回路 :: 气压 {p:f2:0.3-0.49} MPa 低于下限 0.5 MPa
overcurrent E 电机驱动 :: 电机{motor:int:1-8} 电流 {amp:f1:12-30} A 过载, 已降速
changeover I 工单管理 :: 换型完成, 用时 {sec:int:60-1800} 秒, 操作员 {user}
debug_poll D PLC通讯 :: 轮询 {count:int:1-200} 个寄存器, 数据量 {size}
== log4j_mdc
order_created I c.a.order.OrderService :: Order {order} created for customer {customer:int:1000-99999}, total {amount:f2:5-5000} EUR
order_rejected W c.a.order.OrderService :: Order {order} rejected: insufficient stock for {sku}
npe E c.a.order.OrderService :: Unexpected error while processing {order}: java.lang.NullPointerException: Cannot invoke "String.length()" because "{field:pick:sku|customerId|address}" is null
pay_timeout E c.a.order.PaymentClient :: Payment request {txn:uuid} timed out after {ms} ms
pay_retry W c.a.order.PaymentClient :: Retrying payment {txn:uuid} (attempt {attempt:int:2-5} of 5)
wo_started I c.a.mes.WorkOrderController :: Work order {wo} started on line {line}
wo_get D c.a.mes.WorkOrderController :: GET /api/workorders/{wo} took {ms} ms
dup_key E o.h.e.j.s.SqlExceptionHelper :: Duplicate entry '{order}' for key 'PRIMARY'
starvation W c.z.h.pool.HikariPool :: HikariPool-1 - Thread starvation or clock leap detected (housekeeper delta={delta:int:30-300}s).
completed D o.s.web.servlet.DispatcherServlet :: Completed {status:pick:200|201|204} OK
stock_low I c.a.inv.StockRepository :: {sku} stock level {qty:int:0-50} below reorder point {rop:int:50-100}
evicted D c.a.inv.StockRepository :: Evicted {count:int:1-5000} cache entries ({size})
== windows_cbs
stack I CBS :: Loaded Servicing Stack v6.1.7601.{build:int:17000-24000} with Core: C:\Windows\winsxs\amd64_microsoft-windows-servicingstack_31bf3856ad364e35_6.1.7601.23505_none_681aa442f6fed7f0\cbscore.dll
session I CBS :: Session: {session:int:30000000-30999999}_{stamp:int:1000000000-4000000000} initialized by client WindowsUpdateAgent.
applicability I CBS :: Read out cached package applicability for package: Package_for_KB{kb:int:2500000-4999999}~31bf3856ad364e35~amd64~~6.1.1.{rev:int:0-9}, ApplicableState: {applicable:pick:80|112}, CurrentState:{current:pick:0|112}
no_session W CBS :: Failed to find session {session:int:30000000-30999999}: No such session [HRESULT = 0x80070490 - ERROR_NOT_FOUND]
open_fail E CBS :: Failed to internally open package. [HRESULT = 0x{hr:pick:800f0805|80070002|800f081f} - {name:pick:CBS_E_INVALID_PACKAGE|ERROR_FILE_NOT_FOUND|CBS_E_SOURCE_MISSING}]
reboot W CBS :: Exec: A reboot is required to complete this operation, {count:int:1-40} pending operations
finalize I CBS :: Ending TrustedInstaller finalization.
corrupt E CSI :: (p)	CSI Payload Corrupt	amd64_microsoft-windows-{comp:pick:shell32|ntdll|wmi-core}_31bf3856ad364e35_6.1.7601.{build:int:17000-24000}_none_{h:hex:16}\{file:pick:shell32.dll|ntdll.dll|wmicore.dll}
unrecognized W CSI :: {seq:hex:8} Warning: Unrecognized packageExtended attribute.
store I CSI :: {seq:hex:8} CSI Store {store:int:1000000-9999999} (0x{addr:hex:16}) initialized
dpx_end I DPX :: Ended DPX phase: {phase:pick:Resume and Download Job|Apply Deltas Provided In File}
dpx_extract I DPX :: Extracting {file:pick:update.mum|update.cat|package_1_for_kb.mum} from {cab:pick:Windows6.1-KB3185278-x64.cab|Windows6.1-KB3172605-x64.cab} ({size})
== nginx_access
orders - - :: GET /api/v1/orders/{order_id:int:1000-99999} ## 200|200|304|404
static - - :: GET /static/{asset:pick:app.3f9a1c.js|main.css|logo.svg} ## 200|304
login - - :: POST /login ## 302|401
health - - :: GET /healthz ## 200
telemetry - - :: POST /api/v1/machines/{machine:pick:press-07|weld-02|oven-1}/telemetry ## 201|400|503
dashboard - - :: GET /dashboard?line={line}&shift={shift:int:1-3} ## 200
recipe - - :: PUT /api/v1/recipes/{recipe_id:int:1-400} ## 204|409
session - - :: DELETE /api/v1/sessions/{token:hex:16} ## 204|404
wp_probe - - :: GET /wp-login.php ## 404
export - - :: GET /reports/export.csv?from=2026-12-0{day:int:1-3}&to=2026-12-04 ## 200|500
== logfmt
belt_slow W conveyor :: belt speed {speed:f1:0.5-1.4} m/s below setpoint {setpoint:f1:1.5-2.0} m/s
belt_jam E conveyor :: jam detected at photo eye PE{eye:int:1-24}, belt stopped
heartbeat D conveyor :: heartbeat
pallet_done I palletizer :: pallet {pallet:id:8} complete: {layers:int:3-8} layers, {weight:f1:300-980} kg
label_print I labeler :: printed label for SSCC {sscc:int:100000000000000000-999999999999999999}
ribbon_low W labeler :: ribbon low ({pct:int:2-15}% remaining)
agv_route I agv :: {agv:pick:AGV-3|AGV-7|AGV-12} route {src:pick:WH-A|WH-B|DOCK-2} -> {dst:pick:L1|L2|L3} assigned
agv_battery W agv :: battery {pct:int:5-20}% - returning to charger {charger:int:1-4}
agv_obstacle E agv :: obstacle at x={x:f2:0-80} y={y:f2:0-40}, waited {ms} ms
tare N scale :: tare reset by "{user}"
overload C scale :: overload {kg:f1:1001-1500} kg on {scale:pick:SC-1|SC-2}
reject W vision :: part {serial:id:10} rejected: {defect:pick:scratch|dent|missing clip} (score {score:f2:0.5-0.99})
== csv
following E servo :: axis {axis:int:1-6} following error {err:f2:0.1-1} mm
motor_hot W servo :: motor {axis:int:1-6} temperature {temp:f1:70-95} °C, derating to {pct:int:50-90}%
grip_ok D gripper :: grip confirmed, force {force:f1:20-80} N
part_lost E gripper :: part lost during move to P{point:int:1-99}, vacuum {vacuum:int:-80--20} kPa
prog_start I program :: program "{program:pick:PICK_PLACE|WELD_SEAM_4|PALLET_9}" started, cycle {cycle:int:1-99999}
cycle_done I program :: cycle {cycle:int:1-99999} finished in {sec:f2:8-40} s
ecat_lost W controller :: {count:int:1-300} frames lost on EtherCAT slave {slave:int:1-12}, resyncing
zone_person A safety :: person detected in zone {zone:int:1-4}, speed reduced to {speed:int:10-250} mm/s
estop C safety :: E-stop {estop:pick:ES1|ES2|TP} pressed, brakes engaged
boot N controller :: controller booted, firmware {fw:pick:8.3.1|8.3.2|9.0.0}, {dur}
payload I program :: payload set to {kg:f1:0.5-12} kg, tool "{tool:pick:GRIPPER_A|WELD_TORCH}"
== pipe pipe_spaced
input D io :: input %I{byte:int:0-31}.{bit:int:0-7} changed to {value:pick:0|1}
short E io :: output %Q{byte:int:0-31}.{bit:int:0-7} short circuit detected, channel disabled
scan_cycle W plc :: scan cycle {ms} ms exceeds watchdog {watchdog:int:20-50} ms
mode N plc :: mode change requested, flags=RUN|REMOTE
cpu_stop C plc :: CPU went to STOP: {reason:pick:division by zero in OB1|I/O access error|cycle time exceeded}
no_response E modbus :: slave {slave:int:1-247} at {ip} no response after {ms} ms
crc W modbus :: CRC error on /dev/ttyS{tty:int:0-3}, frame {frame:hex:4}
login I hmi :: user {user} logged in at panel {panel:pick:HMI-1|HMI-2|HMI-3}
ack I hmi :: {user} acknowledged alarm {alarm:int:1000-1999}
drive_fault E drive :: drive {drive:pick:G120-1|G120-2|V90-3} fault F{code:int:7000-7999}: {text:pick:overcurrent|DC link overvoltage|encoder error}
speed_reached I drive :: {drive:pick:G120-1|G120-2|V90-3} speed setpoint {rpm:int:100-3000} rpm reached in {ms} ms
recipe_dl I plc :: recipe {recipe:int:1-300} downloaded ({size})
== invented_1
hyd_over A HYD :: hydraulic pressure {bar:f1:200-260} bar exceeds limit 200 bar
pump_start I HYD :: pump {pump:int:1-3} started, {rpm:int:900-1800} rpm
air_low W PNEU :: air pressure {bar:f1:4-5.4} bar below 5.5 bar
door_open A SAFE :: guard door {door:int:1-6} opened during cycle
estop X SAFE :: EMERGENCY STOP circuit {channel:pick:A|B} discrepancy, press locked
lube_empty E LUBE :: lubricant reservoir empty, {strokes:int:0-500} strokes until stop
lube_cycle D LUBE :: lube cycle {cycle:int:1-9999} done, {ml:f1:0.5-5} ml dispensed
die_clamp I DIE :: die {die:id:6} clamped, shut height {height:f2:400-600} mm
die_temp E DIE :: die temperature {temp:f1:200-260} °C over limit on zone {zone:int:1-4}
mode I CTRL :: operator {user} switched mode {from:pick:SETUP|INCH} -> {to:pick:SINGLE|CONTINUOUS}
strokes D CTRL :: {count:int:1-999999} strokes, rate {spm:int:8-40} spm
drift W CTRL :: clock drift {ms} ms vs NTP {ip}, resync
== invented_2
spindle_load W spindle :: spindle load {pct:int:85-120}% at {rpm:int:2000-24000} rpm
warmup I spindle :: warm-up finished after {sec:int:60-900} s
tool_life W toolmgr :: T{tool:int:1-60} remaining life {min:int:0-15} min
tool_broken E toolmgr :: T{tool:int:1-60} breakage detected by laser, program halted at N{block:int:10-9990}
prog_start I nc :: program O{prog:int:1000-9999} started, part {serial:id:8}
overtravel C nc :: ALM {alarm:int:1000-1999} SERVO AXIS {axis:pick:X|Y|Z|B} OVERTRAVEL
deviation W probe :: feature {feature:pick:bore_A|face_2|slot_3} deviation {dev:f3:0.01-0.2} mm (tol ±{tol:f3:0.005-0.01} mm)
probe_ok D probe :: measured {count:int:3-40} points in {ms} ms
coolant N coolant :: concentration {conc:f1:3-12} % outside 5-8 %
dnc_xfer I dnc :: transferred {file:pick:O1234.nc|PART_77.mpf|FIX-2.h} ({size}) from {ip}
dnc_fail E dnc :: upload to {ip} failed: {error:pick:connection refused|checksum mismatch|timeout}
== invented_3
arc_on I ArcCtl :: arc ignited on seam {seam:int:1-40}, {amp:int:80-320} A / {volt:f1:16-32} V
arc_lost E ArcCtl :: arc lost after {ms} ms, retry {attempt:int:1-3}/3
torch_hot W ArcCtl :: torch temperature {temp:int:60-95} °C, duty cycle reduced
wire_speed D WireFeed :: wire speed {speed:f1:2-18} m/min, motor current {amp:f2:0.5-4} A
wire_stick E WireFeed :: {count:int:1-9} attempts to free stuck wire failed
spool_low W WireFeed :: spool {spool:id:6} remaining {kg:f1:0.2-3} kg
offset W SeamTracker :: lateral offset {mm:f2:0.5-3} mm at {pos:int:0-2000} mm, correcting
seam_lost E SeamTracker :: seam lost on part {serial:id:8}
gas_low C GasValve :: shielding gas flow {flow:f1:0-5} l/min below minimum 8 l/min, weld aborted
preflow I GasValve :: pre-flow {ms} ms
job I Robot IF :: job {job:pick:WLD_0042|WLD_0107|TACK_03} requested by {ip}
handshake W Robot IF :: handshake timeout waiting for {signal:pick:ARC_ON|GAS_OK|READY} ({ms} ms)
== invented_4
volt_low W Netzanalyse :: Spannung {phase:pick:L1|L2|L3} {volt:dc1:195-209} V unter Grenzwert 210 V
thd W Netzanalyse :: Oberschwingungen THD {thd:dc1:8-15} % auf {phase:pick:L1|L2|L3}
peak A Netzanalyse :: Leistungsspitze {kw:dc1:900-1500} kW überschreitet Vertragsleistung 850 kW
meter I Zähler :: Zählerstand {kwh:dc1:10000-99999} kWh übertragen
gap E Zähler :: Lücke im Lastgang von {min:int:15-240} Minuten
comp_start I Kompressor :: Kompressor {unit:int:1-3} gestartet, Druck {bar:dc1:5-7} bar
comp_fault E Kompressor :: Störung Kompressor {unit:int:1-3}: Öltemperatur {temp:dc1:100-120} °C
filter W Lüftung :: Filter {filter:pick:F7|F9|G4} verschmutzt, Differenzdruck {pa:int:150-400} Pa
boiler A Heizung :: Vorlauftemperatur {temp:dc1:20-35} °C, Kessel {boiler:int:1-2} ausgefallen
setpoint D Kälte :: Sollwert {sp:dc1:5-12} °C erreicht nach {min:int:1-60} min
ack I Leitsystem :: {count:int:1-40} Meldungen quittiert von {user}
"""


def _levels(spec):                          # "D=DEBUG I=INFO ..." -> {canonical: native}
    return {CODE[p[0]]: p[2:] for p in spec.split()}


SYSLOG = _levels("D=debug I=info N=notice W=warning E=error C=critical A=alert X=emergency")
PLC = _levels("D=DEBUG I=INFO N=NOTICE W=WARN E=ERROR C=CRIT")
H_SYSLOG = ["gw-01", "hmi-line3", "edge-02", "scada-02", "mes-app01", "fw-edge"]
H_PLC = ["line1-plc", "line3-plc", "press-plc", "wrap-plc", "dock-plc"]
# shape: (digits of the printed time's fraction, {canonical level: native}, hosts or None)
_SPEC = {
    "logcat": (3, _levels("D=D I=I W=W E=E C=F"), None),
    "rfc5424": (3, SYSLOG, H_SYSLOG),
    "rfc3164": (0, SYSLOG, H_SYSLOG),
    "journald_json": (6, SYSLOG, ["edge-01", "edge-02", "edge-03", "hmi-2"]),
    "app_json": (3, _levels("D=D I=I W=W E=E C=F"), ["press-07", "press-08", "weld-02", "oven-1", "paint-3"]),
    "k8s_json": (3, _levels("D=debug I=info W=warn E=error C=fatal"),
                 ["node-a1", "node-a2", "worker-3", "gpu-node-1", "edge-k3s-5"]),
    "chinese": (3, _levels("D=调试 I=信息 W=警告 E=错误 C=严重"), ["工位1", "工位2", "工位3", "工位5", "总装线"]),
    "log4j_mdc": (3, _levels("D=DEBUG I=INFO W=WARN E=ERROR"), None),
    "windows_cbs": (0, _levels("I=Info W=Warning E=Error"), None),
    "nginx_access": (0, {}, None),
    "logfmt": (0, _levels("D=debug I=info N=notice W=warn E=error C=crit"),
               ["line1", "line3", "agv-12", "pack-2", "dock-1"]),
    "csv": (0, _levels("D=DEBUG I=INFO N=NOTICE W=WARN E=ERROR C=CRITICAL A=ALERT"),
            ["robot-1", "robot-2", "robot-3", "cell-5"]),
    "pipe": (3, PLC, H_PLC),
    "pipe_spaced": (3, PLC, H_PLC),
    "invented_1": (3, _levels("D=DEBUG I=INFO W=WARN E=FAULT A=ALARM X=EMERG"),
                   ["press-07", "press-08", "press-11", "transfer-2"]),
    "invented_2": (3, _levels("D=DBG I=INF N=NTC W=WRN E=ERR C=CRT"), list(LOCATION)),
    "invented_3": (3, _levels("D=debug I=info W=warning E=error C=fatal"), None),
    "invented_4": (0, _levels("D=D I=I W=W E=S A=A"), ["EM-01", "EM-02", "EM-03", "TRAFO-1", "KOMP-HALLE-B"]),
}
SHAPES = tuple(_SPEC)


def _tables():
    rows, names = {}, []
    for line in TABLES.strip().splitlines():
        if line.startswith("== "):
            names = line.split()[1:]
            continue
        head, text = line.split(" :: ", 1)
        key, lv, comp = head.split(None, 2)
        if " ## " in text:                  # nginx: request + status choices -> combined log format
            req, status = text.split(" ## ")
            text = f'"{req} HTTP/1.1" {{status:pick:{status}}} {{bytes:int:0-90000}} "{{referer}}" "{{agent}}"'
        row = SimpleNamespace(key=key, level=CODE.get(lv), comp=None if comp == "-" else comp, text=text)
        for name in names:
            rows.setdefault(name, []).append(row)
    return rows


_ROWS = _tables()


def template_ids(shape: str) -> list[str]:
    """Every template id the shape can produce."""
    return [f"{shape}/{row.key}" for row in _ROWS[shape]]


def generate(shape: str, n: int = 400, seed: int = 0) -> list[SynthLine]:
    """n lines of one shape; the same (shape, n, seed) gives the same lines."""
    if shape not in _SPEC:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    (prec, levels, hosts), fmt = _SPEC[shape], HEADER[shape]
    rows, rng = _ROWS[shape], random.Random(f"{shape}:{seed}")
    first = rows[:]
    rng.shuffle(first)                      # every template once first, then a skewed mix
    weights = [rng.choice((1, 2, 4, 8)) for _ in rows]
    us = (BASE - EPOCH) // timedelta(microseconds=1) + rng.randint(0, 3_600_000_000)
    seq0, q = rng.randint(1000, 90000), 10 ** (6 - prec)
    out = []
    for i in range(n):
        row = first[i] if i < len(first) else rng.choices(rows, weights)[0]
        us += rng.randint(1000, 2_500_000)
        t_us = us // q * q                  # the time as precise as the shape prints it
        params: dict[str, str] = {}         # a name used twice in a template keeps one value
        msg = _PH.sub(lambda m: params.get(m[1]) or params.setdefault(
            m[1], _value(rng, m[2] or m[1], m[3] or "", hosts)), row.text)
        dt = EPOCH + timedelta(microseconds=t_us)
        c = SimpleNamespace(dt=dt, us=t_us, ymd=f"{dt:%Y-%m-%d %H:%M:%S}", ms=f"{dt.microsecond // 1000:03d}",
                            seq=seq0 + i, rng=rng, key=row.key, msg=msg, params=params, level=row.level,
                            lvl=levels[row.level] if row.level else None, comp=row.comp,
                            host=rng.choice(hosts) if hosts else None)
        raw = fmt(c)
        out.append(SynthLine(raw, t_us / 1e6, c.level, c.host, c.comp, msg, f"{shape}/{row.key}", params))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", required=True, choices=SHAPES + ("all",))
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    for shape in SHAPES if a.shape == "all" else (a.shape,):
        for line in generate(shape, a.n, a.seed):
            sys.stdout.write(json.dumps(asdict(line), ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
