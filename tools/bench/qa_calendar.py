#!/usr/bin/env python3
"""Calendar and most-common-value questions (Apache, Hadoop, Linux, OpenSSH, Spark loghub 2k samples).

Written by a helper session that had NOT read the appliance's code, tests,
docs or any earlier question files (only the output format of qa_blind3.py):
the wording is its own, chosen the way a line operator / maintenance engineer
would ask after looking at the raw logs.

Covers five systems, 32 questions in all, half English and half colloquial
Chinese as typed on a tablet, of two kinds:
  calendar  which day / hour / minute / second had the most lines (of all
            lines, of error lines, of one kind of message), and how many lines
            fell on a given day or in a given hour;
  top       the most common value written in the lines (error state number,
            scoreboard slot, pid, port, disconnect code, handler number, rdd
            id, result size, ...) or the most frequent name / id / address.

Every gold is computed by this script from the raw log files with regular
expressions; nothing is typed in by hand.  Each uniqueness assumption (a top-1
has no tie with the runner-up, a given day / hour exists in the data) is
asserted, so the script fails loudly if the data differ from what the
questions presume.  Accepted spellings of a date, hour, minute or second are
generated, and any spelling that is also a substring of a spelling of some
other date / time is dropped, so that a wrong answer cannot pass by accident
("6:00" would match "16:00").  Dates of logs without a year in the line are
accepted as month + day in any common spelling, no year required.

Split (fixed 2026-12-07 before any run): a question whose number is even is tuned on ("tune"), an odd one is
held aside and run only at the end of a session ("held"); `--part` picks one.

Usage: python tools/bench/qa_calendar.py [--data DIR] [--part tune|held|all] [--out FILE]
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.bench import blind_cli  # noqa: E402  (run as a script too)

SYSTEMS = ("Apache", "Hadoop", "Linux", "OpenSSH", "Spark")
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
          "Nov", "Dec"]
MONTHS_FULL = ["January", "February", "March", "April", "May", "June", "July",
               "August", "September", "October", "November", "December"]


DATA = blind_cli.default_data()


def read(system: str) -> list[str]:
    return blind_cli.read_2k(DATA / system / f"{system}_2k.log")


def parse(lines: list[str], rx: str) -> list[re.Match]:
    return blind_cli.parse(lines, rx)


def top1(counter: Counter):
    ranked = counter.most_common(2)
    assert len(ranked) == 2, ("need a runner-up", ranked)
    (k1, c1), (_k2, c2) = ranked
    assert c1 > c2, ("tie for top", counter.most_common(3))
    return k1


# --------------------------------------------------------------------------
# check dicts (same keys as qa_blind3.py: number / any_of / all_of)
# --------------------------------------------------------------------------

def num(v):
    return {"number": v}


def anyof(*spans):
    return {"any_of": list(dict.fromkeys(str(s) for s in spans))}


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.lower()).strip()


def safe(spellings: list[str], others: list[str]) -> dict:
    """any_of over the spellings that are not contained in a spelling of another value."""
    oth = [_norm(o) for o in others] + [_norm(o).replace(" ", "") for o in others]
    keep = [s for s in dict.fromkeys(spellings)
            if not any(_norm(s) in o or _norm(s).replace(" ", "") in o for o in oth)]
    assert keep, ("no safe spelling", spellings)
    return anyof(*keep)


def date_spellings(month: int, day: int, year: int | None = None) -> list[str]:
    mo, mf = MONTHS[month - 1], MONTHS_FULL[month - 1]
    out = [f"{mo} {day:02d}", f"{mo} {day}", f"{mf} {day}", f"{day} {mo}",
           f"{day:02d} {mo}", f"{day} {mf}", f"{month:02d}-{day:02d}",
           f"{month}-{day}", f"{month:02d}/{day:02d}", f"{month}/{day}",
           f"{month}月{day}", f"{month:02d}月{day:02d}", f"{month}月{day:02d}"]
    if year is not None:
        out.append(f"{year}-{month:02d}-{day:02d}")
    return out


def date_check(month: int, day: int, year: int | None = None) -> dict:
    others = []
    for m in range(1, 13):
        for d in range(1, 32):
            if (m, d) != (month, day):
                others += date_spellings(m, d, year)
    return safe(date_spellings(month, day, year), others)


def _h12(h: int) -> tuple[int, str]:
    return (h % 12 or 12), ("am" if h < 12 else "pm")


def hour_spellings(h: int) -> list[str]:
    h12, ap = _h12(h)
    zh = [p for p, lo, hi in (("凌晨", 0, 5), ("早上", 5, 9), ("上午", 6, 11),
                              ("中午", 11, 13), ("下午", 12, 18), ("晚上", 18, 23),
                              ("夜里", 21, 23)) if lo <= h <= hi]
    out = [f"{h:02d}:00", f"{h}:00", f"{h:02d}点", f"{h}点", f"{h}时",
           f"{h12} {ap}", f"{h12}{ap}", f"{h12} {ap[0]}.m.", f"{h12} o'clock"]
    out += [f"{p}{h12}点" for p in zh]
    return out


def hour_check(h: int) -> dict:
    others = [s for o in range(24) if o != h for s in hour_spellings(o)]
    return safe(hour_spellings(h), others)


def minute_spellings(h: int, m: int) -> list[str]:
    h12, ap = _h12(h)
    return [f"{h:02d}:{m:02d}", f"{h:02d}点{m:02d}", f"{h}点{m}分",
            f"{h12}:{m:02d} {ap}", f"{h12}:{m:02d}{ap}"]


def minute_check(h: int, m: int) -> dict:
    others = [s for o in range(24 * 60) if o != h * 60 + m
              for s in minute_spellings(*divmod(o, 60))]
    return safe(minute_spellings(h, m), others)


def second_spellings(h: int, m: int, s: int) -> list[str]:
    h12, ap = _h12(h)
    return [f"{h:02d}:{m:02d}:{s:02d}", f"{h12}:{m:02d}:{s:02d} {ap}",
            f"{h}点{m}分{s}秒", f"{h:02d}点{m:02d}分{s:02d}秒"]


def second_check(h: int, m: int, s: int) -> dict:
    gold = second_spellings(h, m, s)
    target = h * 3600 + m * 60 + s
    others = [sp for o in range(86400) if o != target
              for sp in second_spellings(o // 3600, o // 60 % 60, o % 60)]
    return safe(gold, others)


def q(system, n, kind, lang, text, check):
    return blind_cli.question("cal", system, n, kind, lang, text, check)


# --------------------------------------------------------------------------
# Apache
# --------------------------------------------------------------------------

def apache() -> list[dict]:
    A = "Apache"
    recs = parse(read(A), r"^\[\w{3} (\w{3}) (\d{2}) (\d{2}):(\d{2}):\d{2} (\d{4})\] "
                          r"\[(\w+)\] (.*)$")
    day = lambda m: (MONTHS.index(m.group(1)) + 1, int(m.group(2)))  # noqa: E731
    years = {m.group(5) for m in recs}
    assert len(years) == 1, years
    year = int(years.pop())
    out = []

    # 1 busiest hour on Dec 5
    dec5 = [m for m in recs if day(m) == (12, 5)]
    assert dec5
    h = top1(Counter(int(m.group(3)) for m in dec5))
    out.append(q(A, 1, "calendar", "en",
                 "apache error log: on Dec 5 which hour of the day was the busiest, "
                 "i.e. had the most log lines?", hour_check(h)))

    # 2 day with the most 'Directory index forbidden' lines
    d = top1(Counter(day(m) for m in recs
                     if m.group(7).find("Directory index forbidden") >= 0))
    out.append(q(A, 2, "calendar", "zh",
                 "apache那边 Directory index forbidden 这种被拒的报错 哪一天最多啊",
                 date_check(*d, year)))

    # 3 most frequent mod_jk error state number
    st = top1(Counter(int(x) for m in recs
                      for x in re.findall(r"in error state (\d+)", m.group(7))))
    out.append(q(A, 3, "top", "en",
                 "mod_jk keeps saying 'workerEnv in error state N' - which state "
                 "number comes up most often?", num(st)))

    # 4 busiest hour of the day over the whole log
    h = top1(Counter(int(m.group(3)) for m in recs))
    out.append(q(A, 4, "calendar", "zh",
                 "apache日志整体看 一天里哪个钟点日志最多 两天加一起算",
                 hour_check(h)))

    # 5 number of lines on Dec 5
    out.append(q(A, 5, "calendar", "en",
                 "how many lines did apache write on Monday Dec 5 2005?",
                 num(len(dec5))))

    # 6 most frequent scoreboard slot on Dec 5
    slot5 = top1(Counter(int(x) for m in dec5
                         for x in re.findall(r"scoreboard slot (\d+)", m.group(7))))
    out.append(q(A, 6, "top", "zh",
                 "12月5号那天 jk2_init找到child的那些行 scoreboard slot 哪个号出现得最多",
                 num(slot5)))

    # 7 most frequent scoreboard slot on Dec 4
    dec4 = [m for m in recs if day(m) == (12, 4)]
    assert dec4
    slot4 = top1(Counter(int(x) for m in dec4
                         for x in re.findall(r"scoreboard slot (\d+)", m.group(7))))
    out.append(q(A, 7, "top", "en",
                 "On Sun Dec 4, which scoreboard slot number shows up the most in the "
                 "'Found child ... in scoreboard slot' messages?", num(slot4)))
    return out


# --------------------------------------------------------------------------
# Linux
# --------------------------------------------------------------------------

def linux() -> list[dict]:
    L = "Linux"
    recs = parse(read(L), r"^(\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):\d{2} (\S+) +(.*)$")
    day = lambda m: (MONTHS.index(m.group(1)) + 1, int(m.group(2)))  # noqa: E731
    out = []

    # 1 busiest day
    d = top1(Counter(day(m) for m in recs))
    out.append(q(L, 1, "calendar", "zh",
                 "这台linux机器的系统日志 哪一天记的行数最多", date_check(*d)))

    # 2 day with the most authentication failures
    auth = [m for m in recs if "authentication failure" in m.group(6)]
    d = top1(Counter(day(m) for m in auth))
    out.append(q(L, 2, "calendar", "en",
                 "On which day did the box log the most 'authentication failure' "
                 "lines?", date_check(*d)))

    # 3 busiest hour on Jul 17
    jul17 = [m for m in recs if day(m) == (7, 17)]
    assert jul17
    h = top1(Counter(int(m.group(3)) for m in jul17))
    out.append(q(L, 3, "calendar", "zh",
                 "7月17号那天 几点钟日志最多 哪个小时最忙", hour_check(h)))

    # 4 most frequent rhost among authentication failures
    rh = top1(Counter(x for m in auth for x in re.findall(r"rhost=(\S+)", m.group(6))))
    others = {x for m in auth for x in re.findall(r"rhost=(\S+)", m.group(6))} - {rh}
    out.append(q(L, 4, "top", "en",
                 "which remote host (rhost) is behind the most authentication "
                 "failures?", safe([rh], sorted(others))))

    # 5 pid seen most often
    pids = Counter(x for m in recs for x in re.findall(r"^(?:-- )?\S+?\[(\d+)\]:", m.group(6)))
    pid = top1(pids)
    out.append(q(L, 5, "top", "zh",
                 "linux日志里 方括号里的进程号pid 哪个出现次数最多",
                 safe([pid], sorted(set(pids) - {pid}))))

    # 6 busiest hour of the day across the whole log
    h = top1(Counter(int(m.group(3)) for m in recs))
    out.append(q(L, 6, "calendar", "en",
                 "looking at the whole linux syslog, what hour of the day is the "
                 "busiest (most lines, all days added up)?", hour_check(h)))

    # 7 process that wrote the most lines
    procs = Counter(re.match(r"(?:-- )?([^\s\[:]+)", m.group(6)).group(1) for m in recs)
    p = top1(procs)
    out.append(q(L, 7, "top", "zh",
                 "哪个程序(进程名)往系统日志里写的最多", safe([p], sorted(set(procs) - {p}))))
    return out


# --------------------------------------------------------------------------
# OpenSSH
# --------------------------------------------------------------------------

def openssh() -> list[dict]:
    O = "OpenSSH"
    recs = parse(read(O), r"^(\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):\d{2} (\S+) "
                          r"sshd\[(\d+)\]: (.*)$")
    dates = {(m.group(1), m.group(2)) for m in recs}
    assert len(dates) == 1, dates
    out = []

    # 1 busiest hour
    h = top1(Counter(int(m.group(3)) for m in recs))
    out.append(q(O, 1, "calendar", "en",
                 "ssh server log: which hour had the most lines?", hour_check(h)))

    # 2 hour with the most failed passwords
    h = top1(Counter(int(m.group(3)) for m in recs
                     if m.group(7).startswith("Failed password")))
    out.append(q(O, 2, "calendar", "zh",
                 "ssh密码输错 Failed password 哪个小时最多", hour_check(h)))

    # 3 source IP seen most
    ips = Counter(x for m in recs
                  for x in re.findall(r"\b(\d{1,3}(?:\.\d{1,3}){3})\b", m.group(7)))
    ip = top1(ips)
    out.append(q(O, 3, "top", "en",
                 "Which IP address turns up the most in the sshd log?",
                 safe([ip], sorted(set(ips) - {ip}))))

    # 4 most frequent disconnect reason code
    code = top1(Counter(int(x) for m in recs
                        for x in re.findall(r"Received disconnect from \S+: (\d+):",
                                            m.group(7))))
    out.append(q(O, 4, "top", "zh",
                 "Received disconnect 后面那个断开代码 哪个数最常见", num(code)))

    # 5 lines in the 10 o'clock hour
    n10 = sum(1 for m in recs if m.group(3) == "10")
    assert n10
    out.append(q(O, 5, "calendar", "en",
                 "how many lines did sshd write between 10:00 and 10:59 on Dec 10?",
                 num(n10)))

    # 6 most frequent client port
    port = top1(Counter(int(x) for m in recs
                        for x in re.findall(r" port (\d+)", m.group(7))))
    out.append(q(O, 6, "top", "zh",
                 "ssh日志里 from xxx port 后面的端口号 哪个出现最多", num(port)))
    return out


# --------------------------------------------------------------------------
# Hadoop
# --------------------------------------------------------------------------

def hadoop() -> list[dict]:
    H = "Hadoop"
    recs = parse(read(H), r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):\d{2},\d+ "
                          r"(\w+) \[(.*?)\] (\S+): (.*)$")
    minute = lambda m: (int(m.group(4)), int(m.group(5)))  # noqa: E731
    out = []

    # 1 busiest minute
    mi = top1(Counter(minute(m) for m in recs))
    out.append(q(H, 1, "calendar", "en",
                 "in the hadoop job log, which minute had the most lines?",
                 minute_check(*mi)))

    # 2 minute with the most ERROR lines
    mi = top1(Counter(minute(m) for m in recs if m.group(6) == "ERROR"))
    out.append(q(H, 2, "calendar", "zh",
                 "hadoop那个作业日志 ERROR级别的行 哪一分钟最多", minute_check(*mi)))

    # 3 port seen most
    port = top1(Counter(int(x) for m in recs
                        for x in re.findall(r":(\d{2,5})\b", m.group(7) + " " + m.group(9))))
    out.append(q(H, 3, "top", "en",
                 "What port number appears most often in the hadoop log?", num(port)))

    # 4 busiest IPC Server handler number
    hd = top1(Counter(int(x) for m in recs
                      for x in re.findall(r"^IPC Server handler (\d+) on", m.group(7))))
    out.append(q(H, 4, "top", "zh",
                 "IPC Server handler 几号 出现的次数最多", num(hd)))

    # 5 ERROR lines on Oct 18 2015
    oct18 = [m for m in recs if (m.group(1), m.group(2), m.group(3)) == ("2015", "10", "18")]
    assert oct18
    n_err = sum(1 for m in oct18 if m.group(6) == "ERROR")
    out.append(q(H, 5, "calendar", "en",
                 "how many ERROR-level lines were logged on 18 Oct 2015?", num(n_err)))

    # 6 task attempt mentioned most
    atts = Counter(x for m in recs for x in re.findall(r"(attempt_\d+_\d+_[mr]_\d+_\d+)",
                                                       m.group(9)))
    at = top1(atts)
    short = re.search(r"_([mr]_\d+_\d+)$", at).group(1)
    out.append(q(H, 6, "top", "zh",
                 "哪个task attempt在日志里被提到的次数最多 给我attempt号",
                 safe([at, short, short[2:]], sorted(set(atts) - {at}))))
    return out


# --------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------

def spark() -> list[dict]:
    S = "Spark"
    recs = parse(read(S), r"^(\d{2})/(\d{2})/(\d{2}) (\d{2}):(\d{2}):(\d{2}) "
                          r"(\w+) (\S+): (.*)$")
    out = []

    # 1 busiest minute
    mi = top1(Counter((int(m.group(4)), int(m.group(5))) for m in recs))
    out.append(q(S, 1, "calendar", "en",
                 "spark executor log: which minute was the busiest?",
                 minute_check(*mi)))

    # 2 rdd id mentioned most
    rdd = top1(Counter(int(x) for m in recs
                       for x in re.findall(r"\brdd_(\d+)_\d+", m.group(9))))
    out.append(q(S, 2, "top", "zh",
                 "spark日志里 rdd_几_几 那种 哪个rdd编号出现最多",
                 anyof(f"rdd_{rdd}", f"rdd {rdd}", f"rdd{rdd}", f"RDD {rdd}")))

    # 3 most common result size of finished tasks
    size = top1(Counter(int(x) for m in recs
                        for x in re.findall(r"\. (\d+) bytes result sent", m.group(9))))
    out.append(q(S, 3, "top", "en",
                 "finished tasks report 'N bytes result sent to driver' - what's the "
                 "most common N?", num(size)))

    # 4 busiest second
    se = top1(Counter((int(m.group(4)), int(m.group(5)), int(m.group(6))) for m in recs))
    out.append(q(S, 4, "calendar", "zh",
                 "spark这段日志 哪一秒钟打的行最多 精确到秒", second_check(*se)))

    # 5 most common PythonRunner total time
    tot = top1(Counter(int(x) for m in recs
                       for x in re.findall(r"Times: total = (\d+),", m.group(9))))
    out.append(q(S, 5, "top", "en",
                 "PythonRunner prints 'Times: total = ...' - which total value shows "
                 "up most often?", num(tot)))

    # 6 logger class with the most lines
    comps = Counter(m.group(8) for m in recs)
    c = top1(comps)
    out.append(q(S, 6, "top", "zh",
                 "spark日志 哪个类(组件)打的日志最多", safe([c], sorted(set(comps) - {c}))))
    return out


def build() -> list[dict]:
    return apache() + hadoop() + linux() + openssh() + spark()


part = blind_cli.part      # even numbers tune, odd held


def validate(qs: list[dict]) -> None:
    blind_cli.check_questions(qs, SYSTEMS, ("calendar", "top"))
    langs = Counter(x["lang"] for x in qs)
    kinds = Counter(x["kind"] for x in qs)
    assert langs["en"] == langs["zh"] == len(qs) // 2, langs
    assert kinds["calendar"] == kinds["top"] == len(qs) // 2, kinds
    assert {x["system"] for x in qs} == set(SYSTEMS)
    for p in ("tune", "held"):
        assert {x["kind"] for x in qs if part(x) == p} == {"calendar", "top"}, p


def main(argv=None) -> int:
    return blind_cli.main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
