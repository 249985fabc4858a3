"""What speculative decoding can reach on bench_spec's log tasks, given the verification cost measured on the host it runs on.

Greedy speculative output is the target's own greedy output, token for token (tests/test_speculative.py),
so one target-only run per task fixes every step's outcome: a drafted token is accepted exactly when it
equals the target's next token. From those outputs and the verify cost curve measured in the same run
(time of a forward of T tokens at the task's context / time of one token), this tool replays:

- ngram_adaptive: the n-gram drafter with the decode loop's own draft-length rule (speculative.adapt_k
  with the measured curve); it should land near bench_spec's measured ngram speedup;
- ngram_oracle: the same look-up, drafting exactly as many tokens as will be accepted: the best any
  draft-length rule can do with this drafter;
- perfect_drafter: every drafted token accepted and free: max over T of T / cost(T), the ceiling of any
  drafter at this verify cost.

Speedups are tokens per unit of one-token forward time (target-only decode = 1). Draft time is left out
(the n-gram look-up measured 0.1-0.2 ms per token in bench_spec, under 1% of a forward).
Prints a table and, as its last line, one JSON object.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from gateway.llm import speculative as spec  # noqa: E402
from gateway.llm.drafters.ngram import lookup  # noqa: E402
from tools.bench.harness import print_result  # noqa: E402


def cost_fn(costs: dict[int, float]) -> Callable[[int], float]:
    """cost(T) in units of a one-token forward, interpolated between the measured sizes."""
    xs = sorted(costs)
    one = costs[1]
    ys = [costs[x] / one for x in xs]
    return lambda t: float(np.interp(t, xs, ys))


def _accepted(draft: Sequence[int], out: Sequence[int], i: int) -> int:
    n = 0
    while n < len(draft) and i + n < len(out) and draft[n] == out[i + n]:
        n += 1
    return n


def simulate_adaptive(context: Sequence[int], out: Sequence[int], costs: dict[int, float]) -> float:
    """Cost (one-token forwards) of producing `out` after `context` with the n-gram drafter and the
    decode loop's adaptive draft length."""
    cost = cost_fn(costs)
    stats = spec.SpecStats(k=min(spec.K_INITIAL, spec.K_MAX))
    for t, c in costs.items():
        stats.costs.observe(t, c * 1e3)
    ctx = [int(t) for t in context]
    total, i = 0.0, 0
    while i < len(out):
        k = min(stats.k, len(out) - i - 1)
        draft = lookup(np.asarray(ctx + list(out[:i]), np.int64), k) if k > 0 else []
        acc = _accepted(draft, out, i)
        total += cost(len(draft) + 1)
        spec.adapt_k(stats, len(draft), acc)
        i += acc + 1
    return total


def simulate_oracle(context: Sequence[int], out: Sequence[int], costs: dict[int, float],
                    k_max: int = spec.K_MAX) -> float:
    """Cost of producing `out` when each step drafts exactly the look-up's tokens that will be accepted."""
    cost = cost_fn(costs)
    ctx = [int(t) for t in context]
    total, i = 0.0, 0
    while i < len(out):
        k = min(k_max, len(out) - i - 1)
        draft = lookup(np.asarray(ctx + list(out[:i]), np.int64), k) if k > 0 else []
        acc = _accepted(draft, out, i)
        total += cost(acc + 1)
        i += acc + 1
    return total


def perfect_bound(costs: dict[int, float]) -> tuple[float, int]:
    """(max over measured T of T / cost(T), that T): every drafted token accepted, drafts free."""
    cost = cost_fn(costs)
    best = max(costs, key=lambda t: t / cost(t))
    return best / cost(best), best


def main(argv: list[str] | None = None) -> int:
    from tools.bench import bench_spec
    from gateway.llm.engine import Engine
    from gateway.llm.models import resolve_model
    from gateway.llm.tokenizer import Tokenizer
    from gateway.settings import BARE_ENGINE

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--tasks", default="summarize,quote,alert")
    args = ap.parse_args(argv)

    target_path = resolve_model(args.target)
    tok = Tokenizer.from_gguf(target_path)
    tasks = [t for t in bench_spec.build_tasks() if t["name"] in args.tasks.split(",")]
    costs = None
    rows = []
    for task in tasks:
        stream = tok.encode("\n".join(task["lines"]) + "\n", parse_special=False)
        prompt = tok.encode_chat([{"role": "system", "content": bench_spec.SYSTEM},
                                  {"role": "user", "content": task["question"]}])
        engine = Engine(str(target_path), n_sink=4, n_ring=bench_spec.N_RING, n_scratch=bench_spec.N_SCRATCH,
                        n_threads=args.threads, tokenizer=tok, **BARE_ENGINE.model_dump())
        engine.prefill_stream(stream)
        if costs is None:
            costs = bench_spec.verify_costs(engine, prompt)
        out = [int(t) for t in engine.generate(prompt, args.max_new).tokens]
        context = list(stream) + list(prompt)
        n = len(out)
        row = {"task": task["name"], "new_tokens": n,
               "ngram_adaptive": round(n / simulate_adaptive(context, out, costs), 3),
               "ngram_oracle": round(n / simulate_oracle(context, out, costs), 3)}
        rows.append((row, n, context, out))
        print(f"{task['name']:10s} {n:4d} tokens  ngram adaptive {row['ngram_adaptive']:.3f}x  "
              f"oracle length {row['ngram_oracle']:.3f}x", file=sys.stderr, flush=True)
    assert costs is not None
    n_all = sum(n for _, n, _, _ in rows)
    adaptive = n_all / sum(simulate_adaptive(c, o, costs) for _, _, c, o in rows)
    oracle = n_all / sum(simulate_oracle(c, o, costs) for _, _, c, o in rows)
    bound, best_t = perfect_bound(costs)
    one = costs[1]
    summary = {"target": args.target, "threads": args.threads, "max_new": args.max_new,
               "verify_cost": {str(t): round(c / one, 3) for t, c in sorted(costs.items())},
               "ngram_adaptive": round(adaptive, 3), "ngram_oracle": round(oracle, 3),
               "perfect_drafter": round(bound, 3), "perfect_drafter_T": best_t,
               "tasks": [r for r, _, _, _ in rows]}
    print(f"all tasks: ngram adaptive {adaptive:.3f}x, oracle length {oracle:.3f}x; any drafter at this verify "
          f"cost at most {bound:.3f}x (T = {best_t})", file=sys.stderr)
    print_result(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
