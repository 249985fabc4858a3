"""What the model remembers of a long stream (issue 26): rare-event recall and perplexity per KV
eviction policy, over streams of 10x, 25x and 50x the cache's stream capacity (n_sink + n_ring).

The stream: the demo line (gateway/ingest/demo.py, its own faults off) with one Loghub dev-system line
in every --loghub-every, formatted as the appliance's context lines (token_queue.context_line) after
the appliance's sink (serve/prompts.py: system turn, the log's user turn opened), and fed in
--prefill-chunk token calls as the engine thread does. Planted in it: rare lines (an error, an
alarm, a new template), each with a unique code, every 2x capacity and once just before each
checkpoint (the within-window control). At the checkpoints (10x, 25x, 50x) the chat path is asked
about each event planted so far: prompts.chat_tokens + speculative_generate, greedy, with the
repetition guard (EngineThread._generate without a drafter: greedy output is the target's own) and
without the store query (which would answer from SQLite, not from the cache). Correct = the code in
the answer. Also recorded: whether the event's tokens are still in the cache (kept_stream_index).

Perplexity: per window of --ppl-window tokens at --ppl-windows places along the stream, from the
stream's own logits under each policy, and a dense recompute baseline at the same positions (a fresh
engine prefilled with the sink + the previous n_ring stream tokens, then the window: no eviction ever).

Plots (matplotlib) to docs/perf/<date>-long-stream-{recall,ppl}.png; last line: one JSON object.
  .venv/bin/python tools/bench/eval_longstream.py --model qwen2.5-coder-0.5b-instruct --n-ring 512
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Iterable

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.datasets import loghub_dir  # noqa: E402
from gateway.ingest.demo import DemoLine  # noqa: E402
from gateway.ingest.record import LogRecord  # noqa: E402
from gateway.llm.engine import Engine  # noqa: E402
from gateway.llm.sampling import SamplingParams  # noqa: E402
from gateway.llm.speculative import speculative_generate  # noqa: E402
from gateway.pipeline.token_queue import context_line  # noqa: E402
from gateway.serve.prompts import Prompts  # noqa: E402
from gateway.settings import BARE_ENGINE, EngineSettings  # noqa: E402
from tools.bench.harness import cpu_here, print_result, rss_mb  # noqa: E402

POLICIES = ("fifo", "sink_ring", "semantic", "novelty")
ANSWER_HINT = " Answer with the number only."
CHECKPOINTS = (10, 25, 50)            # stream length at which questions are asked, x capacity
EVENT_EVERY = 2.0                     # x capacity between planted events
CONTROL_BEFORE = 0.3                  # x capacity: the control event before each checkpoint
DEPTH_BINS = (0, 1, 2, 5, 10, 25, 50)
START_TS = 1_764_000_000.0            # the stream's first line
WARM_GAP_S = 120.0                    # record time between the baseline's lines and the stream (a closed group)
NO_REPEAT_NGRAM = 12                  # the appliance's default (settings.engine.no_repeat_ngram)
UNITS = ("press P-12", "robot R-4", "oven O-2", "mixer M-7", "conveyor C-9", "labeler L-3", "palletizer X-1",
         "chiller K-5", "compressor A-8", "welder W-6", "sorter S-2", "crane H-3", "pump Q-9", "kiln N-4",
         "extruder E-5", "cutter T-7", "dryer D-1", "boiler B-6", "winder V-2", "feeder F-8", "shuttle U-3",
         "printer J-9", "stacker Z-4", "scale G-5", "valve Y-6", "sealer I-7", "lathe R-9", "drill D-8")
PROBLEMS = ("hydraulic pressure drop", "servo overcurrent", "vacuum loss", "encoder drift", "gripper timeout",
            "coolant low", "spindle stall", "fieldbus dropout", "door interlock open", "torque limit",
            "belt slip", "sensor short circuit", "overheating motor", "air pressure low")
# (line, question): the unit and problem name the event; the answer is its code
TEMPLATES = (
    ("ERROR {unit}: {problem}, fault code {code}", "What fault code did {unit} report for the {problem}?"),
    ("ALERT {problem} stopped {unit}; maintenance ticket {code} opened",
     "Which maintenance ticket was opened when the {problem} stopped {unit}?"),
    ("NOTICE {unit} switched to recipe {code} after {problem} check",
     "Which recipe number did {unit} switch to after the {problem} check?"),
)


def make_events(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    pairs = [(u, p) for u in UNITS for p in PROBLEMS]
    rng.shuffle(pairs)
    codes = rng.sample(range(1000, 9999), n)
    out = []
    for i in range(n):
        unit, problem = pairs[i]
        line, q = TEMPLATES[i % len(TEMPLATES)]
        out.append({"code": str(codes[i]), "line": line.format(unit=unit, problem=problem, code=codes[i]),
                    "question": q.format(unit=unit, problem=problem) + ANSWER_HINT, "host": f"line3/{unit.split()[0]}"})
    return out


def background_lines(seed: int, loghub_every: int):
    """Endless (ts, host, text): the demo line's cycles, and after every loghub_every of its lines the
    next line of the Loghub dev systems (their files in name order, each in its own order)."""
    demo = DemoLine(seed=seed, jam_every_s=None, overtemp_every_s=None, estop_every_s=None)
    loghub = [ln.rstrip("\n") for p in sorted(loghub_dir().glob("*/*_2k.log"))
              for ln in p.read_text(errors="replace").splitlines() if ln.strip()]
    ts, k = START_TS, 0
    while True:
        for r in demo.cycle(ts):
            k += 1
            yield r.ts, r.host, r.text
            if loghub_every and k % loghub_every == 0:
                yield ts, "line3/gw", loghub[(k // loghub_every) % len(loghub)]
        ts += demo.cycle_s


def warm_lines(args) -> list[tuple[float, str, str]]:
    """Background lines of another seed, as many and as long as a source's baseline learns from, timed
    to end before the stream's first line."""
    from gateway.pipeline.baseline import BASELINE_LINES, BASELINE_S

    out = []
    for line in background_lines(args.seed + 1, args.loghub_every):
        out.append(line)
        if len(out) >= BASELINE_LINES and out[-1][0] - out[0][0] >= BASELINE_S:
            break
    shift = out[-1][0] - START_TS + WARM_GAP_S
    return [(ts - shift, host, text) for ts, host, text in out]


