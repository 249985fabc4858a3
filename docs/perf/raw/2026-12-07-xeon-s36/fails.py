import json,sys
for s in sys.argv[1:]:
    d=json.load(open(s))
    bad=[r for r in d if not r.get("pass")]
    secs=sorted(r["seconds"] for r in d)
    print("==",s,len(d),"fail",len(bad),"p95 %.1f"%secs[int(len(secs)*.95)-1])
    for r in bad:
        q=r.get("query") or {}
        print(" -", r["system"],"|",r["question"][:100],"| gold:",json.dumps(r["check"],ensure_ascii=False)[:60],"| call:",json.dumps(q.get("call"),ensure_ascii=False)[:100],"| got:",(r["answer"] or str(r["error"]))[:100].replace("\n"," "))
