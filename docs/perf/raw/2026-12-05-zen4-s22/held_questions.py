import json, subprocess
py = ".venv/bin/python"
ext = []
for s in ("logqa", "logreasoning"):
    subprocess.run([py, "tools/bench/external_questions.py", "--set", s, "--part", "held", "--per-system", "24", "--out", "/tmp/lg/q/_h.json"], check=True, capture_output=True)
    ext += json.load(open("/tmp/lg/q/_h.json"))
json.dump(ext, open("/tmp/lg/q/ext_held.json", "w"), ensure_ascii=False)
own = []
for s in ("BGL", "HDFS", "Zookeeper"):
    p = subprocess.run([py, "tools/bench/qa_wordings.py", "--system", s], capture_output=True, text=True, check=True)
    own += [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
own = [q for q in own if (q["lang"], q["wording"]) in (("en", 1), ("en", 3), ("zh", 1))][::2]
json.dump(own, open("/tmp/lg/q/own_held.json", "w"), ensure_ascii=False)
p = subprocess.run([py, "tools/bench/qa_factory.py", "--part", "held", "--shapes", "pipe,app_json"], capture_output=True, text=True, check=True)
fac = json.loads(p.stdout) if p.stdout.strip().startswith("[") else [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
fac = [q for q in fac if q.get("wording") == 1][::3]
json.dump(fac, open("/tmp/lg/q/factory_held.json", "w"), ensure_ascii=False)
subprocess.run([py, "tools/bench/qa_blind.py", "--part", "held", "--out", "/tmp/lg/q/blind_held.json"], check=True, capture_output=True)
for n in ("ext_held", "own_held", "factory_held", "blind_held"):
    print(n, len(json.load(open(f"/tmp/lg/q/{n}.json"))))
