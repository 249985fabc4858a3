"""Questions an operator might ask about five of the shared Loghub systems, written by a helper session
that had not read linegate's code (issue 41: questions nobody here wrote), in English and Chinese:
lookups, negative lookups, counts, sums and extremes under conditions, first and last times, and two asks in
one question. Every gold answer is computed here from the raw <System>_2k.log lines (the file the appliance
ingests), cross-checked against the structured CSV; the wording is literal.

The split, fixed before tuning: `--part tune` is Hadoop, OpenSSH and Spark (tuned on), `--part held` is
Apache and Linux (looked at only as figures, at the end).

    .venv/bin/python tools/bench/qa_blind.py --part tune --out FILE   # then bench_qa.py --questions FILE
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import re
import sys
from pathlib import Path

SYSTEMS = ["Apache", "Hadoop", "Linux", "OpenSSH", "Spark"]
PARTS = {"tune": ("Hadoop", "OpenSSH", "Spark"), "held": ("Apache", "Linux"), "all": tuple(SYSTEMS)}
NEG = ["not", "no ", "none", "never", "n't", "没有", "不", "否"]
RAW: dict[str, list[str]] = {}
CSV: dict[str, list[dict]] = {}

def load(data: Path, system: str) -> tuple[list[str], list[dict]]:
    with open(data / system / f"{system}_2k.log", encoding="utf-8") as f:
        raw = f.read().rstrip("\n").split("\n")
    with open(data / system / f"{system}_2k.log_structured.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(raw) == 2000 and len(rows) == 2000, (system, len(raw), len(rows))
    # structured Content must sit inside the raw line with the same LineId
    for r in rows:
        assert r["Content"].strip() in raw[int(r["LineId"]) - 1], (system, r["LineId"])
    return raw, rows




def grep(system, pattern):
    """All regex matches (re.Match) over raw lines of a system, in order."""
    rx = re.compile(pattern)
    out = []
    for line in RAW[system]:
        m = rx.search(line)
        if m:
            out.append(m)
    return out


def one(system, pattern):
    ms = grep(system, pattern)
    assert len(ms) == 1, (system, pattern, len(ms))
    return ms[0]


def csv_count(system, event_id, content_rx=None):
    rx = re.compile(content_rx) if content_rx else None
    return sum(1 for r in CSV[system] if r["EventId"] == event_id and (rx is None or rx.search(r["Content"])))


def numfmt(x):
    """Render a number as it would be written in a correct answer."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


QUESTIONS = []
_counters = collections.Counter()


def add(system, kind, lang, question, check):
    _counters[(system, kind)] += 1
    qid = f"fresh-{system}-{kind}-{_counters[(system, kind)]}"
    # sanity: every span must be non-empty
    for key in ("any_of", "all_of"):
        if key in check:
            assert all(isinstance(s, str) and s.strip() for s in check[key]), (qid, check)
    if "number" in check:
        assert isinstance(check["number"], (int, float)), (qid, check)
    QUESTIONS.append({"system": system, "id": qid, "kind": kind, "lang": lang,
                      "question": question, "check": check})


def lookup_one(system, pattern, lang, question):
    """A lookup whose gold is group 1 of the one raw line `pattern` matches."""
    add(system, "lookup", lang, question, {"any_of": [one(system, pattern).group(1)]})


def ts_variants(full, short):
    out = [full]
    if short != full:
        out.append(short)
    return out



