#!/usr/bin/env python3
"""Blind evaluation questions, set 3 (Apache + Linux loghub 2k samples).

Written by a helper session that had NOT read the appliance's code, tests,
docs or any earlier question files: the wording is its own, chosen the way an
operator / maintenance engineer would ask after reading the raw logs.

Covers two systems, 24 questions each (48 in all), half English (terse,
chatty, informal) and half colloquial Chinese as typed on a tablet, across the
kinds lookup, negative, count, agg, time, top and multi.

Every gold is computed by this script from the raw log files
(Apache/Apache_2k.log and Linux/Linux_2k.log) with regular expressions; nothing
is typed in by hand.  Each uniqueness assumption (a lookup hits exactly one
line, a top-1 has no tie, a time span has no line on its boundary, a negative
has zero matching lines, ...) is asserted, so the script fails loudly if the
data differ from what the questions presume.

Split (fixed 2026-12-07 before any run, by the maintainers of the appliance): a question whose number
is even is tuned on, an odd one is held aside and run only at the end of a session (`--part`).

Usage: python tools/bench/qa_blind3.py [--data DIR] [--part tune|held|all] [--out FILE]
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.bench import blind_cli  # noqa: E402  (run as a script too)

NEG = ["not", "no ", "none", "never", "n't", "没有", "不", "否"]

APACHE_RE = re.compile(
    r"^\[(\w{3} \w{3} \d{2} (\d{2}:\d{2}:\d{2}) \d{4})\] \[(\w+)\] (.*)$")
LINUX_RE = re.compile(
    r"^(\w{3}) +(\d{1,2}) (\d{2}:\d{2}:\d{2}) (\S+) +(.*)$")


DATA = blind_cli.default_data()


def read(rel: str) -> list[str]:
    return blind_cli.read_2k(DATA / rel)


def grep(lines: list[str], pat: str) -> list[re.Match]:
    rx = re.compile(pat)
    return [m for m in (rx.search(ln) for ln in lines) if m]


def one(lines: list[str], pat: str) -> re.Match:
    hits = grep(lines, pat)
    assert len(hits) == 1, (pat, len(hits))
    return hits[0]


def none_(lines: list[str], pat: str) -> int:
    hits = grep(lines, pat)
    assert not hits, (pat, [h.string for h in hits[:3]])
    return 0


def top1(counter: Counter) -> str:
    (k1, c1), (_k2, c2) = counter.most_common(2)
    assert c1 > c2, ("tie for top", counter.most_common(3))
    return k1


def single(values) -> str:
    s = set(values)
    assert len(s) == 1, s
    return next(iter(s))


def q(system, n, kind, lang, text, check):
    return {"system": system, "id": f"blind3-{system}-{n:02d}", "kind": kind,
            "lang": lang, "question": text, "check": check}


def num(v):
    return {"number": v}


def anyof(*spans):
    return {"any_of": list(dict.fromkeys(str(s) for s in spans))}


def allof(*spans):
    return {"all_of": [str(s) for s in spans]}


# --------------------------------------------------------------------------
# Apache
# --------------------------------------------------------------------------

def apache() -> list[dict]:
    raw = read("Apache/Apache_2k.log")
    recs = []
    for ln in raw:
        m = APACHE_RE.match(ln)
        assert m, ln
        recs.append((m.group(1), m.group(2), m.group(3), m.group(4), ln))
    return _apache_asks(raw, recs) + _apache_figures(raw, recs)


def _apache_asks(raw: list[str], recs: list[tuple]) -> list[dict]:
    """Apache's lookup, negative and count questions (1-12)."""
    A = "Apache"
    out = []

    # ---- lookup
    m = one(raw, r"^\[Sun Dec 04 14:29:00 2005\] \[error\] \[client ([\d.]+)\] "
                 r"Directory index forbidden")
    out.append(q(A, 1, "lookup", "en",
                 "which client IP got bounced with 'directory index forbidden' "
                 "at 14:29:00 on Sun Dec 04?", anyof(m.group(1))))
    m = one(raw, r"\[client 222\.166\.160\.184\] Directory index forbidden by "
                 r"rule: (\S+)")
    path = m.group(1).rstrip("/")
    out.append(q(A, 2, "lookup", "zh",
                 "客户端 222.166.160.184 被挡了，它想列目录的是服务器上哪个路径？",
                 anyof(path)))
    m = one(raw, r"Found child 1568 in scoreboard slot (\d+)")
    out.append(q(A, 3, "lookup", "en",
                 "Hey, quick one - when jk2_init found child 1568, what "
                 "scoreboard slot was it sitting in?", num(int(m.group(1)))))
    cfg = single(m.group(1) for m in grep(raw, r"workerEnv\.init\(\) ok (\S+)"))
    out.append(q(A, 4, "lookup", "zh",
                 "workerEnv.init() 初始化成功的时候读的是哪个配置文件？给我完整路径",
                 anyof(cfg)))

    # ---- negative
    assert grep(raw, r"scoreboard slot \d+")
    none_(raw, r"scoreboard slot 5\b")
    out.append(q(A, 5, "negative", "en",
                 "Did any child ever get placed in scoreboard slot 5?",
                 anyof(*NEG)))
    levels = Counter(r[2] for r in recs)
    assert "warn" not in levels and "warning" not in levels, levels
    out.append(q(A, 6, "negative", "zh",
                 "这台 Apache 日志里有没有 warn 级别的告警？有的话几条",
                 anyof(*NEG)))
    assert grep(raw, r"^\[Sun Dec 04 [^]]*\] \[error\] \[client 222\.166\.160\.184\]")
    none_(raw, r"^\[Mon Dec 05 [^]]*\].*\[client 222\.166\.160\.184\]")
    out.append(q(A, 7, "negative", "en",
                 "did 222.166.160.184 come back and get refused again on "
                 "Monday Dec 05?", anyof(*NEG)))

    # ---- count
    n7 = len(grep(raw, r"mod_jk child workerEnv in error state 7\b"))
    out.append(q(A, 8, "count", "en",
                 "How many times did mod_jk report the workerEnv child in "
                 "error state 7?", num(n7)))
    nmon = len(grep(raw, r"^\[Mon Dec 05 .*Directory index forbidden"))
    out.append(q(A, 9, "count", "zh",
                 "12月5号周一那天，Directory index forbidden 这种拒绝一共出了几次？",
                 num(nmon)))
    n12 = len(grep(raw, r"Found child \d+ in scoreboard slot 12\b"))
    out.append(q(A, 10, "count", "en",
                 "count of children found in scoreboard slot 12?", num(n12)))
    assert not grep(raw, r"^\[Mon Dec 05 (13|14):00:00 2005\]")
    nspan = sum(1 for r in recs if r[0].startswith("Mon Dec 05")
                and "13:00:00" < r[1] < "14:00:00"
                and re.search(r"in error state \d+", r[3]))
    assert nspan > 0
    out.append(q(A, 11, "count", "zh",
                 "周一 Dec 05 下午1点到2点（13:00-14:00）之间，mod_jk 报 error state "
                 "的有多少条？", num(nspan)))
    nerr = levels["error"]
    out.append(q(A, 12, "count", "zh",
                 "整个日志里 [error] 级别的一共多少行？", num(nerr)))
    return out


