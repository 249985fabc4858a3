import json,glob,sys
def gold_pos(r):
    c=r['check']; a=r['answer']; al=a.lower()
    keys=c.get('all_of') or c.get('any_of') or ([str(int(c['number'])) if float(c['number']).is_integer() else str(c['number'])] if 'number' in c else [])
    pos=[al.find(str(k).lower()) for k in keys]
    pos=[p+len(str(k)) for p,k in zip(pos,keys) if p>=0]
    if not pos: return None
    return max(pos) if c.get('all_of') else min(pos)
for end,mn in ((7.5,48),(7.5,64),(7.5,80),(7.5,96),(7.8,64),(8.0,48)):
  lost=0;times=[];cut=0
  for f in sys.argv[1:]:
    for r in json.load(open(f)):
      t=(r['query'] or {}).get('timing')
      n=r['completion_tokens']; sec=r['seconds']
      if not t or n==0: times.append(sec); continue
      rate=t['answer_decode_ms']/1e3/n
      start=sec-t['answer_decode_ms']/1e3
      k=max(mn, int((end-start)/rate)) if sec>end else n
      if k<n:
        cut+=1; sec=start+k*rate
        if r['pass']:
          g=gold_pos(r)
          if g is None or g/len(r['answer'])*n > k: lost+=1
      times.append(sec)
  s=sorted(times); m=len(s); q=(m-1)*.95; lo=int(q); p95=s[lo]+(s[min(lo+1,m-1)]-s[lo])*(q-lo)
  print(end,mn,'cut',cut,'lost',lost,'of',m,'p95 %.2f'%p95)
