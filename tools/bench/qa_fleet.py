"""Fleet QA (issue 43): questions across three boxes (each a Loghub system with its own box id), asked through
the fleet node's OpenAI-compatible API and judged against answers computed here from the raw lines.

The plant: a local two-shard ClickHouse (gateway/fleet/local_cluster.py); each box is a `linegate serve` (engine
off) that takes its system's 2k raw lines on /api/ingest and ships them; the fleet node is a `linegate serve` with
the model and `[fleet] node = true`. Questions (build): per-box counts of a quoted phrase, the box with the most
lines holding a word, which box logged a word first / last, when a box first / last logged a phrase; English
and Chinese alternating. A phrase or word is asked only when its meaning is unambiguous in the data (its lines
are the same whether it is read as a substring or as whole words in any order, as the store reads it).
Scoring is bench_qa's (qa_questions.judge, bench_qa.ask and summary). Ends with one JSON line.

    .venv/bin/python tools/bench/qa_fleet.py --questions-only            # prints the questions as JSON
    nice -n 10 .venv/bin/python tools/bench/qa_fleet.py [--model qwen2.5-coder-1.5b-instruct] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.bench import bench_qa  # noqa: E402
from tools.bench import qa_questions as qq  # noqa: E402

BOXES = {"line1": "HDFS", "line2": "BGL", "line3": "OpenSSH"}
MIN_QUESTIONS = 30
_WORD = re.compile(r"[A-Za-z][A-Za-z]{3,}")


def holds(line: str, words: list[str]) -> bool:
    """Every word as a whole token of the line, any case (the store's reading of a text filter)."""
    return all(re.search(r"(?<![A-Za-z0-9_])" + re.escape(w) + r"(?![A-Za-z0-9_])", line, re.I) for w in words)


def _year_less(t: datetime) -> datetime:
    """A time written without a year is put in the year that makes it the latest not in the future."""
    now = datetime.now()
    t = t.replace(year=now.year)
    return t if t <= now else t.replace(year=now.year - 1)


class Box:
    """One box's lines and what the questions need of them."""

    def __init__(self, box: str, system: str, data: Path) -> None:
        self.box, self.system = box, system
        raw, rows = qq.load_system(data, system)
        self.facts = qq.Facts(system, raw, rows)
        self.raw = raw
        self.times = [None if t is None else (t[0] if t[1] else _year_less(t[0]), t[2]) for t in self.facts.times]
        self.words = Counter(w.lower() for r in rows for w in set(_WORD.findall(r["Content"])))

    def phrases(self) -> list[tuple[str, list[int]]]:
        """(phrase, its lines) of the templates whose phrase reads the same as a substring and as words."""
        out = []
        for _, p, _ in self.facts.phrase_templates(3, 600):
            sub = [i for i, ln in enumerate(self.raw) if p in ln]
            if sub == [i for i, ln in enumerate(self.raw) if holds(ln, p.split())] and \
                    all(self.times[i] for i in sub):
                out.append((p, sub))
        return out

    def count(self, word: str) -> int:
        return sum(holds(ln, [word]) for ln in self.raw)


def _q(kind: str, box: str, en: str, zh: str, **check) -> dict:
    return {"kind": kind, "system": box, "en": en, "zh": zh, "check": check}


def _per_box(b: Box) -> list[dict]:
    """Per-box counts and first/last times of quoted phrases."""
    ph = b.phrases()
    out = []
    for p, idx in (ph[:1] + ph[len(ph) // 2: len(ph) // 2 + 1] + ph[-1:])[:3]:
        out.append(_q("count", b.box, f'How many lines on box {b.box} contain "{p}"?',
                      f"箱 {b.box} 上有多少行包含“{p}”？", number=len(idx)))
    for which, (p, idx) in zip(("first", "last"), ph[1:3] if len(ph) >= 3 else ph[:2]):
        pick = min(idx, key=lambda i: (b.times[i][0], i)) if which == "first" else \
            max(idx, key=lambda i: (b.times[i][0], i))
        tm, header = b.times[pick]
        zh = "第一次" if which == "first" else "最后一次"
        out.append(_q("first-last", b.box, f'When did box {b.box} log "{p}" for the {which} time?',
                      f"箱 {b.box} {zh}记录“{p}”是在什么时候？", any_of=qq.clock_forms(tm, header)))
    return out


def _across(boxes: list[Box]) -> list[dict]:
    """The box with the most lines holding a word; the box that logged a word first and last."""
    shared = [w for w in set.union(*(set(b.words) for b in boxes))
              if sum(w in b.words for b in boxes) >= 2 and w not in qq.LEVEL_WORDS]
    counts = {w: [b.count(w) for b in boxes] for w in shared}
    most = []
    for w, c in sorted(counts.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        top = sorted(c, reverse=True)
        if top[1] and top[0] >= 1.5 * top[1]:          # a clear most (and more than one box holds it)
            most.append(w)
    out = []
    for w in most[:8]:
        best = boxes[counts[w].index(max(counts[w]))].box
        out.append(_q("top-k", "plant", f'Which box logged the most lines containing "{w}"?',
                      f"哪个箱记录包含“{w}”的行最多？", any_of=[best]))
    for w in most[8:16]:
        when = []
        for b in boxes:
            ts = [b.times[i][0] for i, ln in enumerate(b.raw) if holds(ln, [w]) and b.times[i]]
            if ts:
                when.append((min(ts), max(ts), b.box))
        if len(when) < 2:
            continue
        which = "first" if len(out) % 2 else "last"
        box = min(when)[2] if which == "first" else max(when, key=lambda x: x[1])[2]
        zh = "最早" if which == "first" else "最晚"
        out.append(_q("first-last", "plant", f'Which box logged "{w}" {"first" if which == "first" else "last"}?',
                      f"哪个箱{zh}记录了“{w}”？", any_of=[box]))
    return out


def build(data: Path = qq.DEFAULT_DATA, boxes: dict[str, str] = BOXES) -> list[dict]:
    """The questions (bench_qa's shape: id, system = the box or "plant", lang, kind, question, check)."""
    loaded = [Box(b, s, data) for b, s in boxes.items()]
    raw = [q for b in loaded for q in _per_box(b)] + _across(loaded)
    out = []
    for i, q in enumerate(raw):
        lang = "zh" if i % 2 else "en"
        out.append({"id": f"fleet-{i + 1:02d}", "system": q["system"], "lang": lang, "kind": q["kind"],
                    "question": q[lang], "check": q["check"]})
    return out


def _fleet_config(urls: list[str], database: str, box: str = "", node: bool = False) -> str:
    keys = {"urls": urls, "cluster": "linegate", "database": database, "interval_s": 0.2}
    keys |= {"node": True, "reader_password": "reader"} if node else {"box_id": box}
    return "[fleet]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())


def ship_boxes(a: argparse.Namespace, urls: list[str], log) -> None:
    """Each box a `linegate serve` (engine off) that ingests its system and ships it; waits until shipped."""
    import httpx

    for box, system in BOXES.items():
        cfg = "[engine]\nenabled = false\n[alerts]\nexplain = []\n" + _fleet_config(urls, a.database, box)
        with bench_qa.serve(a.linegate, cfg) as app, httpx.Client() as http:
            n = bench_qa.ingest(app, http, qq.system_lines(system, a.data))
            t0 = time.monotonic()
            while (bench_qa.stats(app, http).get("fleet") or {}).get("pending", 1) and time.monotonic() - t0 < 120:
                time.sleep(0.5)
            log(f"## box {box} ({system}): {n} lines ingested and shipped in {time.monotonic() - t0:.1f} s")


def run(a: argparse.Namespace, qs: list[dict], log) -> list[dict]:
    import httpx
    import openai

    from gateway.fleet.local_cluster import LocalCluster
    from gateway.fleet.schema import init_schema
    from gateway.fleet.settings import FleetSettings

    recs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="qa_fleet_") as tmp, LocalCluster(Path(tmp) / "ch", 2) as cluster:
        init_schema(FleetSettings(urls=cluster.urls, box_id="x", cluster="linegate", database=a.database))
        ship_boxes(a, cluster.urls, log)
        cfg = (f'[engine]\nmodel = "{a.model}"\n[token_queue]\nn_tokens = 2048\n[alerts]\nexplain = []\n'
               + (f"ttft_budget_ms = {a.ttft_budget_ms}\n" if a.ttft_budget_ms else "")
               + _fleet_config(cluster.urls, a.database, node=True))
        with bench_qa.serve(a.linegate, cfg) as node, httpx.Client() as http:
            model = (bench_qa.stats(node, http).get("engine") or {}).get("model")
            client = openai.OpenAI(base_url=node.url + "/v1", api_key=node.key, timeout=a.timeout, max_retries=0)
            for q in qs:
                r = bench_qa.ask(client, q, a.max_tokens)
                ok = r["error"] is None and qq.judge(r["answer"], q["check"])
                found = r.get("query") is not None and qq.judge(
                    json.dumps(r["query"].get("result"), ensure_ascii=False), q["check"])
                recs.append({**q, **r, "pass": ok, "loop": qq.looped(r["answer"], r["finish_reason"]),
                             "model": model, "result_has_answer": found})
                call = json.dumps((r.get("query") or {}).get("call"), ensure_ascii=False)
                log(f"{'PASS' if ok else 'FAIL'} {q['id']} [{q['lang']}] {r['seconds']:.1f}s | {q['question']} | want "
                    f"{json.dumps(q['check'], ensure_ascii=False)} | {' '.join(r['answer'].split())[:160]} | call {call}")
    return recs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--linegate", default=".venv/bin/linegate")
    ap.add_argument("--data", type=Path, default=qq.DEFAULT_DATA, help="Loghub folder")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct", help="the fleet node's model")
    ap.add_argument("--database", default="qa")
    ap.add_argument("--limit", type=int, help="ask at most N questions")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per question")
    ap.add_argument("--ttft-budget-ms", type=float, help="[alerts] ttft_budget_ms of the fleet node")
    ap.add_argument("--out", type=Path, help="write the per-question records here (JSON)")
    ap.add_argument("--questions-only", action="store_true", help="print the questions as JSON and exit")
    a = ap.parse_args(argv)
    qs = build(a.data)
    if len(qs) < MIN_QUESTIONS:
        raise SystemExit(f"qa_fleet: only {len(qs)} questions from the data (want {MIN_QUESTIONS})")
    if a.questions_only:
        print(json.dumps(qs, ensure_ascii=False, indent=1))
        return 0
    recs = run(a, qs[: a.limit], lambda msg: print(msg, flush=True))
    if a.out:
        a.out.write_text(json.dumps(recs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    summary = bench_qa.summary(recs, argparse.Namespace(linegate=a.linegate, max_tokens=a.max_tokens, kv_policy=None,
                                                        token_queue_tokens=2048, act_precision=None))
    print(json.dumps({"bench": "qa_fleet", **summary}, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
