#!/usr/bin/env python3
"""Conditional aggregation questions (Apache, Hadoop, Linux loghub 2k samples).

Written by a helper session that had NOT read the appliance's code, tests,
docs or any earlier question files (only the output format of qa_calendar.py
and its test): the wording is its own, chosen the way a line operator /
maintenance engineer would ask after looking at the raw logs, mixed with some
stilted template English of the kind generated question sets use ("What sum of
ask in getResources when newContainers=0?").

40 questions (Apache 14, Hadoop 13, Linux 13), half English and half colloquial
Chinese as typed on a tablet, of five kinds, each an aggregate of a number
written in the lines (or a count of lines) under a condition on other values
in the lines (an id, a user, an address or address prefix, a host, a thread, a
day / hour / minute, a state, a path):
  count  how many lines match the condition;
  sum    the total of a number written in the matching lines;
  max    the largest such number;
  min    the smallest such number;
  avg    the mean of such numbers (only where it is exact to one decimal).
Many conditions name a value that sits inside a compound token in the log the
way a person would write it: the address without its port
("msra-sa-41/10.190.173.170:8030"), the short attempt id ("m_000001_0"), the
value of a name=value or name:value pair ("newContainers=0", "ContAlloc:N"), a
pid in brackets ("sshd(pam_unix)[N]"), a reverse host name in parentheses, an
IPC handler number inside the thread name in brackets.

Every gold is computed by this script from the raw log files with regular
expressions; nothing is typed in by hand.  Each assumption (the condition
value exists, a count is above 2, an average is exact to one decimal, a condition
changes a max / min) is asserted, so the script fails loudly if the data
differ from what the questions presume.

Split (fixed before any run): a question whose number is even is tuned on ("tune"), an odd one is
held aside and run only at the end of a session ("held"); `--part` picks one.

Usage: python tools/bench/qa_reason.py [--data DIR] [--part tune|held|all] [--out FILE]
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.bench import blind_cli  # noqa: E402  (run as a script too)

SYSTEMS = ("Apache", "Hadoop", "Linux")
KINDS = ("count", "sum", "max", "min", "avg")

DATA = blind_cli.default_data()


def read(system: str) -> list[str]:
    return blind_cli.read_2k(DATA / system / f"{system}_2k.log")


def parse(lines: list[str], rx: str) -> list[re.Match]:
    return blind_cli.parse(lines, rx, strip=True)


def ints(recs, rx: str, group: int, where=lambda m: True) -> list[int]:
    """Integers captured by rx in field `group` of the records that satisfy where."""
    r = re.compile(rx)
    out = [int(x) for m in recs if where(m) for x in r.findall(m.group(group))]
    assert out, ("nothing matched", rx)
    return out


def count(recs, pred) -> int:
    n = sum(1 for m in recs if pred(m))
    assert n > 2, ("count too small to be a fair question", n)
    return n


def narrows(sub, whole):
    """The conditioned answer differs from the answer without the condition."""
    assert sub != whole, ("condition does not change the answer", sub, whole)
    return sub


def num(v):
    return {"number": v}


def avg1(values: list[int]):
    """Mean rounded to one decimal; asserts it is exact to one decimal."""
    assert len(values) > 2, values
    tenths = sum(values) * 10 / len(values)
    assert tenths == int(tenths), ("average not exact to one decimal", sum(values), len(values))
    return round(sum(values) / len(values), 1)


def q(system, n, kind, lang, text, check):
    assert kind in KINDS and lang in ("en", "zh")
    return blind_cli.question("reason", system, n, kind, lang, text, check)


# --------------------------------------------------------------------------
# Apache
# --------------------------------------------------------------------------

def apache() -> list[dict]:
    A = "Apache"
    recs = parse(read(A), r"^\[\w{3} (\w{3}) (\d{2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\] "
                          r"\[(\w+)\] (.*)$")
    on = lambda d, h=None: (lambda m: m.group(2) == d and (h is None or m.group(3) == h))  # noqa: E731
    state = lambda s: (lambda m: m.group(8) == f"mod_jk child workerEnv in error state {s}")  # noqa: E731
    both = lambda f, g: (lambda m: f(m) and g(m))  # noqa: E731
    found = r"^jk2_init\(\) Found child (\d+) in scoreboard slot %s$"
    in_slot = lambda s: (lambda m: re.match(found % s, m.group(8)) is not None)  # noqa: E731
    slot_rx = r"^jk2_init\(\) Found child \d+ in scoreboard slot (\d+)$"
    states = r"^mod_jk child workerEnv in error state (\d+)$"
    out = []

    out.append(q(A, 1, "count", "en",
                 "How many times did mod_jk report workerEnv error state 6 on Dec 5?",
                 num(count(recs, both(on("05"), state(6))))))
    slot6 = ints(recs, found % r"6", 8)
    pids = ints(recs, found % r"\d+", 8)
    out.append(q(A, 2, "max", "zh", "scoreboard slot 6 里找到的 child 进程号最大是多少",
                 num(narrows(max(slot6), max(pids)))))
    out.append(q(A, 3, "count", "zh", "12月4号 error state 7 一共报了几次",
                 num(count(recs, both(on("04"), state(7))))))
    out.append(q(A, 4, "min", "en", "What min child pid found in scoreboard slot 13?",
                 num(narrows(min(ints(recs, found % r"13", 8)), min(pids)))))
    out.append(q(A, 5, "sum", "en", "What sum of error state on Dec 04?",
                 num(sum(ints(recs, states, 8, on("04"))))))
    slot_nums = ints(recs, slot_rx, 8, on("05", "15"))
    out.append(q(A, 6, "avg", "zh", "12月5号下午3点那个钟头 Found child 的 scoreboard slot 号平均是几",
                 num(avg1(slot_nums))))
    forb = re.compile(r"^\[client (\d+(?:\.\d+){3})\] Directory index forbidden by rule: ")
    n218 = count(recs, lambda m: (forb.match(m.group(8)) or [0, ""])[1].startswith("218."))
    assert n218 < count(recs, lambda m: forb.match(m.group(8)))
    out.append(q(A, 7, "count", "zh", "218 开头的客户端地址 被 Directory index forbidden 挡掉了几次",
                 num(n218)))
    out.append(q(A, 8, "count", "en",
                 "How many 'Found child' lines put the child in scoreboard slot 11?",
                 num(count(recs, in_slot(11)))))
    hi = narrows(max(ints(recs, slot_rx, 8, on("04", "06"))), max(ints(recs, slot_rx, 8)))
    out.append(q(A, 9, "max", "en",
                 "Between 6 and 7 in the morning on Dec 4, what was the highest scoreboard slot number "
                 "jk2_init found a child in?", num(hi)))
    lost = ints(recs, r"^jk2_init\(\) Can't find child (\d+) in scoreboard$", 8)
    assert len(lost) > 2
    out.append(q(A, 10, "min", "zh", "jk2_init 报 Can't find child 的那些 找不到的进程号最小是多少",
                 num(min(lost))))
    out.append(q(A, 11, "count", "zh", "12月5号上午10点那个钟头 [error] 级别的有几条",
                 num(count(recs, both(on("05", "10"), lambda m: m.group(7) == "error")))))
    conf = "/etc/httpd/conf/workers2.properties"
    out.append(q(A, 12, "count", "en",
                 f"How many times workerEnv.init ok {conf} on Dec 05?",
                 num(count(recs, both(on("05"), lambda m: m.group(8) == f"workerEnv.init() ok {conf}")))))
    out.append(q(A, 13, "max", "en",
                 "Looking only at the 8 pm hour of Dec 4, what's the biggest child pid that "
                 "jk2_init found in the scoreboard?",
                 num(narrows(max(ints(recs, found % r"\d+", 8, on("04", "20"))), max(pids)))))
    out.append(q(A, 14, "sum", "zh", "12月4号晚上8点那个钟头 error state 后面的数字全加起来是多少",
                 num(sum(ints(recs, states, 8, on("04", "20"))))))
    return out


# --------------------------------------------------------------------------
# Hadoop
# --------------------------------------------------------------------------

def hadoop() -> list[dict]:
    H = "Hadoop"
    recs = parse(read(H), r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),\d+ "
                          r"(\w+) \[(.*?)\] (\S+): (.*)$")
    job = "attempt_1445144423722_0020_"
    prog = re.compile(r"^Progress of TaskAttempt (attempt_\d+_\d+_[mr]_\d+_\d+) is : [\d.]+$")
    progress = lambda att: (lambda m: (prog.match(m.group(10)) or [0, ""])[1] == job + att)  # noqa: E731
    handler = lambda m: int(re.match(r"IPC Server handler (\d+) on \d+$", m.group(8)).group(1))  # noqa: E731
    lease = r"^Failed to renew lease for \[DFSClient_\w+\] for (\d+) seconds\."
    at_min = lambda mi: (lambda m: (m.group(4), m.group(5)) == ("18", mi))  # noqa: E731
    change = re.compile(r"^Address change detected\. Old: [\w-]+/(\d+(?:\.\d+){3}):(\d+) New: ")
    out = []

    out.append(q(H, 1, "count", "en",
                 "How many progress reports did attempt m_000001_0 send?",
                 num(count(recs, progress("m_000001_0")))))
    h14 = lambda m: m.group(8) == "IPC Server handler 14 on 62270"  # noqa: E731
    out.append(q(H, 2, "count", "zh", "IPC Server handler 14 一共转了多少条 Progress 进度汇报",
                 num(count(recs, lambda m: h14(m) and prog.match(m.group(10))))))
    top = max(handler(m) for m in recs if prog.match(m.group(10)))
    out.append(q(H, 3, "max", "zh", "m_000007_0 这个attempt 的进度是哪些 IPC handler 报上来的 编号最大的是几号",
                 num(narrows(max(handler(m) for m in recs if progress("m_000007_0")(m)), top))))
    res = re.compile(r"^getResources\(\) for application_\d+_\d+: ask=(\d+) release= \d+ "
                     r"newContainers=(\d+) ")
    asks = [int(r.group(1)) for m in recs for r in [res.match(m.group(10))] if r and r.group(2) == "0"]
    assert len(asks) > 2
    out.append(q(H, 4, "sum", "en", "What sum of ask in getResources when newContainers=0?",
                 num(sum(asks))))
    out.append(q(H, 5, "avg", "en",
                 "During the minute 18:08, what was the average number of seconds in the "
                 "'Failed to renew lease' warnings?", num(avg1(ints(recs, lease, 10, at_min("08"))))))
    chg = [c.groups() for m in recs for c in [change.match(m.group(10))] if c]
    assert {p for _a, p in chg} == {"8030", "9000"}
    n8030 = sum(1 for a, p in chg if (a, p) == ("10.190.173.170", "8030"))
    assert 2 < n8030 < len(chg)
    out.append(q(H, 6, "count", "zh", "10.190.173.170 那台 8030 端口 报 Address change 的一共多少次",
                 num(n8030)))
    out.append(q(H, 7, "min", "zh", "Address change 的那些警告里 10.190.173.170 后面跟的端口 最小是多少",
                 num(min(int(p) for a, p in chg if a == "10.190.173.170"))))
    out.append(q(H, 8, "max", "en",
                 "Within 18:07, what's the most seconds any 'Failed to renew lease' warning reported?",
                 num(max(ints(recs, lease, 10, at_min("07"))))))
    out.append(q(H, 9, "count", "en",
                 "How many times did the app master open a proxy to the node manager on MSRA-SA-41?",
                 num(count(recs, lambda m: re.match(r"Opening proxy : MSRA-SA-41\.", m.group(10))))))
    out.append(q(H, 10, "min", "zh", "18点10分那一分钟 renew lease 失败的秒数 最小是多少",
                 num(min(ints(recs, lease, 10, at_min("10"))))))
    out.append(q(H, 11, "sum", "zh", "18:06 那一分钟里 Failed to renew lease 的秒数全加起来 是多少",
                 num(sum(ints(recs, lease, 10, at_min("06"))))))
    err = lambda m: m.group(7) == "ERROR" and m.group(10) == "ERROR IN CONTACTING RM."  # noqa: E731
    out.append(q(H, 12, "count", "en", "How many ERROR IN CONTACTING RM at 18:08?",
                 num(count(recs, lambda m: err(m) and at_min("08")(m)))))
    out.append(q(H, 13, "max", "en", "What max ContAlloc in After Scheduling?",
                 num(max(ints(recs, r"^After Scheduling: .* ContAlloc:(\d+) ", 10)))))
    return out


# --------------------------------------------------------------------------
# Linux
# --------------------------------------------------------------------------

def linux() -> list[dict]:
    L = "Linux"
    recs = parse(read(L), r"^(\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\S+) +"
                          r"(?:([\w.()-]+)\[(\d+)\]|([^\s:\[]+)):? ?(.*)$")
    pid = lambda m: int(m.group(8))  # noqa: E731
    day = lambda mo, d: (lambda m: (m.group(1), int(m.group(2))) == (mo, d))  # noqa: E731
    fail_rx = re.compile(r"^authentication failure; .* rhost=(\S*)(?:\s+user=(\S+))?\s*$")
    fail = lambda m: m.group(7) == "sshd(pam_unix)" and fail_rx.match(m.group(10))  # noqa: E731
    rhost = lambda m: fail_rx.match(m.group(10)).group(1)  # noqa: E731
    user = lambda m: fail_rx.match(m.group(10)).group(2)  # noqa: E731
    ftp_rx = re.compile(r"^connection from (\d+(?:\.\d+){3}) \(([^)]*)\) at ")
    ftp = lambda m: m.group(7) == "ftpd" and ftp_rx.match(m.group(10))  # noqa: E731
    ftp_ip = lambda m: ftp_rx.match(m.group(10)).group(1)  # noqa: E731
    out = []

    ip1 = "150.183.249.110"
    root1 = lambda m: fail(m) and rhost(m) == ip1 and user(m) == "root"  # noqa: E731
    out.append(q(L, 1, "count", "zh", f"从 {ip1} 那台连过来 root 登录失败的 一共多少次",
                 num(count(recs, root1))))
    from1 = [pid(m) for m in recs if fail(m) and rhost(m) == ip1]
    assert from1
    out.append(q(L, 2, "max", "en",
                 f"Among the ssh authentication failures from {ip1}, what was the largest pid?",
                 num(narrows(max(from1), max(pid(m) for m in recs if fail(m))))))
    out.append(q(L, 3, "count", "en",
                 "How many FTP connections came from machines whose reverse DNS name ends in .uk?",
                 num(count(recs, lambda m: ftp(m) and ftp_rx.match(m.group(10)).group(2).endswith(".uk")))))
    su = lambda u, what: (lambda m: m.group(7) == "su(pam_unix)"  # noqa: E731
                          and m.group(10).startswith(f"session {what} for user {u} "))
    out.append(q(L, 4, "count", "zh", "su 切到 news 用户 开了几次 session",
                 num(count(recs, su("news", "opened")))))
    ip5 = "211.72.151.162"
    p5 = [pid(m) for m in recs if ftp(m) and ftp_ip(m) == ip5]
    assert len(p5) > 2
    ftp_pids = [pid(m) for m in recs if ftp(m)]
    out.append(q(L, 5, "min", "zh", f"{ip5} 连 ftp 的那些 ftpd 进程号 最小的是多少",
                 num(narrows(min(p5), min(ftp_pids)))))
    hb = re.compile(r"^[\w-]+(?: cache)? hash table entries: \d+ \(order:? \d+[:,] (\d+) bytes\)$")
    hbytes = [int(h.group(1)) for m in recs if m.group(9) == "kernel" for h in [hb.match(m.group(10))] if h]
    assert len(hbytes) > 2
    out.append(q(L, 6, "sum", "en",
                 "At boot the kernel printed several hash tables with their size in bytes. "
                 "How many bytes do they add up to?", num(sum(hbytes))))
    n218 = count(recs, lambda m: fail(m) and rhost(m).startswith("218."))
    out.append(q(L, 7, "count", "en",
                 "How many ssh authentication failures came from addresses starting with 218.?",
                 num(n218)))
    cyrus = [pid(m) for m in recs if su("cyrus", "opened")(m) or su("cyrus", "closed")(m)]
    every_su = [pid(m) for m in recs if m.group(7) == "su(pam_unix)"]
    assert len(cyrus) > 2
    out.append(q(L, 8, "max", "zh", "su 切 cyrus 用户的那些行 pid 最大是多少",
                 num(narrows(max(cyrus), max(every_su)))))
    zones = ints(recs, r"^\s*\w+ zone: (\d+) pages, LIFO batch:\d+$", 10, lambda m: m.group(9) == "kernel")
    assert len(zones) == 3
    out.append(q(L, 9, "sum", "zh", "开机时内核打的那几个 zone 的 pages 加一起是多少", num(sum(zones))))
    guest = lambda m: fail(m) and user(m) == "guest"  # noqa: E731
    out.append(q(L, 10, "count", "en", "How many authentication failure for user guest?",
                 num(count(recs, guest))))
    ip11 = "207.30.238.8"
    p11 = [pid(m) for m in recs if ftp(m) and ftp_ip(m) == ip11]
    assert len(p11) > 2
    out.append(q(L, 11, "min", "en", f"What min pid of ftpd connection from {ip11}?",
                 num(narrows(min(p11), min(ftp_pids)))))
    jul9 = lambda m: ftp(m) and day("Jul", 9)(m)  # noqa: E731
    out.append(q(L, 12, "count", "zh", "7月9号 211 开头的地址 连 ftp 一共多少次",
                 num(count(recs, lambda m: jul9(m) and ftp_ip(m).startswith("211.")))))
    p13 = [pid(m) for m in recs if jul9(m)]
    assert len(p13) > 2
    out.append(q(L, 13, "max", "zh", "7月9号那天 ftp 连进来的 ftpd 进程号 最大的是多少",
                 num(narrows(max(p13), max(ftp_pids)))))
    return out


def build() -> list[dict]:
    return apache() + hadoop() + linux()


part = blind_cli.part      # even numbers tune, odd held


def validate(qs: list[dict]) -> None:
    blind_cli.check_questions(qs, SYSTEMS, KINDS)
    langs = Counter(x["lang"] for x in qs)
    assert langs["en"] == langs["zh"] == len(qs) // 2, langs
    assert sum(1 for x in qs if x["kind"] == "avg") <= 4
    assert {x["system"] for x in qs} == set(SYSTEMS)
    for p in ("tune", "held"):
        sub = [x for x in qs if part(x) == p]
        assert {x["kind"] for x in sub} == set(KINDS), p
        for s in SYSTEMS:
            assert {x["lang"] for x in sub if x["system"] == s} == {"en", "zh"}, (p, s)


def main(argv=None) -> int:
    return blind_cli.main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