def _apache_figures(raw: list[str], recs: list[tuple]) -> list[dict]:
    """Apache's agg, time, top and multi questions (13-24)."""
    A = "Apache"
    out = []
    levels = Counter(r[2] for r in recs)

    def ts_check(stamp: str):
        return anyof(stamp, stamp.split()[3])

    # ---- agg
    cant = [int(m.group(1)) for m in
            grep(raw, r"jk2_init\(\) Can't find child (\d+) in scoreboard")]
    assert cant
    out.append(q(A, 13, "agg", "zh",
                 "jk2_init 报 Can't find child 的那些 child 号里，最小的是多少？",
                 num(min(cant))))
    states = [int(m.group(1)) for m in grep(raw, r"in error state (\d+)")]
    out.append(q(A, 14, "agg", "en",
                 "What's the highest error state number mod_jk ever hit in "
                 "this log?", num(max(states))))
    slots = [int(m.group(1)) for m in
             grep(raw, r"Found child \d+ in scoreboard slot (\d+)")]
    avg = round(sum(slots) / len(slots), 2)
    out.append(q(A, 15, "agg", "en",
                 "Across all the 'Found child ... in scoreboard slot N' lines, "
                 "what's the average slot number (to 2 decimals)?", num(avg)))
    out.append(q(A, 16, "agg", "zh",
                 "把所有 Can't find child 里面的 child 号加起来，总和是多少？",
                 num(sum(cant))))

    # ---- time (file order is chronological for these; asserted)
    def first_last(pat):
        hits = [r for r in recs if re.search(pat, r[3])]
        assert hits, pat
        ts = [datetime.strptime(r[0], "%a %b %d %H:%M:%S %Y") for r in hits]
        assert ts == sorted(ts), pat
        return hits[0][0], hits[-1][0]

    first_forb, last_forb = first_last(r"Directory index forbidden")
    out.append(q(A, 17, "time", "en",
                 "When was the very first 'Directory index forbidden' error?",
                 ts_check(first_forb)))
    _, last_init = first_last(r"mod_jk child init 1 -2")
    out.append(q(A, 18, "time", "zh",
                 "mod_jk child init 1 -2 这个错最后一次是啥时候报的？",
                 ts_check(last_init)))
    first13, _ = first_last(r"scoreboard slot 13\b")
    out.append(q(A, 19, "time", "en",
                 "so when did a child first show up in scoreboard slot 13?",
                 ts_check(first13)))

    # ---- top
    st = Counter(states)
    out.append(q(A, 20, "top", "zh",
                 "mod_jk 的 error state 里面哪个数字出现得最多？",
                 num(top1(st))))
    hours = Counter((r[0][:10], r[1][:2]) for r in recs)
    day, hh = top1(hours)
    out.append(q(A, 21, "top", "en",
                 f"Which clock hour on {day} was the noisiest, i.e. had the "
                 f"most log lines?",
                 anyof(f"{hh}:", f"{int(hh)} am", f"{int(hh)}am",
                       f"{int(hh)} a.m.", f"{int(hh)}-{int(hh) + 1}",
                       f"{int(hh)} to {int(hh) + 1}")))
    out.append(q(A, 22, "top", "zh",
                 "notice 和 error 两个级别，哪个级别的行数多？",
                 anyof(top1(levels))))

    # ---- multi
    forb = grep(raw, r"\[client ([\d.]+)\] Directory index forbidden")
    last_ip = forb[-1].group(1)
    assert forb[-1].string.startswith("[" + last_forb + "]")
    out.append(q(A, 23, "multi", "en",
                 "How many directory-index-forbidden hits are there in total, "
                 "and which client IP was the last one refused?",
                 allof(len(forb), last_ip)))
    kids = [m.group(1) for m in grep(
        raw, r"^\[Mon Dec 05 07:57:02 2005\] .*Can't find child (\d+)")]
    assert len(kids) == 2, kids
    out.append(q(A, 24, "multi", "zh",
                 "周一早上 07:57:02 那会儿 jk2_init 说找不到 child，是哪几个 child 号？"
                 "一共几个？",
                 allof(kids[0], kids[1])))
    return out


