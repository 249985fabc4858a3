"""Totals of a held records file: as answered, and with the lookup citation cut off (totals only)."""
import json, sys
sys.path.insert(0, "tools/bench")
import qa_judge
for f in sys.argv[1:]:
    r = json.load(open(f))
    cut = lambda a: a.split("\nThe line this answer reads:")[0].split("\n回答依据的日志行：")[0]
    n = len(r); ok = sum(x["pass"] for x in r); cited = sum(cut(x["answer"]) != x["answer"] for x in r)
    ok_cut = sum(qa_judge.judge(cut(x["answer"]), x["check"]) if x["error"] is None else False for x in r)
    by = {}
    for x in r:
        k = x["kind"].split(":")[0] if ":" in x["kind"] else x["lang"]
        by.setdefault(k, [0, 0]); by[k][0] += x["pass"]; by[k][1] += 1
    print(f, f"{ok}/{n}", "without the citation:", f"{ok_cut}/{n}", "cited:", cited, by)