def _openssh() -> None:
    S = "OpenSSH"
    SSH_TS = r"^(\w{3} +\d+ (\d\d:\d\d:\d\d))"

    m = one(S, r"Accepted password for (\S+) from (\S+) port (\d+)")
    acc_user, acc_ip, acc_port = m.groups()
    add(S, "lookup", "en", "Hi, could you tell me which account actually managed to log in with a password on LabSZ?",
        {"any_of": [acc_user]})
    add(S, "compound", "en", f"{acc_user} got in at some point - from what IP and what source port?",
        {"all_of": [acc_ip, acc_port]})
    # negative: no second successful login
    assert len(grep(S, r"Accepted (password|publickey)")) == 1
    add(S, "negative", "zh", f"除了 {acc_user} 之外，还有别的账号密码登录成功过吗？",
        {"any_of": NEG})

    m = grep(S, r"reverse mapping checking getaddrinfo for (\S+) \[173\.234\.31\.186\]")
    hosts = {x.group(1) for x in m}
    assert len(hosts) == 1
    add(S, "lookup", "en", "reverse DNS name that failed the getaddrinfo check for 173.234.31.186?",
        {"any_of": sorted(hosts)})

    m = grep(S, r"Received disconnect from 195\.154\.37\.122: \d+: (\S+): (Auth fail)")
    assert len({x.group(1) for x in m}) == 1
    add(S, "lookup", "en", "When 195.154.37.122 dropped its connection, what error did it report?",
        {"any_of": [m[0].group(1), "JSchException", "Auth fail"]})

    lookup_one(S, r"sshd\[24833\]: Disconnecting: Too many authentication failures for (\S+)", "zh",
               "sshd[24833] 那个进程因为认证失败次数太多被踢掉了，是哪个用户？")

    # negative: IP that only ever shows up as 'Did not receive identification string'
    ip = "177.79.82.136"
    lines_ip = [l for l in RAW[S] if ip in l]
    assert lines_ip and all("Did not receive identification string" in l for l in lines_ip)
    add(S, "negative", "en", f"Did {ip} ever get as far as trying a password on this box?",
        {"any_of": NEG})

    fp = [x for x in grep(S, r"Failed password for (invalid user )?\s*(\S+) from (\S+) port (\d+) ssh2")]
    root112 = [x for x in fp if not x.group(1) and x.group(2) == "root" and x.group(3) == "112.95.230.3"]
    assert len(root112) == csv_count(S, "E9", r"^Failed password for root from 112\.95\.230\.3 port")
    add(S, "count", "en", "how many failed root password attempts came from 112.95.230.3",
        {"number": len(root112)})

    admin_ports = [int(x.group(4)) for x in fp if x.group(2) == "admin"]
    add(S, "max", "en", "Looking at failed password attempts for the user admin (valid or invalid user, any source), what is the highest source port?",
        {"number": max(admin_ports)})

    p187 = [int(x.group(4)) for x in fp if not x.group(1) and x.group(2) == "root" and x.group(3) == "187.141.143.180"]
    add(S, "min", "zh", "187.141.143.180 用 root 密码登录失败的那些记录里，源端口最小是多少？",
        {"number": min(p187)})

    cdur = grep(S, r"Closed due to user request")
    assert len(cdur) == csv_count(S, "E25")
    add(S, "count", "en", "Count of disconnects with reason 'Closed due to user request'?",
        {"number": len(cdur)})

    rep = grep(S, r"message repeated (\d+) times: \[ Failed password")
    add(S, "sum", "zh", "日志里有“message repeated N times”折叠掉的密码失败，加起来一共折叠了多少次？",
        {"number": sum(int(x.group(1)) for x in rep)})

    inv = [x for x in fp if x.group(1)]
    inv_ip = collections.Counter(x.group(3) for x in inv).most_common(2)
    assert inv_ip[0][1] > inv_ip[1][1]
    add(S, "compound", "en", "How many failed password lines were for invalid (non-existent) users, and which source IP produced the most of them?",
        {"all_of": [str(len(inv)), inv_ip[0][0]]})

    bi = [x for x in (re.match(SSH_TS, l) for l in RAW[S] if "POSSIBLE BREAK-IN ATTEMPT" in l)]
    add(S, "first_time", "en", "When did sshd first flag a POSSIBLE BREAK-IN ATTEMPT?",
        {"any_of": ts_variants(bi[0].group(1), bi[0].group(2))})

    lr = [re.match(SSH_TS, x.string) for x in fp if not x.group(1) and x.group(2) == "root"]
    add(S, "last_time", "zh", "root 最后一次密码输错是几点几分？",
        {"any_of": ts_variants(lr[-1].group(1), lr[-1].group(2))})