# --------------------------------------------------------------------------
# Linux
# --------------------------------------------------------------------------

def linux() -> list[dict]:
    raw = read("Linux/Linux_2k.log")
    recs = []
    for ln in raw:
        m = LINUX_RE.match(ln)
        assert m, ln
        mon, day, hms, host, rest = m.groups()
        svc = re.match(r"([^\s\[:]+)", rest).group(1)
        recs.append((mon, int(day), hms, host, rest, svc, ln))
    return _linux_asks(raw, recs) + _linux_figures(raw, recs)


def _linux_asks(raw: list[str], recs: list[tuple]) -> list[dict]:
    """Linux's lookup, negative and count questions (1-12)."""
    L = "Linux"
    out = []

    # ---- lookup
    m = one(raw, r"authentication failure;.*rhost=211\.46\.224\.253\s+user=(\S+)")
    out.append(q(L, 1, "lookup", "en",
                 "211.46.224.253 tried to get in over ssh - which account "
                 "name was it trying?", anyof(m.group(1))))
    m = one(raw, r"ROOT LOGIN ON (\S+)")
    tty = m.group(1)
    out.append(q(L, 2, "lookup", "zh",
                 "root 直接在本机控制台登录那次，是在哪个 tty 上登的？",
                 anyof(tty)))
    m = one(raw, r"Received SNMP packet\(s\) from ([\d.]+)")
    out.append(q(L, 3, "lookup", "en",
                 "snmpd got some SNMP packets - from what address?",
                 anyof(m.group(1))))
    names = {m.group(1) for m in grep(
        raw, r"ftpd\[\d+\]: connection from 206\.196\.21\.129 \(([^)]*)\)")}
    assert len(names) == 1 and "" not in names, names
    out.append(q(L, 4, "lookup", "zh",
                 "ftp 那边 206.196.21.129 连进来的，反查出来的主机名是啥？",
                 anyof(names.pop())))

    # ---- negative
    assert grep(raw, r"authentication failure;.*\buser=root\b")
    none_(raw, r"\buser=admin\b")
    none_(raw, r"\badmin\b")
    out.append(q(L, 5, "negative", "en",
                 "Anyone hammering the 'admin' account with failed logins?",
                 anyof(*NEG)))
    none_(raw, r"(?i)panic|out of memory|oom-killer|segfault")
    out.append(q(L, 6, "negative", "zh",
                 "这台机器有没有出现过 kernel panic 或者内存不够 OOM 杀进程的情况？",
                 anyof(*NEG)))
    assert grep(raw, r"ftpd\[\d+\]: connection from 211\.72\.151\.162 ")
    assert len(grep(raw, r"ANONYMOUS FTP LOGIN FROM")) >= 1
    none_(raw, r"ANONYMOUS FTP LOGIN FROM 211\.72\.151\.162\b")
    out.append(q(L, 7, "negative", "en",
                 "did 211.72.151.162 ever manage an anonymous FTP login?",
                 anyof(*NEG)))

    # ---- count
    n = len(grep(raw, r"sshd\(pam_unix\)\[\d+\]: authentication failure;"
                      r".*rhost=218\.188\.2\.4\s*$"))
    assert n == len(grep(raw, r"authentication failure;.*rhost=218\.188\.2\.4\b"))
    out.append(q(L, 8, "count", "en",
                 "how many ssh auth failures came from 218.188.2.4?", num(n)))
    n = len(grep(raw, r"su\(pam_unix\)\[\d+\]: session opened for user news\b"))
    out.append(q(L, 9, "count", "zh",
                 "su 切到 news 用户，session opened 一共几次？", num(n)))
    n = len(grep(raw, r"ftpd\[\d+\]: connection from 211\.72\.151\.162 "))
    out.append(q(L, 10, "count", "en",
                 "Roughly how chatty was 211.72.151.162 on FTP? Give me the "
                 "number of connections it opened.", num(n)))
    assert not any(r[0] == "Jun" and r[1] == 30 and r[2] in
                   ("20:00:00", "21:00:00") for r in recs)
    n = sum(1 for r in recs if r[0] == "Jun" and r[1] == 30
            and "20:00:00" < r[2] < "21:00:00")
    assert n > 0
    out.append(q(L, 11, "count", "zh",
                 "6月30号晚上8点到9点（20:00-21:00）这一个钟头，日志一共记了多少条？",
                 num(n)))
    n = len(grep(raw, r"authentication failure;.*\buser=guest\b"))
    out.append(q(L, 12, "count", "zh",
                 "user=guest 的认证失败一共多少次？", num(n)))
    return out


