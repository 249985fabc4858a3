"""Per question of the soak: answers within 12 s, latency, own work and reading inside (p50), by question.
Uses each record's question ("q", recorded since 6e066b6); older files: the question asked in turn,
counted from `--first N` (the index of the first answered question: 1 when the first was refused)."""
import json, statistics as S, sys
QS = ("How many error lines were there in the last minute?", "Which host logged the most lines recently?",
      "Were there any faults on line 3?", "最近一分钟有多少条错误日志？")
args = sys.argv[1:]
first = 0
if args[:1] == ["--first"]:
    first, args = int(args[1]), args[2:]
for path in args:
    d = json.load(open(path))
    by = {}
    for i, q in enumerate(d):
        st = q['stages'][0] if q['stages'] else {}
        k = q.get('q') or QS[(first + i) % len(QS)]
        own = sum(v for n, v in st.items() if n.endswith('_ms') and n != 'read_ms') / 1000
        by.setdefault(k, []).append((q['s'], own, st.get('read_ms', 0) / 1000, st.get('call')))
    print(path)
    for k in QS:
        v = by.get(k, [])
        if not v:
            continue
        print(f"  {k[:40]:40s} n {len(v):2d} within {sum(s <= 12 for s, *_ in v):2d}  p50 {S.median(s for s, *_ in v):5.2f} s"
              f"  own p50 {S.median(o for _, o, *_ in v):5.2f} max {max(o for _, o, *_ in v):5.2f}"
              f"  read p50 {S.median(r for _, _, r, _ in v):4.2f}  calls {sorted({json.dumps(c, ensure_ascii=False) for *_, c in v})[:2]}")