def _spark() -> None:
    S = "Spark"
    SP_TS = r"^(\d\d/\d\d/\d\d (\d\d:\d\d:\d\d))"

    lookup_one(S, r"Block broadcast_36 stored as values in memory \(estimated size ([\d.]+ [KMG]?B), free ([\d.]+ [KMG]?B)\)", "en",
               "broadcast_36 - how big was it (estimated) when it got stored as values in memory?")

    reads = [(int(x.group(1)), int(x.group(2))) for x in grep(S, r"Reading broadcast variable (\d+) took (\d+) ms")]
    slow = sorted(reads, key=lambda t: -t[1])
    assert slow[0][1] > slow[1][1]
    add(S, "compound", "en", "Which broadcast variable was slowest to read, and how many ms did it take?",
        {"all_of": [str(slow[0][0]), str(slow[0][1])]})

    m = one(S, r"Starting executor ID (\S+) on host (\S+)")
    add(S, "lookup", "zh", "这个 executor 是在哪台机器上起来的？host 名字给一下",
        {"any_of": [m.group(2)]})

    lookup_one(S, r"Successfully started service 'sparkExecutorActorSystem' on port (\d+)", "en",
               "What port did sparkExecutorActorSystem come up on?")

    lookup_one(S, r"MemoryStore started with capacity ([\d.]+ [KMG]B)", "en",
               "memory store capacity at startup?")

    m = one(S, r"Connecting to driver: spark://CoarseGrainedScheduler@([\d.]+):(\d+)")
    add(S, "lookup", "zh", "executor 连的 driver 地址是哪个？IP 和端口",
        {"any_of": [f"{m.group(1)}:{m.group(2)}", m.group(1)]})

    running = {x.group(3): x.group(2) for x in grep(S, r"Running task (\S+) in stage (\S+) \(TID (\d+)\)")}
    finished = {x.group(3) for x in grep(S, r"Finished task (\S+) in stage (\S+) \(TID (\d+)\)")}
    unfinished = sorted(set(running) - finished, key=int)
    assert "1352" in unfinished
    add(S, "negative", "en", "Did TID 1352 ever finish and send its result back to the driver?",
        {"any_of": NEG})

    assert not grep(S, r"broadcast variable 35\b|broadcast_35\b")
    add(S, "negative", "zh", "broadcast variable 35 有没有被读过？",
        {"any_of": NEG})

    stage29_unfinished = [t for t in unfinished if running[t] == "29.0"]
    add(S, "count", "zh", "stage 29.0 里有几个 task 开始跑了但日志里一直没看到 Finished？",
        {"number": len(stage29_unfinished)})

    rdd2_found = grep(S, r"Found block rdd_2_\d+ locally")
    assert len(rdd2_found) == csv_count(S, "E10", r"rdd_2_\d+ ")
    add(S, "count", "en", "rdd_2 blocks found locally - how many times?",
        {"number": len(rdd2_found)})

    b27 = [int(x.group(2)) for x in grep(S, r"Finished task \S+ in stage (27\.0) \(TID \d+\)\. (\d+) bytes result sent to driver")]
    add(S, "sum", "zh", "stage 27.0 所有完成的 task 回传给 driver 的结果一共多少字节？",
        {"number": sum(b27)})

    totals = [int(x.group(1)) for x in grep(S, r"Times: total = (-?\d+), boot = (-?\d+), init = (-?\d+), finish = (-?\d+)")]
    add(S, "max", "en", "What's the biggest 'total' value in the PythonRunner timing lines?",
        {"number": max(totals)})

    rdd_sizes = collections.defaultdict(list)
    for x in grep(S, r"Block rdd_(\d+)_(\d+) stored as bytes in memory \(estimated size ([\d.]+) B,"):
        rdd_sizes[x.group(1)].append(float(x.group(3)))
    add(S, "min", "en", "Of the rdd_2 partitions cached as bytes in memory, what was the smallest estimated size (in bytes)?",
        {"number": min(rdd_sizes["2"])})

    s24 = [int(t) for t, st in running.items() if st == "24.0"]
    add(S, "compound", "en", "stage 24.0: number of tasks started, and the highest TID among them?",
        {"all_of": [str(len(s24)), str(max(s24))]})

    ga = [re.match(SP_TS, x.string) for x in grep(S, r"Got assigned task \d+")]
    add(S, "first_time", "en", "At what time was the executor handed its first task?",
        {"any_of": ts_variants(ga[0].group(1), ga[0].group(2))})

    ft = [re.match(SP_TS, x.string) for x in grep(S, r"Finished task \S+ in stage")]
    add(S, "last_time", "zh", "最后一个 task 跑完是几点？",
        {"any_of": ts_variants(ft[-1].group(1), ft[-1].group(2))})


