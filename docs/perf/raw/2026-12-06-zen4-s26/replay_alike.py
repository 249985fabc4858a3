"""Replay gateway.serve.answer.alike on recorded bench_qa answers (no model run): each answer as the
appliance would now show it, judged again with the benchmark's own judge and loop rule.

An answer the check kept (the model's text) is fed to alike.Watch a character a token, ended where the
watch says, then folded; a replaced or cited answer (the fallback's text) is folded only. Prints the
answers seen, the answers changed, and per changed answer: file, id, check action, finish reason, pass
before, pass after, loop before, loop after.

    .venv/bin/python docs/perf/raw/2026-12-06-zen4-s26/replay_alike.py OUT_FILE... [-v]
"""
import json
import sys

sys.path.insert(0, ".")
from gateway.serve.answer import alike  # noqa: E402
from tools.bench.qa_judge import judge, looped  # noqa: E402

seen = changed = 0
rows = []
show = "-v" in sys.argv
for f in [a for a in sys.argv[1:] if a != "-v"]:
    for r in json.load(open(f)):
        a = r.get("answer") or ""
        seen += 1
        act = ((r.get("query") or {}).get("check") or {}).get("action")
        b, fin = a, r.get("finish_reason")
        if act == "kept":
            w = alike.Watch(lambda t: t.encode())
            for i, ch in enumerate(a):
                if not w(ch):
                    b, fin = alike.ended(a[:i + 1]), "stop"
                    break
        b = alike.fold(b, 1 if fin == "length" else alike.TIMES)
        if b != a:
            changed += 1
            rows.append((f.split("/")[-1], r["id"], act, r.get("finish_reason"), r["pass"], judge(b, r["check"]),
                         r.get("loop"), looped(b, fin)))
            if show:
                print(a, "\n====>\n", b, "\n")
print(seen, changed)
for row in rows:
    print(row)
