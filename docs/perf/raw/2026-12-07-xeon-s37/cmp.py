import json,sys
old,new=sys.argv[1],sys.argv[2]
a={r['id']:r for r in json.load(open(old))}
b={r['id']:r for r in json.load(open(new))}
for name,d in ((old,a),(new,b)):
    s=sorted(r['seconds'] for r in d.values()); n=len(s); k=(n-1)*.95; lo=int(k)
    p95=s[lo]+(s[min(lo+1,n-1)]-s[lo])*(k-lo)
    print(name, sum(r['pass'] for r in d.values()),'/',n, 'p50 %.2f p95 %.2f'%(s[n//2], p95))
for q in a:
    if q in b and a[q]['pass']!=b[q]['pass']: print('WAS' if a[q]['pass'] else 'NOW', a[q]['question'][:70], '|', json.dumps((b[q]['query'] or {}).get('call'))[:120], '|', b[q]['answer'][:200].replace(chr(10),' '))