def _linux_figures(raw: list[str], recs: list[tuple]) -> list[dict]:
    """Linux's agg, time, top and multi questions (13-24)."""
    L = "Linux"
    out = []
    tty = one(raw, r"ROOT LOGIN ON (\S+)").group(1)

    def stamp_of(r):
        return f"{r[0]} {r[1]} {r[2]}"

    def ts_check(r):
        return anyof(stamp_of(r), f"{r[0]} {r[1]:2d} {r[2]}", r[2])

    # ---- agg
    zones = [int(m.group(1)) for m in
             grep(raw, r"kernel:\s+\w+ zone: (\d+) pages")]
    assert len(zones) == 3, zones
    out.append(q(L, 13, "agg", "zh",
                 "开机时内核打印的几个内存 zone（DMA/Normal/HighMem），页数加起来总共多少页？",
                 num(sum(zones))))
    ents = [int(m.group(1)) for m in
            grep(raw, r"kernel: .*hash table entries: (\d+)")]
    assert len(ents) >= 3
    assert Counter(ents)[max(ents)] == 1
    out.append(q(L, 14, "agg", "en",
                 "Of the 'hash table entries' figures the kernel printed at "
                 "boot, which is the biggest?", num(max(ents))))
    kpids = [int(m.group(1)) for m in grep(raw, r"klogind\[(\d+)\]:")]
    out.append(q(L, 15, "agg", "zh",
                 "klogind 那一堆失败记录，进程号（pid）最小的是几号？",
                 num(min(kpids))))
    fpids = [int(m.group(1)) for m in
             grep(raw, r"^Jul 17 .* ftpd\[(\d+)\]: connection from")]
    assert fpids
    out.append(q(L, 16, "agg", "en",
                 "On Jul 17, what was the highest ftpd pid handling an "
                 "incoming connection?", num(max(fpids))))

    # ---- time (file order is chronological for these; asserted)
    def hits_sorted(pat):
        hits = [r for r in recs if re.search(pat, r[4])]
        assert hits, pat
        keys = [(r[0] == "Jul", r[1], r[2]) for r in hits]
        assert keys == sorted(keys), pat
        return hits

    h = hits_sorted(r"ANONYMOUS FTP LOGIN")
    out.append(q(L, 17, "time", "en",
                 "When did the first anonymous FTP login happen?",
                 ts_check(h[0])))
    h = hits_sorted(r"notify question section contains no SOA")
    out.append(q(L, 18, "time", "zh",
                 "named 报 notify question section contains no SOA，最后一次是几点？",
                 ts_check(h[-1])))
    h = hits_sorted(r"authentication failure;.*rhost=150\.183\.249\.110\b")
    out.append(q(L, 19, "time", "en",
                 "what time did 150.183.249.110 start failing ssh auth - i.e. "
                 "its first failure?", ts_check(h[0])))

    # ---- top
    rh = Counter(m.group(1) for m in
                 grep(raw, r"authentication failure;.*rhost=(\S+)"))
    out.append(q(L, 20, "top", "zh",
                 "认证失败最多的是哪个来源地址（rhost）？", anyof(top1(rh))))
    svc = Counter(r[5] for r in recs)
    out.append(q(L, 21, "top", "en",
                 "Which daemon/service is writing the most lines in this log?",
                 anyof(top1(svc))))
    days = Counter((r[0], r[1]) for r in recs)
    mon, d = top1(days)
    mnum = {"Jun": 6, "Jul": 7}[mon]
    out.append(q(L, 22, "top", "zh",
                 "哪一天日志最多？说个日期就行",
                 anyof(f"{mon} {d}", f"{mon}  {d}", f"{mnum}月{d}",
                       f"{mnum}-{d}", f"{mnum}/{d}", f"0{mnum}-{d:02d}")))

    # ---- multi
    kf = grep(raw, r"klogind\[\d+\]: Kerberos authentication failed")
    kip = single(m.group(1) for m in
                 grep(raw, r"klogind\[\d+\]: Authentication failed from ([\d.]+)"))
    out.append(q(L, 23, "multi", "en",
                 "How many Kerberos authentication failures did klogind log, "
                 "and what IP were they coming from?", allof(len(kf), kip)))
    m = one(raw, r"login\(pam_unix\)\[(\d+)\]: session opened for user root")
    pid = m.group(1)
    c = one(raw, rf"login\(pam_unix\)\[{pid}\]: session closed for user root")
    crec = next(r for r in recs if r[6] == c.string)
    out.append(q(L, 24, "multi", "zh",
                 "root 在本机 login 登录的那次，用的哪个 tty？几点退出（session closed）的？",
                 allof(tty, crec[2])))
    return out


# --------------------------------------------------------------------------

def build() -> list[dict]:
    return apache() + linux()


part = blind_cli.part      # even numbers tune, odd held: every kind of both systems falls in both parts


def validate(qs: list[dict]) -> None:
    blind_cli.check_questions(qs, ("Apache", "Linux"), ("lookup", "negative", "count", "agg", "time", "top", "multi"))
    for sysname in ("Apache", "Linux"):
        sub = [x for x in qs if x["system"] == sysname]
        assert len(sub) == 24, (sysname, len(sub))
        langs = Counter(x["lang"] for x in sub)
        assert langs["en"] == langs["zh"] == 12, (sysname, langs)


def main(argv=None) -> int:
    return blind_cli.main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
