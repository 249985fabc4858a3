import json,sys,collections
for f in sys.argv[1:]:
    d=json.load(open(f)); n=len(d)
    by=collections.Counter(); tot=collections.Counter()
    for r in d:
        k=r["kind"].split(":")[0] if r["kind"].startswith(("logqa","logreasoning")) else r["lang"]
        tot[k]+=1; by[k]+=bool(r["pass"])
    secs=sorted(r["seconds"] for r in d)
    loops=sum(bool(r.get("loop")) for r in d); ref=sum(r.get("refused",0) for r in d); err=sum(bool(r.get("error")) for r in d)
    print(f.split("/")[-1], f"{sum(by.values())}/{n}", {k:f"{by[k]}/{tot[k]}" for k in tot}, f"p50 {secs[n//2]:.2f} p95 {secs[int(n*.95)-1]:.2f}", f"loops {loops} refused {ref} errors {err}")
