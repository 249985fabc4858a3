"""Re-run the answer check of the checkout on bench_qa records (--out files): the answers the recording
appliance kept are the model's own text, so the check's new rules apply to them as the appliance would;
replaced and cited answers are taken as recorded. `logged` (the stored log holds a token whole) is read off
the system's raw 2k file. Run from the checkout's root:
    .venv/bin/python docs/perf/raw/2026-12-06-zen3-s33/recheck.py RECORDS.json ..."""
import json, sys
sys.path.insert(0, "."); sys.path.insert(0, "tools/bench")
from gateway.serve.answer.check import check
from gateway.serve.answer.evidence import Evidence
from gateway.serve.answer.render import render_result
from gateway.serve.answer.question import which_end
import qa_judge
RAW = {}
for f in sys.argv[1:]:
    recs = json.load(open(f)); before = after = 0; changed = []
    for r in recs:
        q = r.get("query") or {}
        ok0 = r["pass"]; before += ok0
        if (q.get("check") or {}).get("action") != "kept" or not q.get("result"):
            after += ok0; continue
        ev = q.get("evidence")
        ev = Evidence(ev["tokens"], ev["lines"]) if ev else Evidence()
        end = which_end(r["question"])
        import re, glob
        raw = RAW.setdefault(r["system"], open(glob.glob(f"../shared/data/loghub/{r['system']}/*_2k.log")[0], errors="replace").read())
        logged = lambda tok, raw=raw: re.search(r"(?<![\w.])" + re.escape(tok) + r"(?![\w]|\.\w)", raw) is not None
        c = check(r["answer"], r["question"], q["result"], render_result(q["result"], end), end, ev, logged=logged)
        if c.action == "replaced":      # the offline render lacks parts of the prompt's (count details,
            after += ok0                # evidence text) that supported figures: taken as recorded
            print("   offline-only replacement, kept as recorded:", r["id"])
            continue
        ok1 = qa_judge.judge(c.text, r["check"]); after += ok1
        if c.text != r["answer"]:
            changed.append((ok0, ok1, c.action, r["id"], r["question"][:70], c.text[-150:].replace("\n", " | ")))
    print(f, "pass", before, "->", after, "of", len(recs))
    for x in changed: print("  ", x)
