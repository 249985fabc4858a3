"""The two extra tune files of the thirty-third session, under /tmp/lg/q/ (after tune_questions.py of
raw/2026-12-05-zen4-s22 has written ext17.json, own_tune.json and blind_tune.json there):
ext41.json: the external tune part, seed 41, 22 LogQA and 10 LogReasoning questions per system
(OpenSSH, Spark) not in ext17.json; stats_sub.json: the own tune questions of a max / min / sum / lookup
kind and the blind tune part's max / min / sum questions."""
import json, subprocess
py = ".venv/bin/python"
ext17 = {q["id"] for q in json.load(open("/tmp/lg/q/ext17.json"))}
out = []
for s, n in (("logqa", 22), ("logreasoning", 10)):
    subprocess.run([py, "tools/bench/external_questions.py", "--set", s, "--part", "tune", "--per-system", "40",
                    "--seed", "41", "--out", f"/tmp/lg/q/_t_{s}.json"], check=True, capture_output=True)
    by = {}
    for q in json.load(open(f"/tmp/lg/q/_t_{s}.json")):
        if q["id"] not in ext17:
            by.setdefault(q["system"], []).append(q)
    for qs in by.values():
        out += qs[:n]
json.dump(out, open("/tmp/lg/q/ext41.json", "w"), ensure_ascii=False)
own, blind = json.load(open("/tmp/lg/q/own_tune.json")), json.load(open("/tmp/lg/q/blind_tune.json"))
sub = [q for q in own if any(k in q["kind"] for k in ("max", "min", "sum", "lookup"))] + \
      [q for q in blind if q["kind"] in ("max", "min", "sum")]
json.dump(sub, open("/tmp/lg/q/stats_sub.json", "w"), ensure_ascii=False)
print("ext41", len(out), "stats_sub", len(sub))