def _hadoop() -> None:
    S = "Hadoop"
    HD_TS = r"^(\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d),\d{3})"
    APP = "1445144423722_0020"

    m = one(S, rf"Assigned container (container_{APP}_01_\d+) to attempt_{APP}_m_000003_0")
    add(S, "lookup", "en", f"Which container got assigned to attempt_{APP}_m_000003_0?",
        {"any_of": [m.group(1)]})

    m = grep(S, rf"using containerId: \[container_{APP}_01_000011 on NM: \[([^\]]+)\]")
    nms = {x.group(1) for x in m}
    assert len(nms) == 1
    nm = nms.pop()
    add(S, "lookup", "en", f"container_{APP}_01_000011 ran on which NodeManager?",
        {"any_of": [nm, nm.split(".")[0]]})

    m = grep(S, rf"Task: attempt_{APP}_m_000002_0 - exited : (\S+?):")
    assert len(m) == 1
    exc = m[0].group(1)
    add(S, "lookup", "zh", f"attempt_{APP}_m_000002_0 是因为什么异常退出的？",
        {"any_of": [exc, exc.split(".")[-1], "No Route to Host"]})

    m = one(S, rf"Input size for job job_{APP} = (\d+)\. Number of splits = (\d+)")
    add(S, "lookup", "en", "What input size did the job report (bytes)?",
        {"any_of": [m.group(1)]})

    lookup_one(S, r"addSpeculativeAttempt -- we are speculating (task_\S+)", "en",
               "which task did the speculator decide to run a speculative copy of?")

    c12 = f"container_{APP}_01_000012"
    assert not grep(S, rf"Assigned container {c12}") and grep(S, rf"Cannot assign container Container: \[ContainerId: {c12}")
    add(S, "negative", "en", f"Was {c12} ever assigned to a task attempt?",
        {"any_of": NEG})

    a1 = f"attempt_{APP}_m_000001_0"
    assert grep(S, rf"{a1} TaskAttempt Transitioned from FAIL_TASK_CLEANUP to FAILED")
    assert not grep(S, rf"{a1} TaskAttempt Transitioned from \S+ to SUCCEEDED") and not grep(S, rf"Task succeeded with attempt {a1}")
    add(S, "negative", "zh", f"{a1} 最后跑成功了没有？",
        {"any_of": NEG + ["FAILED", "失败"]})

    rm_err = grep(S, r"ERROR IN CONTACTING RM")
    assert len(rm_err) == csv_count(S, "E38")
    add(S, "count", "en", "How many times did the app master complain it couldn't contact the RM?",
        {"number": len(rm_err)})

    prog = collections.defaultdict(list)
    for x in grep(S, r"Progress of TaskAttempt (attempt_\S+) is : ([\d.]+)"):
        prog[x.group(1)].append(x.group(2))
    p9 = prog[f"attempt_{APP}_m_000009_0"]
    best9 = max(p9, key=float)
    add(S, "max", "en", f"What's the highest progress value reported for attempt_{APP}_m_000009_0?",
        {"number": float(best9)})

    add(S, "count", "zh", f"attempt_{APP}_m_000000_0 一共上报了多少次 progress？",
        {"number": len(prog[f"attempt_{APP}_m_000000_0"])})

    lease = [int(x.group(1)) for x in grep(S, r"Failed to renew lease for \[\S+\] for (\d+) seconds")]
    add(S, "max", "zh", "lease 一直续不上，日志里显示最长连续失败了多少秒？",
        {"number": max(lease)})

    alloc = [int(x.group(1)) for x in grep(S, r"Got allocated containers (\d+)")]
    add(S, "sum", "zh", "RM 一共分配给这个 AM 多少个 container？（把 Got allocated containers 的数加起来）",
        {"number": sum(alloc)})

    fl = [re.match(HD_TS, x.string) for x in grep(S, r"Failed to renew lease")]
    add(S, "first_time", "en", "When did the first 'Failed to renew lease' warning show up?",
        {"any_of": ts_variants(fl[0].group(1), fl[0].group(2))})

    ts_ok = [re.match(HD_TS, x.string) for x in grep(S, r"Task succeeded with attempt attempt_")]
    add(S, "first_time", "zh", "第一个 map 任务是什么时候成功完成的？",
        {"any_of": ts_variants(ts_ok[0].group(1), ts_ok[0].group(2))})

    m = one(S, rf"Assigned container (container_{APP}_01_\d+) to attempt_{APP}_m_000007_0")
    m2 = grep(S, rf"using containerId: \[{m.group(1)} on NM: \[([^\]]+)\]")
    host7 = m2[0].group(1).split(".")[0]
    add(S, "compound", "en", f"attempt_{APP}_m_000007_0 - which container did it get, and on which node?",
        {"all_of": [m.group(1), host7]})