class Novelty:
    """The importance the appliance gives a line it reads verbatim (gateway/pipeline/reading_budget.py,
    `Rarity.importance`): the way the triage (gateway.pipeline.triage, Drain3, its default settings)
    sends it (alerted: a warning-or-worse line, one per template and host per dedup_s; new: its
    template's first line, or a kind new against its source's baseline, whose alert may come later;
    else rare or routine by its template's count), graded as the reading budget grades it."""

    def __init__(self, warm: Iterable[tuple[float, str, str]] = ()) -> None:
        """warm: lines the triage sees first, before the stream: its sources' baselines learned from
        them, as in an appliance past its first minutes (no new-kind alert while a baseline learns)."""
        from gateway.pipeline.reading_budget import Rarity
        from gateway.pipeline.triage import Triage

        self.triage = Triage(None)
        self.rarity = Rarity()
        self.n = 0
        for ts, host, text in warm:
            self(ts, host, text)

    def __call__(self, ts: float, host: str, text: str) -> float:
        rec = LogRecord.make(text, source="eval", host=host, ts=ts)
        cl = self.triage.classify([rec])
        self.n += 1
        new: set[int] = set()
        alerted = self.triage.evaluate([rec], [self.n], cl, new_kinds=new)
        tid = cl[0].template_id
        way = "alerted" if alerted else "new" if new or cl[0].is_new else self.rarity.way(tid, ts)
        return self.rarity.importance(way, tid, host, ts)


def build_stream(prompts: Prompts, capacity: int, n_events: int, args) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """Stream tokens (after the sink) up to max(args.cps) x capacity, with events planted at their
    places, and each token's line importance (Novelty); each event gets its token span [start, end)
    in the stream (sink excluded)."""
    total = int(max(args.cps) * capacity)
    places = [(EVENT_EVERY * i + 0.5) * capacity for i in range(n_events - len(args.cps))]
    places += [(c - CONTROL_BEFORE) * capacity for c in args.cps]
    places.sort()
    events = make_events(len(places), args.seed)
    for ev, at in zip(events, places):
        ev["place"] = at
    toks: list[int] = []
    imp: list[float] = []
    novelty = Novelty(warm_lines(args) if args.baseline == "warm" else ())
    bg = background_lines(args.seed, args.loghub_every)
    pending = list(events)
    while len(toks) < total:
        ts, host, text = next(bg)
        ev = pending.pop(0) if pending and len(toks) >= pending[0]["place"] else None
        if ev is not None:
            host, text = ev["host"], ev["line"]
            ev["start"] = len(toks)
        line = prompts.log_tokens(context_line(ts, host, text) + "\n")
        toks += line
        imp += [novelty(ts, host, text)] * len(line)
        if ev is not None:
            ev["end"] = len(toks)
            ev["novel"] = imp[-1] > 0
    return (np.asarray(toks[:total], np.int32), np.asarray(imp[:total], np.float32),
            [e for e in events if e.get("end", total + 1) <= total])


