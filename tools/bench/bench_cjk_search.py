"""Benchmark: finding Chinese text in the store, the query surface's substring scan (LIKE, what
gateway/pipeline/query.py runs for non-ASCII text) against an FTS5 `trigram` index of the same lines.

The lines: every Loghub line of the dev systems (shared/data/loghub), repeated to --lines, with one
line in --every replaced by a Chinese line built from a small word list (station, fault, action:
2-character words mostly, as Chinese operators write them). Queries: each word of that list, searched
both ways; expected counts come from Python's `in` over the same lines. Reported: per query kind
(2-character words, 3+ characters) the median latency of both, trigram recall (FTS5's trigram
tokenizer cannot match a term shorter than 3 characters), and the index's size and build time.
Last line: one JSON object.

    python tools/bench/bench_cjk_search.py [--lines 200000] [--every 20]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.datasets import loghub_dir  # noqa: E402
from tools.bench.harness import cpu_model, print_result  # noqa: E402

STATIONS = ["灌装机", "封盖机", "贴标机", "装箱机", "输送带", "工位3"]
FAULTS = ["卡瓶", "急停", "过温", "缺料", "断电", "扭矩偏低", "传感器故障", "光电开关"]
ACTIONS = ["已复位", "等待操作员", "报警", "停机", "重启"]


def lines_for(n: int, every: int, seed: int = 7) -> list[str]:
    base = [ln for p in sorted(loghub_dir().glob("*/*_2k.log"))
            for ln in p.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % every == 0:
            out.append(f"{rng.choice(STATIONS)} {rng.choice(FAULTS)} {rng.choice(ACTIONS)} 编号 {rng.randint(1, 999)}")
        else:
            out.append(base[i % len(base)])
    return out


def timed_ms(db: sqlite3.Connection, sql: str, arg: str, reps: int = 3) -> tuple[float, int]:
    best, n = float("inf"), 0
    for _ in range(reps):
        t0 = time.perf_counter()
        n = db.execute(sql, (arg,)).fetchone()[0]
        best = min(best, (time.perf_counter() - t0) * 1000)
    return best, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--every", type=int, default=20, help="one Chinese line in this many")
    a = ap.parse_args(argv)
    lines = lines_for(a.lines, a.every)
    with tempfile.TemporaryDirectory() as d:
        db = sqlite3.connect(Path(d) / "cjk.db")
        db.execute("CREATE TABLE logs(id INTEGER PRIMARY KEY, text TEXT)")
        db.executemany("INSERT INTO logs(text) VALUES (?)", ((x,) for x in lines))
        db.commit()
        size0 = (Path(d) / "cjk.db").stat().st_size
        t0 = time.perf_counter()
        db.execute("CREATE VIRTUAL TABLE tri USING fts5(text, content='logs', content_rowid='id', tokenize='trigram')")
        db.execute("INSERT INTO tri(tri) VALUES ('rebuild')")
        db.commit()
        build_s = time.perf_counter() - t0
        size1 = (Path(d) / "cjk.db").stat().st_size
        per: dict[str, list] = {"2": [], "3+": []}
        for word in STATIONS + FAULTS + ACTIONS:
            want = sum(word in x for x in lines)
            like_ms, like_n = timed_ms(db, "SELECT count(*) FROM logs WHERE text LIKE ?", f"%{word}%")
            tri_ms, tri_n = timed_ms(db, "SELECT count(*) FROM tri WHERE tri MATCH ?", '"' + word + '"')
            if like_n != want:
                raise SystemExit(f"LIKE found {like_n} lines with {word!r}, Python {want}")
            kind = "2" if len(word) <= 2 else "3+"
            per[kind].append((like_ms, tri_ms, tri_n / want if want else 1.0))
            print(f"{word:8s} {kind:>2s} chars  lines {want:6d}  LIKE {like_ms:8.2f} ms  trigram {tri_ms:8.2f} ms "
                  f"(found {tri_n})", flush=True)
        db.close()
    out = {"lines": a.lines, "cjk_share": round(1 / a.every, 4),
           "trigram_index_mb": round((size1 - size0) / 2**20, 1), "table_mb": round(size0 / 2**20, 1),
           "trigram_build_s": round(build_s, 2)}
    for kind, rows in per.items():
        out[f"words_{kind}"] = {"n": len(rows), "like_ms_p50": round(statistics.median(r[0] for r in rows), 2),
                                "trigram_ms_p50": round(statistics.median(r[1] for r in rows), 2),
                                "trigram_recall": round(statistics.mean(r[2] for r in rows), 3)}
    out["cpu"] = cpu_model()
    print_result(out, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
