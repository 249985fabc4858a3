#!/usr/bin/env python3
"""Blind evaluation set #2 for log question answering (Hadoop, OpenSSH, Spark).

Written by a helper session that had NOT read the appliance's code (nor its
tests or existing question files); the wording of every question is its own.

Covers 48 questions, 16 per system, half English (terse / chatty / informal)
and half colloquial Chinese (maintenance-engineer style, English identifiers
mixed in).  Kinds per system: lookup (read one specific line), negative (the
thing never happened; gold is a negative), count (under a condition: user,
address, stage, level, component, clock-time span), agg (sum / min / max /
average of a number in the lines), time (first / last occurrence), top (most
frequent X) and multi (two asks in one sentence, all_of gold).

Every gold is computed by this script from the raw <System>_2k.log (the exact
file the appliance ingests); where it helps, the value is cross-checked
against <System>_2k.log_structured.csv and every uniqueness assumption
(single match, no ties, no lines on a time boundary) is asserted.

Usage:
    .venv/bin/python tools/bench/qa_blind2.py [--data DIR] [--out FILE]
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import re
import sys
from pathlib import Path

DATA = Path(os.environ.get("LOGHUB_DIR", Path(__file__).resolve().parents[3] / "shared" / "data" / "loghub"))
NEG = ["not", "no ", "none", "never", "n't", "没有", "不", "否"]


def raw(system: str) -> list[str]:
    p = DATA / system / f"{system}_2k.log"
    return p.read_text(encoding="utf-8", errors="replace").splitlines()


def structured(system: str) -> list[dict]:
    p = DATA / system / f"{system}_2k.log_structured.csv"
    with open(p, encoding="utf-8", errors="replace", newline="") as f:
        return list(csv.DictReader(f))


def aligned(lines: list[str], rows: list[dict]) -> None:
    """Raw file and structured CSV describe the same lines, in order."""
    assert len(lines) == len(rows)
    for l, r in zip(lines, rows):
        assert l.rstrip().endswith(r["Content"].strip()), (l[:80], r["Content"][:80])


def only(values, what: str):
    """The single distinct value in `values`; fail loudly if 0 or >1."""
    s = sorted(set(values))
    assert len(s) == 1, f"{what}: expected one value, got {s[:5]}"
    return s[0]


def top1(counter: collections.Counter, what: str):
    """Most common key, asserting it is not tied."""
    (k1, n1), (_, n2) = counter.most_common(2)
    assert n1 > n2, f"{what}: tie at {n1}"
    return k1


def grab(rx: str, line: str, group=1) -> str:
    m = re.search(rx, line)
    assert m, f"no match for {rx!r} in {line[:120]!r}"
    return m.group(group)


# ------------------------------------------------------------------ OpenSSH
def openssh() -> list[tuple]:
    L = raw("OpenSSH")
    csvr = structured("OpenSSH")
    aligned(L, csvr)
    clock = lambda l: l[7:15]          # "Dec 10 06:55:46 ..." -> 06:55:46
    stamp = lambda l: l[:15]
    pid = lambda l: grab(r"sshd\[(\d+)\]", l)
    qs = []

    # multi: the only successful login
    acc = [l for l in L if "Accepted password for" in l]
    assert len(acc) == 1 and not [l for l in L if "Accepted " in l and l not in acc]
    user = grab(r"Accepted password for (\S+) from", acc[0])
    ip = grab(r"from (\S+) port", acc[0])
    port = int(grab(r"port (\d+)", acc[0]))
    qs.append(("multi", "en", "Did anybody actually manage to log in? If so, as which user and from what IP?",
               {"all_of": [user, ip]}))
    qs.append(("lookup", "zh", f"{user} 登录成功那次，对方的 source port 是多少？", {"number": port}))

    # lookup: hostname claimed by 173.234.31.186 in the reverse-mapping warning
    rev = [l for l in L if "reverse mapping checking" in l and "[173.234.31.186]" in l]
    host = only([grab(r"getaddrinfo for (\S+) \[", l) for l in rev], "rev host")
    qs.append(("lookup", "en", "173.234.31.186 failed the reverse DNS check - what hostname was it "
               "claiming to be?", {"any_of": [host]}))

    # lookup across lines: the fatal write failure -> its connection's peer IP
    fat = [l for l in L if "fatal: Write failed" in l]
    assert len(fat) == 1
    fpid = pid(fat[0])
    fip = only([grab(r"(?:from|rhost=)\s*(\d+\.\d+\.\d+\.\d+)", l) for l in L
                if pid(l) == fpid and re.search(r"(from|rhost=)\s*\d", l)], "fatal ip")
    qs.append(("lookup", "zh", "那条 'Write failed: Connection reset by peer' 的 fatal，是哪个 IP 的连接？",
               {"any_of": [fip]}))

    # negatives
    assert not [l for l in L if re.search(r"Accepted \S+ for root ", l)]
    assert [l for l in L if "Failed password for root" in l]
    qs.append(("negative", "zh", "root 有没有哪一次是真的登录成功了的？", {"any_of": NEG}))
    kicked = {grab(r"failures for (\S+) \[", l) for l in L if "Too many authentication failures" in l}
    assert "oracle" not in kicked and [l for l in L if "invalid user oracle" in l]
    qs.append(("negative", "en", "was the oracle account ever kicked off for too many authentication "
               "failures?", {"any_of": NEG}))

    # counts
    fp_rx = re.compile(r"Failed password for (?:invalid user )?(.*?) from (\S+) port (\d+)")
    fp = [(l, fp_rx.search(l)) for l in L if "Failed password" in l and "message repeated" not in l]
    assert all(m for _, m in fp)
    ip1 = "183.62.140.253"
    assert not [l for l in L if "message repeated" in l and ip1 in l]
    n_root = sum(1 for _, m in fp if m.group(1) == "root" and m.group(2) == ip1)
    assert n_root == sum(1 for r in csvr if r["Content"].startswith(f"Failed password for root from {ip1} "))
    qs.append(("count", "en", f"how many failed root password attempts came from {ip1}?",
               {"number": n_root}))
    assert not [l for l in L if clock(l) in ("10:00:00", "10:30:00")]
    n_span = sum(1 for l, _ in fp if "10:00:00" <= clock(l) < "10:30:00")
    assert not [l for l in L if "message repeated" in l and "10:00:00" <= clock(l) < "10:30:00"]
    qs.append(("count", "zh", "10:00 到 10:30 之间，Failed password 一共出现了几次？", {"number": n_span}))
    n_brk = sum(1 for l in L if "POSSIBLE BREAK-IN ATTEMPT" in l)
    assert n_brk == sum(1 for r in csvr if "POSSIBLE BREAK-IN ATTEMPT" in r["EventTemplate"])
    qs.append(("count", "en", "How many times did sshd warn about a POSSIBLE BREAK-IN ATTEMPT?",
               {"number": n_brk}))

    # aggregates over ports / PAM counters
    ip2 = "103.99.0.122"
    hi = max(int(m.group(3)) for _, m in fp if m.group(2) == ip2)
    qs.append(("agg", "en", f"Across the failed password lines from {ip2}, what's the highest source "
               "port it used?", {"number": hi}))
    ip3 = "187.141.143.180"
    lo = min(int(m.group(3)) for _, m in fp if m.group(2) == ip3)
    qs.append(("agg", "zh", f"{ip3} 那一堆 Failed password 里面，最小的 port 是多少？", {"number": lo}))
    ip4 = "185.190.58.151"
    pam = [int(grab(r"PAM (\d+) more authentication failure", l)) for l in L
           if "more authentication failure" in l and f"rhost={ip4}" in l]
    assert len(pam) >= 2
    qs.append(("agg", "en", f"Add up the 'N more authentication failures' numbers PAM logged for {ip4} "
               "- what's the total?", {"number": sum(pam)}))

    # times
    dn = [l for l in L if "Did not receive identification string" in l]
    qs.append(("time", "zh", "'Did not receive identification string' 最早一次是几点出现的？",
               {"any_of": [stamp(dn[0]), clock(dn[0])]}))
    lr = [l for l, m in fp if m.group(1) == "root" and "invalid user" not in l]
    qs.append(("time", "en", "When was the very last failed password for root logged?",
               {"any_of": [stamp(lr[-1]), clock(lr[-1])]}))

    # top
    best = top1(collections.Counter(m.group(2) for _, m in fp), "fp ip")
    qs.append(("top", "zh", "哪个 IP 的 Failed password 最多？", {"any_of": [best]}))

    # multi: too-many-failures disconnects, count + users
    tm = [l for l in L if "Disconnecting: Too many authentication failures" in l]
    users = sorted({grab(r"failures for (\S+) \[", l) for l in tm})
    qs.append(("multi", "zh", "因为 Too many authentication failures 被 Disconnecting 的一共几次？分别是哪些用户？",
               {"all_of": [str(len(tm))] + users}))
    return qs


# ------------------------------------------------------------------- Hadoop
def hadoop() -> list[tuple]:
    L = raw("Hadoop")
    csvr = structured("Hadoop")
    aligned(L, csvr)
    stamp = lambda l: l[:23]                 # 2015-10-18 18:01:47,978
    clock = lambda l: l[11:19]
    level = lambda l: l.split()[2]
    qs = []
    A = "attempt_1445144423722_0020_"

    # lookup: why did m_000002_0 fail
    diag = [l for l in L if f"Diagnostics report from {A}m_000002_0" in l]
    reason = only([grab(r"Error: (java\.net\.\w+)", l) for l in diag], "diag")
    assert reason == "java.net.NoRouteToHostException"
    qs.append(("lookup", "en", f"Why did {A}m_000002_0 die?",
               {"any_of": ["NoRouteToHost", "No Route to Host", "no route to host"]}))

    # negatives
    assert not [l for l in L if re.search(r"Job Transitioned from \S+ to SUCCEEDED", l)]
    assert [l for l in L if "Job Transitioned from SETUP to RUNNING" in l]
    qs.append(("negative", "en", "did the job ever actually reach SUCCEEDED?", {"any_of": NEG}))
    assert [l for l in L if f"{A}r_000000_0 TaskAttempt Transitioned from NEW to UNASSIGNED" in l]
    assert not [l for l in L if f"to {A}r_000000" in l or f"Launching {A}r_" in l]
    qs.append(("negative", "zh", "那个 reduce task 最后有没有拿到 container 跑起来？", {"any_of": NEG}))

    # counts
    n_err = sum(1 for l in L if level(l) == "ERROR")
    assert n_err == sum(1 for r in csvr if r["Level"] == "ERROR")
    qs.append(("count", "en", "How many ERROR-level lines did the AM write?", {"number": n_err}))
    # both ends written to the second and inclusive; 18:04:00 lines fall outside
    n_prog = sum(1 for l in L if "Progress of TaskAttempt" in l and "18:03:00" <= clock(l) <= "18:03:59")
    qs.append(("count", "zh", "18:03:00 到 18:03:59 这一分钟里，TaskAttempt 的 progress 一共报了几次？",
               {"number": n_prog}))
    n_lease = sum(1 for l in L if "LeaseRenewer: Failed to renew lease" in l)
    assert n_lease == sum(1 for r in csvr if r["Component"].endswith("LeaseRenewer")
                          and r["Content"].startswith("Failed to renew lease"))
    qs.append(("count", "zh", "LeaseRenewer 报 Failed to renew lease 一共报了多少条？", {"number": n_lease}))

    # aggregates
    secs = [int(grab(r"for (\d+) seconds", l)) for l in L if "Failed to renew lease" in l]
    qs.append(("agg", "en", "At its worst, for how many seconds had the lease renewal been failing?",
               {"number": max(secs)}))
    alloc = [int(grab(r"Got allocated containers (\d+)", l)) for l in L if "Got allocated containers" in l]
    qs.append(("agg", "en", "Over the whole run, how many containers did the RM allocate to this job in total?",
               {"number": sum(alloc)}))
    prog = collections.defaultdict(list)
    for l in L:
        m = re.search(r"Progress of TaskAttempt (attempt_\S+) is : ([\d.]+)", l)
        if m:
            prog[m.group(1)].append(m.group(2))
    done = {grab(r"Task succeeded with attempt (\S+)", l) for l in L if "Task succeeded with attempt" in l}
    assert len(done) == 1
    best = {a: max(v, key=float) for a, v in prog.items() if a not in done}
    ba = top1(collections.Counter({a: float(v) for a, v in best.items()}), "progress")
    qs.append(("agg", "zh", "除了跑完的那个，剩下哪个 map attempt 的 progress 最高？最高到多少？",
               {"all_of": [ba.split("_0020_")[1], best[ba]]}))

    # times
    first_rm = [l for l in L if "ERROR IN CONTACTING RM" in l][0]
    assert all(stamp(l) >= stamp(first_rm) for l in L if "msra-sa-41:8030" in l and level(l) != "INFO")
    assert all(stamp(l) > stamp(first_rm) for l in L if "Retrying connect to server: msra-sa-41:8030" in l)
    qs.append(("time", "en", "When did the AM first report that it couldn't contact the RM?",
               {"any_of": [stamp(first_rm), clock(first_rm)]}))
    fl = [l for l in L if f"{A}m_000001_0 TaskAttempt Transitioned from FAIL_TASK_CLEANUP to FAILED" in l]
    assert len(fl) == 1
    qs.append(("time", "zh", "m_000001_0 这个 attempt 是几点彻底变成 FAILED 的？",
               {"any_of": [stamp(fl[0]), clock(fl[0])]}))

    # lookups (zh)
    cont = only([grab(r"Assigned container (\S+) to", l) for l in L
                 if re.search(rf"Assigned container \S+ to {A}m_000003_0$", l)], "container")
    qs.append(("lookup", "zh", "m_000003_0 这个 attempt 分到的是哪个 container？", {"any_of": [cont]}))
    bad = only([grab(r"bad datanode (\S+)", l) for l in L if "bad datanode" in l], "bad dn")
    qs.append(("lookup", "zh", "写 jhist 的时候 pipeline 出问题，被标成 bad datanode 的是哪台？",
               {"any_of": [bad, bad.rsplit(":", 1)[0]]}))

    # top
    nm = collections.Counter(grab(r"on NM: \[([^:\]]+)", l) for l in L if "on NM: [" in l)
    nmh = top1(nm, "nm")
    qs.append(("top", "en", "Which NodeManager host ended up running the most of the job's containers?",
               {"any_of": [nmh, nmh.split(".")[0]]}))

    # multi
    inp = [l for l in L if "Input size for job" in l]
    assert len(inp) == 1
    size, splits = grab(r"= (\d+)\. Number of splits = (\d+)", inp[0], 1), grab(r"splits = (\d+)", inp[0])
    qs.append(("multi", "en", "what's the job's total input size, and how many splits did it get cut into?",
               {"all_of": [size, splits]}))
    failed = [grab(r"(attempt_\S+) TaskAttempt Transitioned from FAIL_TASK_CLEANUP to FAILED", l)
              for l in L if "to FAILED" in l]
    fcont = {grab(r"container (container_\S+) taskAttempt", l) for l in L
             if "CONTAINER_REMOTE_LAUNCH" in l and any(l.endswith(a) for a in failed)}
    fhost = only([grab(r"on NM: \[([^.:\]]+)", l) for l in L if "on NM: [" in l
                  and any(c in l for c in fcont)], "failed host")
    node = only([grab(r"failures on node (\S+?)\.", l) for l in L if "failures on node" in l], "node")
    assert node == fhost and len(fcont) == len(failed)
    qs.append(("multi", "zh", "这次一共有几个 map attempt 失败了？都是在哪台机器上挂的？",
               {"all_of": [str(len(failed)), fhost]}))
    return qs


# -------------------------------------------------------------------- Spark
def spark() -> list[tuple]:
    L = raw("Spark")
    csvr = structured("Spark")
    aligned(L, csvr)
    stamp = lambda l: l[:17]                 # 17/06/09 20:10:40
    clock = lambda l: l[9:17]
    qs = []

    # lookups
    drv = only([grab(r"spark://\S+@(\S+)", l) for l in L if "Connecting to driver" in l], "driver")
    qs.append(("lookup", "en", "What driver address did this executor connect to?", {"any_of": [drv]}))
    cap = only([grab(r"capacity ([\d.]+ \w+)", l) for l in L if "MemoryStore started" in l], "cap")
    qs.append(("lookup", "zh", "MemoryStore 启动的时候 capacity 给了多大？", {"any_of": [cap]}))
    nport = only([grab(r"NettyBlockTransferService' on port (\d+)", l) for l in L
                  if "NettyBlockTransferService' on port" in l], "netty")
    qs.append(("lookup", "zh", "NettyBlockTransferService 是在哪个 port 上起来的？", {"number": int(nport)}))

    # negatives
    levels = collections.Counter(l.split()[2] for l in L)
    assert set(levels) == {"INFO"} and {r["Level"] for r in csvr} == {"INFO"}
    qs.append(("negative", "en", "Anything logged at WARN or ERROR by this executor?", {"any_of": NEG}))
    fin_rx = re.compile(r"Finished task (\S+) in stage (\S+) \(TID (\d+)\)\. (\d+) bytes")
    fin = [(l, fin_rx.search(l)) for l in L if "Finished task" in l]
    assert all(m for _, m in fin)
    run = [re.search(r"Running task (\S+) in stage (\S+) \(TID (\d+)\)", l) for l in L if "Running task" in l]
    fin_tids = {m.group(3) for _, m in fin}
    last_tid = run[-1].group(3)
    assert last_tid not in fin_tids
    qs.append(("negative", "zh", f"TID {last_tid} 那个 task 最后跑完了没有？", {"any_of": NEG}))

    # counts
    n24 = sum(1 for _, m in fin if m.group(2) == "24.0")
    assert n24 == sum(1 for r in csvr if r["Content"].startswith("Finished task")
                      and " in stage 24.0 " in r["Content"])
    qs.append(("count", "en", "How many stage 24.0 tasks did this executor finish?", {"number": n24}))
    n_recomp = sum(1 for l in L if "not found, computing it" in l)
    assert n_recomp == sum(1 for r in csvr if r["EventTemplate"].endswith("not found, computing it"))
    qs.append(("count", "zh", "有多少个 partition 是 not found 要重新 compute 的？", {"number": n_recomp}))
    n_span = sum(1 for l, _ in fin if "20:10:50" <= clock(l) <= "20:10:59")
    qs.append(("count", "zh", "20:10:50 到 20:10:59 这十秒里，Finished task 一共有几条？", {"number": n_span}))

    # aggregates
    by_stage = collections.defaultdict(list)
    for _, m in fin:
        by_stage[m.group(2)].append(int(m.group(4)))
    qs.append(("agg", "en", "Sum up the result bytes sent to the driver for stage 26.0 - what do you get?",
               {"number": sum(by_stage["26.0"])}))
    v21 = by_stage["21.0"]
    assert sum(v21) % len(v21) == 0 and len(set(v21)) > 1
    qs.append(("agg", "en", "On average, how many bytes did each stage 21.0 task send back to the driver?",
               {"number": sum(v21) // len(v21)}))
    br = [re.search(r"Reading broadcast variable (\d+) took (\d+) ms", l) for l in L if "Reading broadcast" in l]
    slow = top1(collections.Counter({m.group(1): int(m.group(2)) for m in br}), "broadcast")
    assert len([m for m in br if m.group(1) == slow]) == 1
    ms = only([m.group(2) for m in br if m.group(1) == slow], "ms")
    qs.append(("agg", "en", "which broadcast variable was the slowest to read, and how many ms did it take?",
               {"all_of": [slow, ms]}))

    # times
    s29 = [l for l in L if "Running task" in l and "in stage 29.0" in l]
    qs.append(("time", "en", "When did stage 29.0 kick off on this box?",
               {"any_of": [stamp(s29[0]), clock(s29[0])]}))
    ga = [l for l in L if "Got assigned task" in l]
    qs.append(("time", "zh", "最后一次 Got assigned task 是几点的事？",
               {"any_of": [stamp(ga[-1]), clock(ga[-1])]}))

    # top
    comp = top1(collections.Counter(l.split()[3].rstrip(":") for l in L), "component")
    assert comp == top1(collections.Counter(r["Component"] for r in csvr), "csv component")
    qs.append(("top", "en", "Which component is the chattiest in this log?", {"any_of": [comp]}))

    # multi
    ex = [l for l in L if "Starting executor ID" in l]
    assert len(ex) == 1
    eid, ehost = grab(r"executor ID (\S+) on host (\S+)", ex[0], 1), grab(r"on host (\S+)", ex[0])
    qs.append(("multi", "zh", "这个 executor 的 ID 是几号？跑在哪台 host 上？", {"all_of": [eid, ehost]}))
    open_tasks = [m for m in run if m.group(3) not in fin_tids]
    stage = only([m.group(2) for m in open_tasks], "open stage")
    qs.append(("multi", "zh", "日志结束的时候还有几个 task 没跑完？都是哪个 stage 的？",
               {"all_of": [str(len(open_tasks)), stage.split(".")[0]]}))
    return qs


# ----------------------------------------------------------------- assemble
def build() -> list[dict]:
    out = []
    for system, fn in (("OpenSSH", openssh), ("Hadoop", hadoop), ("Spark", spark)):
        seen = collections.Counter()
        for kind, lang, question, check in fn():
            seen[kind] += 1
            out.append({"system": system, "id": f"b2-{system}-{kind}-{seen[kind]}", "kind": kind,
                        "lang": lang, "question": question, "check": check})
    validate(out)
    return out


def validate(qs: list[dict]) -> None:
    ids = [q["id"] for q in qs]
    assert len(ids) == len(set(ids)), "duplicate ids"
    texts = [q["question"] for q in qs]
    assert len(texts) == len(set(texts)), "duplicate questions"
    for q in qs:
        c = q["check"]
        assert c and set(c) <= {"number", "any_of", "all_of"}, q
        assert not ("all_of" in c and ("any_of" in c or "number" in c)), q
        if "number" in c:
            assert isinstance(c["number"], (int, float)) and not isinstance(c["number"], bool), q
        for key in ("any_of", "all_of"):
            if key in c:
                assert c[key] and all(isinstance(s, str) and s.strip() for s in c[key]), q
        assert q["lang"] in ("en", "zh")
        has_cjk = bool(re.search(r"[\u4e00-\u9fff]", q["question"]))
        assert has_cjk == (q["lang"] == "zh"), q
    per = collections.Counter((q["system"], q["lang"]) for q in qs)
    for (s, lang), n in per.items():
        assert n == 8, f"{s}/{lang}: {n}"


def main(argv=None) -> int:
    global DATA
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA), help="loghub root (default %(default)s)")
    ap.add_argument("--out", help="write JSON here instead of stdout")
    args = ap.parse_args(argv)
    DATA = Path(args.data)
    qs = build()
    text = json.dumps(qs, ensure_ascii=False, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        summary = collections.Counter((q["system"], q["kind"], q["lang"]) for q in qs)
        print(f"{len(qs)} questions -> {args.out}", file=sys.stderr)
        for k in sorted(summary):
            print("  ", *k, summary[k], file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