def nll_of(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Negative log-likelihood of targets[i] under logits[i] (float64 log-softmax)."""
    x = logits.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = (m[:, 0] + np.log(np.exp(x - m).sum(axis=1)))
    return lse - x[np.arange(len(targets)), targets]


def ppl_places(n_stream: int, capacity: int, n_windows: int, window: int) -> list[int]:
    """Window starts: one inside the first capacity (the 'first window'), the rest spread to the end."""
    first = max(capacity - window, 0)
    rest = np.linspace(2 * capacity, n_stream - window - 1, n_windows - 1).astype(int).tolist()
    return [first] + rest


def ask(eng: Engine, prompts: Prompts, ev: dict, max_tokens: int) -> dict:
    prompt = prompts.chat_tokens([{"role": "user", "content": ev["question"]}])
    res = speculative_generate(eng, None, prompt, max_tokens, SamplingParams(temperature=0.0), None,
                               stop_tokens=sorted(prompts.tokenizer.stop_ids), no_repeat_ngram=NO_REPEAT_NGRAM)
    text = prompts.tokenizer.decode([t for t in res.tokens if t not in prompts.tokenizer.stop_ids])
    return {"answer": text, "correct": ev["code"] in text}


def run_policy(policy: str, stream: np.ndarray, imp: np.ndarray, events: list[dict], prompts: Prompts,
               capacity: int, places: list[int], args) -> dict:
    """Stream through one policy: window NLLs, answers at the checkpoints, timings."""
    kw = {"kv_block": args.block} if policy in ("semantic", "novelty") else {}
    if policy == "novelty":
        kw["sem_keep"] = args.keep
    if policy == "semantic" and args.sem_layer is not None:
        kw["sem_layer"] = args.sem_layer
    sink = prompts.sink_tokens
    eng = Engine(args.model, n_sink=len(sink), n_ring=args.n_ring, n_scratch=args.n_scratch, kv_policy=policy,
                 act_precision=args.act_precision, n_threads=args.threads, tokenizer=prompts.tokenizer, **kw)
    eng.prefill_stream(sink)
    base = len(sink)                      # stream index of stream[0]
    want = {p + i for p in places for i in range(args.ppl_window + 1)}
    nll = np.full(stream.size, np.nan)
    asks = {int(c * capacity): c for c in args.cps}
    answers, prefill_s, rss = [], 0.0, []
    pos, chunk = 0, args.prefill_chunk
    while pos < stream.size:
        n = min(chunk, stream.size - pos, *(a - pos for a in asks if a > pos))
        if policy == "novelty":  # a call ends where the line importance changes (the feed's entries are lines)
            change = np.flatnonzero(imp[pos:pos + n] != imp[pos])
            n = int(change[0]) if change.size else n
            eng.native.set_stream_importance(float(imp[pos]))
        piece = stream[pos:pos + n]
        t0 = time.perf_counter()
        if any(pos + i in want for i in range(n + 1)):
            logits = eng.prefill_stream(piece, all_logits=True)
            tgt = stream[pos + 1:pos + n + 1]
            nll[pos + 1:pos + 1 + tgt.size] = nll_of(logits[:tgt.size], tgt)
        else:
            eng.prefill_stream(piece)
        prefill_s += time.perf_counter() - t0
        pos += n
        if pos in asks:
            kept = set(eng.native.kept_stream_index().tolist())
            for ev in events:
                if ev["end"] > pos:
                    continue
                a = ask(eng, prompts, ev, args.max_tokens)
                a.update(checkpoint=asks[pos], code=ev["code"], depth=(pos - ev["start"]) / capacity,
                         retained=all(base + i in kept for i in range(ev["start"], ev["end"])))
                answers.append(a)
            rss.append(rss_mb())
            print(f"  {policy} @{asks[pos]}x: recall {np.mean([a['correct'] for a in answers if a['checkpoint'] == asks[pos]]):.2f}",
                  flush=True)
    st = eng.stats()
    return {"nll": nll, "answers": answers, "prefill_s": prefill_s, "evict_s": st.get("evict_seconds", 0.0),
            "evict": {k: st.get(k) for k in ("evicted_similar", "evicted_oldest", "evicted_important", "shifted_keys")},
            "rss_mb": rss}


def dense_nll(stream: np.ndarray, prompts: Prompts, places: list[int], args) -> np.ndarray:
    """The baseline: each window scored after a fresh prefill of the sink + the n_ring tokens before it."""
    sink = prompts.sink_tokens
    out = np.full(stream.size, np.nan)
    for p in places:
        eng = Engine(args.model, n_sink=len(sink), n_ring=args.n_ring + args.ppl_window + 1, n_scratch=16,
                     n_threads=args.threads, tokenizer=prompts.tokenizer, **BARE_ENGINE.model_dump())
        eng.prefill_stream(sink)
        ctx0 = max(0, p - args.n_ring)
        if p > ctx0:
            eng.prefill_stream(stream[ctx0:p])
        piece = stream[p:p + args.ppl_window + 1]
        logits = eng.prefill_stream(piece, all_logits=True)
        out[p + 1:p + piece.size] = nll_of(logits[:-1], piece[1:])
    return out


def window_ppl(nll: np.ndarray, places: list[int], window: int) -> list[float]:
    return [float(math.exp(np.nanmean(nll[p + 1:p + window + 1]))) for p in places]


def summarize(results: dict, dense: list[float], places: list[int], capacity: int, args) -> dict:
    out: dict = {"recall": {}, "recall_by_depth": {}, "retained": {}, "ppl": {}, "evict_cost": {}}
    for pol, r in results.items():
        ans = r["answers"]
        out["recall"][pol] = {f"{c}x": round(float(np.mean([a["correct"] for a in ans if a["checkpoint"] == c])), 3)
                              for c in args.cps}
        out["retained"][pol] = {f"{c}x": round(float(np.mean([a["retained"] for a in ans if a["checkpoint"] == c])), 3)
                                for c in args.cps}
        bins = {}
        for lo, hi in zip(DEPTH_BINS, DEPTH_BINS[1:]):
            sel = [a["correct"] for a in ans if lo <= a["depth"] < hi]
            if sel:
                bins[f"{lo}-{hi}x"] = [round(float(np.mean(sel)), 3), len(sel)]
        out["recall_by_depth"][pol] = bins
        out["ppl"][pol] = [round(v, 3) for v in window_ppl(r["nll"], places, args.ppl_window)]
        out["evict_cost"][pol] = {"evict_s": round(r["evict_s"], 3), "prefill_s": round(r["prefill_s"], 1),
                                  "share": round(r["evict_s"] / r["prefill_s"], 5) if r["prefill_s"] else None,
                                  **r["evict"]}
    out["ppl"]["dense_recompute"] = [round(v, 3) for v in dense]
    out["ppl_places_x"] = [round(p / capacity, 2) for p in places]
    return out


def plot(summary: dict, out_dir: Path, stem: str) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []

    def save(fig, ax, title: str, name: str) -> None:
        ax.legend()
        ax.set_title(title)
        fig.tight_layout()
        p = out_dir / f"{stem}-{name}.png"
        fig.savefig(p, dpi=110)
        paths.append(str(p))

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = list(next(iter(summary["recall_by_depth"].values())).keys())
    for pol, bins in summary["recall_by_depth"].items():
        ax.plot(range(len(labels)), [bins.get(b, [np.nan])[0] for b in labels], marker="o", label=pol)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("depth of the event at question time (x cache stream capacity)")
    ax.set_ylabel("recall (answer holds the code)")
    ax.set_ylim(-0.05, 1.05)
    save(fig, ax, "Rare-event recall by depth and KV policy", "recall")
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = summary["ppl_places_x"]
    for pol, v in summary["ppl"].items():
        ax.plot(xs, v, marker=".", label=pol, linestyle="--" if pol == "dense_recompute" else "-")
    ax.set_yscale("log")
    ax.set_xlabel("stream position (x cache stream capacity)")
    ax.set_ylabel(f"perplexity of a {summary['ppl_window']}-token window")
    save(fig, ax, "Perplexity along the stream", "ppl")
    plt.close("all")
    return paths


def probe_similarity(prompts: Prompts, args) -> dict:
    """Why `semantic` keeps or loses an event: per layer, the cosine of adjacent block embeddings (the
    policy's sum of hidden states over --block tokens) for the pairs touching a planted event vs the
    others, on the first --probe-tokens of a stream with an event every 2x of a 256-token capacity."""
    a = argparse.Namespace(**{**vars(args), "cps": (args.probe_tokens // 256 + 1,)})
    stream, _, events = build_stream(prompts, 256, args.probe_tokens // 512 + 2, a)
    n = args.probe_tokens - args.probe_tokens % args.block
    eng = Engine(args.model, n_sink=4, n_ring=64, n_scratch=n + 8, n_threads=args.threads, tokenizer=prompts.tokenizer,
                 **BARE_ENGINE.model_dump())
    hid = np.empty((eng.n_layer + 1, n, eng.n_embd), np.float32)
    eng.native.forward_hidden(stream[:n], hid)
    ev_blocks = {b for e in events if e["end"] <= n for b in range(e["start"] // args.block, (e["end"] - 1) // args.block + 1)}
    out = {}
    for layer in range(0, eng.n_layer + 1, max(1, eng.n_layer // 8)):
        b = hid[layer].reshape(n // args.block, args.block, -1).sum(1).astype(np.float64)
        b /= np.linalg.norm(b, axis=1, keepdims=True)
        cos = (b[:-1] * b[1:]).sum(1)
        touch = np.array([i in ev_blocks or i + 1 in ev_blocks for i in range(cos.size)])
        out[layer] = {"event_pairs": round(float(cos[touch].mean()), 4), "other_pairs": round(float(cos[~touch].mean()), 4),
                      "other_p90": round(float(np.quantile(cos[~touch], 0.9)), 4),
                      "events_below_median": round(float((cos[touch] < np.median(cos[~touch])).mean()), 3)}
        print(f"layer {layer}: {out[layer]}", flush=True)
    return {"probe_tokens": n, "event_pairs": int(touch.sum()), "layers": out}


def retention_grid(prompts: Prompts, args) -> list[dict]:
    """`novelty` decides from the line importances and the call chunking alone, not from the model: its
    evictions replayed on a random-weight GGUF (token ids mod its vocabulary) give the exact share of
    events still whole in the cache at each checkpoint (recall's upper bound), for other cache shapes."""
    import tempfile

    from gateway import _native
    from tools.convert import random_gguf

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = str(random_gguf.write_tiny(Path(tmp) / "t.gguf", "qwen2", n_ctx=8192))
        v = random_gguf.TINY_VOCAB
        sink = np.asarray(prompts.sink_tokens, np.int32) % v
        for n_ring in (512, 1024):
            cap = sink.size + n_ring
            stream, imp, events = build_stream(prompts, cap, args.events, args)
            for block, keep in ((32, 0.75), (16, 0.75), (16, 0.5), (16, 0.875), (8, 0.75)):
                e = _native.Engine(path, n_sink=sink.size, n_ring=n_ring, n_scratch=64, kv_policy="novelty",
                                   kv_block=block, sem_keep=keep, act_precision="q8x2", n_threads=args.threads)
                e.prefill_stream(sink)
                pos, kept_share = 0, {}
                for c in args.cps:
                    while pos < int(c * cap):
                        n = min(args.prefill_chunk, int(c * cap) - pos)
                        change = np.flatnonzero(imp[pos:pos + n] != imp[pos])
                        n = int(change[0]) if change.size else n
                        e.set_stream_importance(float(imp[pos]))
                        e.prefill_stream(stream[pos:pos + n] % v)
                        pos += n
                    kept = set(e.kept_stream_index().tolist())
                    whole = [all(sink.size + i in kept for i in range(x["start"], x["end"])) for x in events if x["end"] <= pos]
                    kept_share[f"{c}x"] = round(float(np.mean(whole)), 3)
                out.append({"n_ring": n_ring, "block": block, "keep": keep, "retained": kept_share})
                print(json.dumps(out[-1]), flush=True)
    return out


def replay_kept(stream: np.ndarray, imp: np.ndarray, sink: np.ndarray, policy: str, stops: list[int], args) -> dict:
    """The stream indices (sink included) a policy keeps at each stop, from a replay on a random-weight
    GGUF (token ids mod its vocabulary): sink_ring and novelty decide without the model (retention_grid)."""
    import tempfile

    from gateway import _native
    from tools.convert import random_gguf

    kw = {"kv_block": args.block, "sem_keep": args.keep} if policy == "novelty" else {}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(random_gguf.write_tiny(Path(tmp) / "t.gguf", "qwen2", n_ctx=8192))
        v = random_gguf.TINY_VOCAB
        e = _native.Engine(path, n_sink=sink.size, n_ring=args.n_ring, n_scratch=64, kv_policy=policy,
                           act_precision="q8x2", n_threads=args.threads, **kw)
        e.prefill_stream(sink % v)
        pos = 0
        for stop in stops:
            while pos < stop:
                n = min(args.prefill_chunk, stop - pos)
                if policy == "novelty":
                    change = np.flatnonzero(imp[pos:pos + n] != imp[pos])
                    n = int(change[0]) if change.size else n
                    e.set_stream_importance(float(imp[pos]))
                e.prefill_stream(stream[pos:pos + n] % v)
                pos += n
            out[stop] = e.kept_stream_index().copy()
    return out


def replay_ask(prompts: Prompts, args) -> dict:
    """Recall of --model for what sink_ring and novelty keep, without streaming --model: the kept tokens
    come from replay_kept, and a fresh engine of --model prefilled with exactly them (no eviction) is
    asked. A cache after evictions attends like a fresh window of its kept tokens
    (tests/native/test_semantic_cache.py), so this equals the streamed run up to rounding; the
    streamed 0.5B run checks it. Cost: one cache-sized prefill per policy and checkpoint."""
    sink = np.asarray(prompts.sink_tokens, np.int32)
    capacity = sink.size + args.n_ring
    stream, imp, events = build_stream(prompts, capacity, args.events, args)
    stops = [int(c * capacity) for c in args.cps]
    full = np.concatenate([sink, stream])
    out: dict = {"recall": {}, "retained": {}, "answers": {}}
    for pol in args.policies.split(","):
        kept = replay_kept(stream, imp, sink, pol, stops, args)
        answers = []
        for c, stop in zip(args.cps, stops):
            ring = kept[stop][kept[stop] >= sink.size]
            eng = Engine(args.model, n_sink=sink.size, n_ring=args.n_ring, n_scratch=args.n_scratch,
                         n_threads=args.threads, tokenizer=prompts.tokenizer, **BARE_ENGINE.model_dump())
            eng.prefill_stream(sink)
            for i in range(0, ring.size, args.prefill_chunk):
                eng.prefill_stream(full[ring[i:i + args.prefill_chunk]])
            held = set(kept[stop].tolist())
            for ev in events:
                if ev["end"] > stop:
                    continue
                a = ask(eng, prompts, ev, args.max_tokens)
                a.update(checkpoint=c, code=ev["code"], depth=(stop - ev["start"]) / capacity,
                         retained=all(sink.size + i in held for i in range(ev["start"], ev["end"])))
                answers.append(a)
            sel = [a for a in answers if a["checkpoint"] == c]
            print(f"  {pol} @{c}x: recall {np.mean([a['correct'] for a in sel]):.2f} "
                  f"retained {np.mean([a['retained'] for a in sel]):.2f}", flush=True)
        out["recall"][pol] = {f"{c}x": round(float(np.mean([a["correct"] for a in answers if a["checkpoint"] == c])), 3)
                              for c in args.cps}
        out["retained"][pol] = {f"{c}x": round(float(np.mean([a["retained"] for a in answers if a["checkpoint"] == c])), 3)
                                for c in args.cps}
        out["answers"][pol] = answers
    return out


def _write_partial(results: dict, places: list[int], capacity: int, args) -> None:
    """The policies done so far (no dense baseline yet) to <stem>-partial.json: a long run that is
    stopped early keeps its finished policies."""
    part = summarize(results, [], places, capacity, args)
    part["answers"] = {pol: [{k: a[k] for k in ("checkpoint", "depth", "correct", "retained", "code", "answer")}
                             for a in r["answers"]] for pol, r in results.items()}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{args.stem}-partial.json").write_text(json.dumps(part, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    ap.add_argument("--n-ring", type=int, default=512)
    ap.add_argument("--n-scratch", type=int, default=256)
    ap.add_argument("--block", type=int, default=32, help="semantic: tokens per block")
    ap.add_argument("--sem-layer", type=int, default=None, help="semantic: pooled layer (default n_layer/2)")
    ap.add_argument("--keep", type=float, default=0.75, help="novelty: share of blocks important lines may hold")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--baseline", choices=("warm", "cold"), default="warm",
                    help="warm: the triage's baselines learned before the stream (a running appliance); "
                         "cold: the stream is the appliance's first lines (no new-kind importance while they learn)")
    ap.add_argument("--act-precision", default=EngineSettings().act_precision, choices=("auto", "q8", "q8x2"),
                    help="the streamed policies' activations (default: the appliance's; the gate's is q8x2)")
    ap.add_argument("--prefill-chunk", type=int, default=32, help="stream tokens per call (settings default)")
    ap.add_argument("--events", type=int, default=28, help="planted events (3 are the checkpoint controls)")
    ap.add_argument("--loghub-every", type=int, default=6, help="one Loghub line after every N demo lines")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--ppl-window", type=int, default=128)
    ap.add_argument("--ppl-windows", type=int, default=12)
    ap.add_argument("--checkpoints", default=",".join(map(str, CHECKPOINTS)), help="x capacity (a quick run: 3,6)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out-dir", type=Path, default=REPO / "docs" / "perf")
    ap.add_argument("--stem", default="2026-12-02-long-stream")
    ap.add_argument("--probe", action="store_true", help="only the block-similarity probe of each layer")
    ap.add_argument("--probe-tokens", type=int, default=2048)
    ap.add_argument("--retention", action="store_true", help="only the novelty retention grid (model-free replay)")
    ap.add_argument("--replay-ask", action="store_true",
                    help="recall of --model for the tokens sink_ring/novelty keep (replayed), without streaming it")
    args = ap.parse_args()
    args.cps = tuple(int(c) for c in args.checkpoints.split(","))

    t_start = time.time()
    prompts = Prompts.for_model(args.model)
    if args.retention:
        print_result({"model_tokenizer": args.model, "grid": retention_grid(prompts, args)})
        return
    if args.replay_ask:
        t0 = time.time()
        res = replay_ask(prompts, args)
        args.out_dir.mkdir(parents=True, exist_ok=True)
        (args.out_dir / f"{args.stem}.json").write_text(json.dumps(res, indent=1))
        del res["answers"]
        print_result({"model": args.model, "n_ring": args.n_ring, "block": args.block, "keep": args.keep,
                      **res, "cpu": cpu_here(), "seconds": round(time.time() - t0)})
        return
    if args.probe:
        print_result({"model": args.model, "block": args.block, **probe_similarity(prompts, args)})
        return
    capacity = len(prompts.sink_tokens) + args.n_ring
    stream, imp, events = build_stream(prompts, capacity, args.events, args)
    places = ppl_places(stream.size, capacity, args.ppl_windows, args.ppl_window)
    print(f"capacity {capacity} (sink {len(prompts.sink_tokens)} + ring {args.n_ring}), stream {stream.size} tokens, "
          f"{len(events)} events ({sum(e['novel'] for e in events)} novel to triage), "
          f"{float(imp.mean()):.3f} of the tokens novel", flush=True)
    results = {}
    for pol in args.policies.split(","):
        t0 = time.time()
        results[pol] = run_policy(pol, stream, imp, events, prompts, capacity, places, args)
        print(f"{pol}: {time.time() - t0:.0f} s", flush=True)
        _write_partial(results, places, capacity, args)
    dense = window_ppl(dense_nll(stream, prompts, places, args), places, args.ppl_window)
    summary = summarize(results, dense, places, capacity, args)
    summary["ppl_window"] = args.ppl_window
    summary["answers"] = {pol: [{k: a[k] for k in ("checkpoint", "depth", "correct", "retained", "code", "answer")}
                                for a in r["answers"]] for pol, r in results.items()}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{args.stem}.json").write_text(json.dumps(summary, indent=1))
    summary["plots"] = plot(summary, args.out_dir, args.stem)
    del summary["answers"]
    summary.update(model=args.model, act_precision=args.act_precision, baseline=args.baseline, n_ring=args.n_ring, capacity=capacity, stream_tokens=int(stream.size),
                   events=len(events), events_novel=sum(e["novel"] for e in events),
                   novel_token_share=round(float(imp.mean()), 4), keep=args.keep, block=args.block, sem_layer=args.sem_layer, cpu=cpu_here(),
                   seconds=round(time.time() - t_start))
    print_result(summary)


if __name__ == "__main__":
    main()