def _apache() -> None:
    S = "Apache"
    AP_TS = r"^\[(\w{3} (\w{3} \d\d) (\d\d:\d\d:\d\d) \d{4})\]"

    lookup_one(S, r"^\[Sun Dec 04 05:15:09 2005\] \[error\] \[client (\S+)\] Directory index forbidden", "en",
               "Which client got refused a directory listing at 05:15:09 on Dec 4?")

    found = collections.defaultdict(set)
    for x in grep(S, r"jk2_init\(\) Found child (\d+) in scoreboard slot (\d+)"):
        found[x.group(1)].add(x.group(2))
    pid_max = max(found, key=int)
    assert len(found[pid_max]) == 1
    add(S, "lookup", "en", f"child {pid_max} - which scoreboard slot was it found in?",
        {"any_of": sorted(found[pid_max])})

    m = grep(S, r"\[client 218\.39\.132\.175\] Directory index forbidden by rule: (\S+)")
    assert len(m) == 1
    add(S, "lookup", "zh", "客户端 218.39.132.175 被禁止列目录，是哪个目录？",
        {"any_of": [m[0].group(1), m[0].group(1).rstrip("/")]})

    cfg = {x.group(1) for x in grep(S, r"workerEnv\.init\(\) ok (\S+)")}
    assert len(cfg) == 1
    add(S, "lookup", "en", "which properties file does workerEnv.init() report loading OK?",
        {"any_of": sorted(cfg)})

    assert grep(S, r"Can't find child 1566 in scoreboard") and "1566" not in found
    add(S, "negative", "en", "Was child 1566 ever found in the scoreboard?",
        {"any_of": NEG})

    # negative: 61.138.216.82 is denied only on Dec 4
    m = grep(S, r"\[client 61\.138\.216\.82\]")
    assert m and all(x.string.startswith("[Sun Dec 04") for x in m)
    add(S, "negative", "zh", "12月5号客户端 61.138.216.82 有没有报过 Directory index forbidden？",
        {"any_of": NEG})

    es7 = grep(S, r"mod_jk child workerEnv in error state 7$")
    assert len(es7) == csv_count(S, "E3", r"error state 7$")
    add(S, "count", "en", "how many times did mod_jk say the workerEnv child was in error state 7",
        {"number": len(es7)})

    d5 = grep(S, r"^\[Mon Dec 05 .*Directory index forbidden by rule")
    add(S, "count", "zh", "12月5号那天 Directory index forbidden 一共报了几次？",
        {"number": len(d5)})

    slots = [int(s) for v in found.values() for s in v]
    add(S, "max", "en", "Please check: what is the highest scoreboard slot number that any child process was found in?",
        {"number": max(slots)})

    add(S, "min", "en", "Smallest child PID that jk2_init found in the scoreboard?",
        {"number": min(int(p) for p in found)})

    cf = grep(S, r"jk2_init\(\) Can't find child (\d+) in scoreboard")
    cf5 = [x for x in cf if x.string.startswith("[Mon Dec 05")]
    add(S, "count", "zh", "5号那天 jk2_init 报 Can't find child ... in scoreboard 报了几回？",
        {"number": len(cf5)})

    di5 = [re.match(AP_TS, x.string) for x in d5]
    add(S, "first_time", "en", "First directory-index-forbidden error on Monday Dec 5 - what time?",
        {"any_of": ts_variants(di5[0].group(1), di5[0].group(3))})

    es10 = [re.match(AP_TS, x.string) for x in grep(S, r"error state 10$")]
    add(S, "last_time", "zh", "error state 10 最后一次出现是什么时候？",
        {"any_of": ts_variants(es10[-1].group(1), es10[-1].group(3))})

    err = grep(S, r"^\[[^\]]+\] \[error\]")
    assert len(err) == sum(1 for r in CSV[S] if r["Level"] == "error")
    di_all = grep(S, r"Directory index forbidden by rule")
    add(S, "compound", "en", "How many error lines are in this log in total, and how many of those are directory index denials?",
        {"all_of": [str(len(err)), str(len(di_all))]})

    add(S, "compound", "zh", "Can't find child 这种报错一共几次？里面最大的那个 pid 是多少？",
        {"all_of": [str(len(cf)), str(max(int(x.group(1)) for x in cf))]})


