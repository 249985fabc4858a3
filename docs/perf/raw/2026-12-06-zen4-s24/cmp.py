"""cmp.py OUT_A OUT_B: two bench_qa runs question by question (the turned verdicts, then each run's accuracy,
p50/p95 and loops)."""
import json,sys
a={ (r['id'],r['question']):r for r in json.load(open(sys.argv[1]))}
b={ (r['id'],r['question']):r for r in json.load(open(sys.argv[2]))}
for k in b:
    if k in a and a[k]['pass']!=b[k]['pass']:
        r=b[k]; print('+' if r['pass'] else '-', r['id'], r['lang'], round(a[k]['seconds'],1), '->', round(r['seconds'],1), '|', r['question'][:90], '|', ' '.join(r['answer'].split())[:200], '|', json.dumps((r.get('query') or {}).get('call')))
for n,d in (('a',a),('b',b)):
    ks=[k for k in b if k in a]
    ts=sorted(d[k]['seconds'] for k in ks); 
    print(n, 'acc', sum(d[k]['pass'] for k in ks), '/', len(ks), 'p50', round(ts[len(ts)//2],2), 'p95', round(ts[int(0.95*(len(ts)-1)+0.5)],2), 'loops', sum(d[k].get('loop',False) for k in ks))
