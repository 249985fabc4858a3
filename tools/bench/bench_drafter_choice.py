"""The drafter choice the appliance makes at first start (`engine.drafter = "auto"`), run here.

Loads the target as the appliance does (its engine settings, the sink prefilled), then the very call the
engine thread makes (make_drafter("auto", ...)), timing forced on and cached in a fresh folder: each
candidate's greedy tokens/s on the built-in short log excerpt and answer (gateway/llm/drafters/choice.py),
the choice and why. Prints a table and, as its last line, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.bench.harness import print_result  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="qwen2.5-coder-1.5b-instruct", help="target model (name or GGUF path)")
    ap.add_argument("--draft", default=None, help="draft GGUF (default: the 0.5B in the model folder)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=None, help="runs per candidate (default: the appliance's)")
    ap.add_argument("--n-new", type=int, default=None, help="tokens of the timed answer (default: the appliance's)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from gateway.llm import kernel_plan
    from gateway.llm.drafters import choice, make_drafter
    from gateway.llm.engine import Engine
    from gateway.llm.models import resolve_model
    from gateway.serve.prompts import Prompts
    from gateway.settings import EngineSettings

    if args.rounds is not None:
        choice.ROUNDS = args.rounds
    if args.n_new is not None:
        choice.N_NEW = args.n_new
    s = EngineSettings()
    target = resolve_model(args.target)
    prompts = Prompts.for_model(target)
    t0 = time.perf_counter()
    engine = Engine(str(target), n_sink=len(prompts.sink_tokens), n_ring=s.n_ring, n_scratch=s.n_scratch,
                    n_threads=args.threads, tokenizer=prompts.tokenizer, kv_policy=s.kv_policy, kv_block=s.kv_block,
                    act_precision=s.act_precision)
    engine.prefill_stream(prompts.sink_tokens)
    load_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as cache:
        t1 = time.perf_counter()
        drafter = make_drafter("auto", engine, draft_model=args.draft, n_threads=args.threads, choice_dir=cache,
                               choice_timing="on")
        choose_s = time.perf_counter() - t1
        doc = json.loads(Path(cache, "drafter_choice.json").read_text())
    drafter.close()
    prompt, _ = choice.timing_prompt(engine.tokenizer)
    print(f"cpu: {kernel_plan.cpu_model()}, {args.threads} threads, target {target.name}, "
          f"prompt {len(prompt)} tokens, answer {doc.get('n_tokens')} tokens")
    print(f"{'candidate':<16}{'tok/s':>8}{'x none':>8}  runs")
    base = doc["figures"]["none"]["tok_s"]
    for spec, f in sorted(doc["figures"].items(), key=lambda kv: -kv[1]["tok_s"]):
        print(f"{spec:<16}{f['tok_s']:>8.2f}{f['tok_s'] / base:>8.2f}  {f['runs']}")
    for spec, why in doc["skipped"].items():
        print(f"{spec:<16}  skipped: {why}")
    print(f"choice: {doc['choice']} (timing {doc['seconds']:.1f} s, with the draft's load {choose_s:.1f} s; "
          f"target load {load_s:.1f} s)")
    print_result({"bench": "drafter_choice", "cpu_model": kernel_plan.cpu_model(), "threads": args.threads,
                  "target": target.name, "prompt_tokens": len(prompt), "answer_tokens": doc.get("n_tokens"),
                  "choice": doc["choice"], "why": doc["why"],
                  "tok_s": {k: v["tok_s"] for k, v in doc["figures"].items()},
                  "runs": {k: v["runs"] for k, v in doc["figures"].items()}, "skipped": doc["skipped"],
                  "timing_s": doc["seconds"], "choose_s": round(choose_s, 2), "load_s": round(load_s, 2)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