def _linux() -> None:
    S = "Linux"
    LX_TS = r"^((\w{3} +\d+) (\d\d:\d\d:\d\d))"

    anon = {x.group(1) for x in grep(S, r"ANONYMOUS FTP LOGIN FROM ([\d.]+),")}
    assert len(anon) == 1
    add(S, "lookup", "en", "Anonymous FTP login - which IP did it come from?",
        {"any_of": sorted(anon)})

    lookup_one(S, r"kernel: Linux version (\S+)", "en",
               "What kernel version did the machine boot on Jul 27?")

    lookup_one(S, r"Received SNMP packet\(s\) from (\S+)", "zh",
               "snmpd 收到的 SNMP 包是从哪个 IP 来的？")

    names = {x.group(1) for x in grep(S, r"connection from 203\.101\.45\.59 \(([^)]*)\)")}
    assert len(names) == 1
    add(S, "lookup", "en", "the ftp connections from 203.101.45.59 - what hostname does that IP resolve to?",
        {"any_of": sorted(names)})

    lookup_one(S, r"User unknown timed out after (\d+) seconds", "zh",
               "ftpd 里那个 User unknown 超时，是等了多少秒才超时的？")

    gdm = grep(S, r"gdm")
    assert any("Couldn't authenticate user" in x.string for x in gdm)
    assert not grep(S, r"gdm.*session opened")
    add(S, "negative", "en", "Did the gdm (graphical) login attempt on Jul 11 succeed?",
        {"any_of": NEG + ["fail"]})

    assert grep(S, r"user=guest") and not grep(S, r"session opened for user guest")
    add(S, "negative", "zh", "guest 这个账号有没有成功开过会话（session opened）？",
        {"any_of": NEG})

    ftp211 = grep(S, r"ftpd\[\d+\]: connection from 211\.72\.151\.162 ")
    assert len(ftp211) == csv_count(S, "E29", r"^connection from 211\.72\.151\.162 ")
    add(S, "count", "en", "ftp conns from 211.72.151.162, how many",
        {"number": len(ftp211)})

    auth = grep(S, r"sshd\(pam_unix\)\[\d+\]: authentication failure; .*rhost=(\S*)\s+user=root")
    a150 = [x for x in auth if x.group(1) == "150.183.249.110"]
    add(S, "count", "zh", "150.183.249.110 针对 root 的 ssh 认证失败有多少次？",
        {"number": len(a150)})

    lr = grep(S, r"logrotate: ALERT exited abnormally")
    add(S, "count", "en", "how often did logrotate exit abnormally?",
        {"number": len(lr)})

    soa = grep(S, r"named\[\d+\]: notify question section contains no SOA")
    add(S, "count", "zh", "named 打了多少条 notify question section contains no SOA？",
        {"number": len(soa)})

    sess = grep(S, r"sshd\(pam_unix\)\[\d+\]: session opened for user test by")
    add(S, "count", "zh", "用户 test 通过 sshd 一共开了多少次 session？",
        {"number": len(sess)})

    f207 = [re.match(LX_TS, x.string) for x in grep(S, r"connection from 207\.30\.238\.8 ")]
    add(S, "first_time", "en", "When did 207.30.238.8 first connect over FTP?",
        {"any_of": ts_variants(f207[0].group(1), f207[0].group(3))})

    kb = [re.match(LX_TS, x.string) for x in grep(S, r"Kerberos authentication failed")]
    add(S, "last_time", "zh", "Kerberos authentication failed 最后一次是什么时候？",
        {"any_of": ts_variants(kb[-1].group(1), kb[-1].group(3))})

    guest = [x.group(1) for x in grep(S, r"authentication failure; .*rhost=(\S*)\s+user=guest")]
    gtop = collections.Counter(guest).most_common(2)
    assert len(gtop) == 1 or gtop[0][1] > gtop[1][1]
    add(S, "compound", "en", "How many ssh auth failures were there for user guest, and which remote host did most of them come from?",
        {"all_of": [str(len(guest)), gtop[0][0]]})


