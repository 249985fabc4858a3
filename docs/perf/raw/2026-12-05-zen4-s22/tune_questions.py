"""Rebuild the s21 tune question files: every candidate whose (id, question) is in the s21 log."""
import json, subprocess, sys, re
R = "docs/perf/raw/2026-12-05-zen4-s21/"
def logged(name):
    out = set()
    for ln in open(R + name):
        m = re.match(r"(?:PASS|FAIL)(?: LOOP)? (\S+) \[\w+\] [\d.]+s \| (.*?) \| want ", ln)
        if m: out.add((m.group(1), m.group(2)))
    return out
def keep(cands, name, out):
    want = logged(name)
    got = [q for q in cands if (q["id"], q["question"][:100]) in {(i, t[:100]) for i, t in want}]
    seen=set(); uniq=[]
    for q in got:
        k=(q["id"],q["question"])
        if k not in seen: seen.add(k); uniq.append(q)
    json.dump(uniq, open(out, "w"), ensure_ascii=False, indent=0)
    print(out, len(uniq), "of", len(want))
py = ".venv/bin/python"
ext = []
for s in ("logqa", "logreasoning"):
    subprocess.run([py, "tools/bench/external_questions.py", "--set", s, "--part", "tune", "--out", "/tmp/lg/q/_x.json"], check=True, capture_output=True)
    ext += json.load(open("/tmp/lg/q/_x.json"))
keep(ext, "qa_b_ext17_tune.log", "/tmp/lg/q/ext17.json")
own = []
for s in ("Apache", "Hadoop", "Linux", "OpenSSH", "Spark"):
    p = subprocess.run([py, "tools/bench/qa_wordings.py", "--system", s], capture_output=True, text=True, check=True)
    own += [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
keep(own, "qa_b_own_tune_new.log", "/tmp/lg/q/own_tune.json")
subprocess.run([py, "tools/bench/qa_blind.py", "--part", "tune", "--out", "/tmp/lg/q/blind_tune.json"], check=True, capture_output=True)
print("blind", len(json.load(open("/tmp/lg/q/blind_tune.json"))))
