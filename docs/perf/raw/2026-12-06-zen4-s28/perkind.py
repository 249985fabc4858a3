"""Per question of the soak: answers within 12 s, latency, own work and reading inside (p50), by question."""
import json, statistics as S, sys
QS = ("How many error lines were there in the last minute?", "Which host logged the most lines recently?",
      "Were there any faults on line 3?", "最近一分钟有多少条错误日志？")
for path in sys.argv[1:]:
    d = json.load(open(path))
    by = {}
    for q in d:
        st = q['stages'][0]
        c = st.get('call') or {}
        k = ('faults' if c.get('text') else 'top host' if c.get('op') == 'top_k'
             else 'count en' if st.get('call_prompt_tokens', 0) > 100 else 'count zh')
        own = sum(v for n, v in st.items() if n.endswith('_ms') and n != 'read_ms') / 1000
        by.setdefault(k, []).append((q['s'], own, st.get('read_ms', 0) / 1000))
    print(path)
    for k, v in sorted(by.items()):
        print(f"  {k:9s} n {len(v):2d} within {sum(s <= 12 for s, _, _ in v):2d}  p50 {S.median(s for s, _, _ in v):5.2f} s"
              f"  own p50 {S.median(o for _, o, _ in v):5.2f} max {max(o for _, o, _ in v):5.2f}  read p50 {S.median(r for _, _, r in v):4.2f}")