def build(data: Path, systems: tuple[str, ...] = tuple(SYSTEMS)) -> list[dict]:
    """The questions about `systems`, their golds computed from `data` (the Loghub folder)."""
    RAW.clear(), CSV.clear(), QUESTIONS.clear(), _counters.clear()
    for s in SYSTEMS:
        RAW[s], CSV[s] = load(data, s)
    for s, make in (("OpenSSH", _openssh), ("Spark", _spark), ("Hadoop", _hadoop), ("Apache", _apache),
                    ("Linux", _linux)):
        if s in systems:
            make()
    ids = [q["id"] for q in QUESTIONS]
    assert len(ids) == len(set(ids))
    return list(QUESTIONS)


def main(argv: list[str] | None = None) -> int:
    from tools.bench.qa_questions import DEFAULT_DATA

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the Loghub folder")
    ap.add_argument("--part", choices=sorted(PARTS), default="tune")
    ap.add_argument("--out", type=Path, required=True, help="the questions' JSON, for bench_qa.py --questions")
    ap.add_argument("-v", action="store_true", help="print every question with its gold")
    a = ap.parse_args(argv)
    qs = build(a.data, PARTS[a.part])
    a.out.write_text(json.dumps(qs, ensure_ascii=False, indent=1), encoding="utf-8")
    for q in qs if a.v else []:
        print(q["id"], q["lang"], "|", q["question"], "=>", json.dumps(q["check"], ensure_ascii=False))
    print(json.dumps({"questions": len(qs), "part": a.part,
                      "by_system": dict(sorted(collections.Counter(q["system"] for q in qs).items())),
                      "by_lang": dict(sorted(collections.Counter(q["lang"] for q in qs).items()))}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
