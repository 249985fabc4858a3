"""`linegate doctor`: what this machine runs the model with (CPU, kernels, the kernel plan, the drafter
and why), `--calibrate` to time the kernels now and keep the fastest (gateway/llm/kernel_plan.py), and
`--time-drafter` to time the drafters as `auto` does at first start (gateway/llm/drafters/choice.py).

Knows the settings (where the plan lives, which model and threads); knows nothing about the kernels.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gateway import _native
from gateway.llm import kernel_plan
from gateway.llm.cpus import default_threads
from gateway.llm.drafters import choice as drafter_choice
from gateway.llm.drafters import choice_cache
from gateway.llm.drafters import resolve_draft_spec
from gateway.llm.engine import resolve_act_precision
from gateway.llm.models import ModelError, resolve_model
from gateway.settings import SettingsError, load


def doctor(args: argparse.Namespace) -> int:
    overrides = {"data_dir": Path(args.data_dir)} if args.data_dir else {}
    try:
        settings = load(args.config, **overrides)
    except (SettingsError, ValueError) as exc:
        raise SystemExit(f"linegate: {exc}") from None
    threads = args.threads or settings.engine.n_threads or default_threads()
    cache = settings.cache_dir
    precision = resolve_act_precision(settings.engine.act_precision)   # the precision the engine will run
    print(f"cpu:     {kernel_plan.cpu_model()}")
    print(f"kernels: {_native.quant_simd_name()} (build {kernel_plan.build_id()}), {threads} thread(s), "
          f"activations {precision}")
    if args.calibrate:
        model = resolve_model(args.model or settings.engine.model)
        print(f"calibrating on {model.name} (at most {args.budget:.0f} s) ...", flush=True)
        doc = kernel_plan.calibrate(model, threads, precision, budget_s=args.budget)
        path = kernel_plan.save(doc, cache)
        changed = [c for c in doc["choices"] if c["variant"] != "static"]
        print(f"timed {len(doc['choices'])} shapes in {doc['seconds']:.1f} s (complete: {doc['complete']}); "
              f"{len(changed)} differ from the static plan:")
        for c in changed:
            gain = 1 - c["ms"][c["variant"]] / c["ms"]["static"]
            print(f"  {c['type']} K={c['K']} records={c['n_rec']}: {c['variant']} ({gain:.0%} faster than static)")
    plan = kernel_plan.load(cache, precision)
    print(f"plan:    {plan} ({kernel_plan.plan_path(cache)})")
    if args.time_drafter:
        time_drafter(settings, threads)
    drafter = drafter_status(settings, threads, precision)
    if args.json:
        print(json.dumps({"cpu_model": kernel_plan.cpu_model(), "simd": _native.quant_simd_name(),
                          "build_id": kernel_plan.build_id(), "kernel_plan": plan, "threads": threads,
                          "act_precision": precision, "drafter": drafter}))
    return 0


def time_drafter(settings, threads: int) -> None:
    """Time the drafter candidates now, as `auto` does at first start (the settings' target, its sink
    prefilled, the kernel plan loaded), replacing the cached choice."""
    from gateway.llm.drafters import make_drafter
    from gateway.llm.engine import Engine
    from gateway.serve.prompts import Prompts
    e = settings.engine
    model = resolve_model(e.model)
    prompts = Prompts.for_model(model)
    print(f"timing the drafters on {model.name} (about a minute on 2 cores) ...", flush=True)
    engine = Engine(str(model), n_sink=max(e.n_sink, len(prompts.sink_tokens)), n_ring=e.n_ring,
                    n_scratch=e.n_scratch, n_threads=threads, tokenizer=prompts.tokenizer, kv_policy=e.kv_policy,
                    kv_block=e.kv_block, act_precision=e.act_precision)
    engine.prefill_stream(prompts.sink_tokens)
    choice_cache.choice_path(settings.cache_dir).unlink(missing_ok=True)
    make_drafter("auto", engine, n_threads=threads, choice_dir=settings.cache_dir, choice_timing="on").close()


def drafter_status(settings, threads: int, precision: str) -> dict:
    """Print what the drafter setting runs and why: for `auto`, the timed choice and its figures from
    the cache (gateway/llm/drafters/choice.py), or that the next start times it. Returns it for --json."""
    configured = settings.engine.drafter
    if configured != "auto":
        try:
            spec, why = resolve_draft_spec(configured, settings.engine.drafter_fallback)
        except ValueError as exc:
            spec, why = None, str(exc)
        print(f"drafter: {configured} -> {spec} ({why})")
        return {"configured": configured, "spec": spec, "why": why}
    try:
        target = resolve_model(settings.engine.model)
    except ModelError as exc:
        target = None
        print(f"drafter: auto (the target is not here: {exc})")
    st = drafter_choice.cached_status(settings.cache_dir, target, threads, precision)
    left_out = "".join(f"; no {s}: {w}" for s, w in st["not_candidates"].items())
    if st["state"] == "cached":
        print(f"drafter: auto -> {st['choice']} (timed {st['created']}, {st['path']})")
        print(f"  why: {st['why']}")
    elif st["state"] == "stale":
        print(f"drafter: auto, cached choice not reused ({st['stale']}): the next start times "
              f"{', '.join(st['candidates'])}{left_out}")
    else:
        print(f"drafter: auto, not timed yet: the first start times {', '.join(st['candidates'])}{left_out}")
    return {"configured": "auto", "spec": st.get("choice"), **st}


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="show the CPU, kernels, kernel plan and drafter; --calibrate times the kernels, "
                                      "--time-drafter the drafters")
    p.add_argument("--config", type=Path, help="settings TOML file")
    p.add_argument("--data-dir", help="the appliance's folder (the plan: <data-dir>/cache/kernel_plan.json)")
    p.add_argument("--calibrate", action="store_true", help="time the kernel variants now and keep the fastest")
    p.add_argument("--time-drafter", action="store_true",
                   help="time the drafter candidates now, as engine.drafter = \"auto\" does at first start, and keep the fastest")
    p.add_argument("--model", help="model to calibrate on (default: the settings' engine.model)")
    p.add_argument("--threads", type=int, help="threads (default: the settings', else one per performance core)")
    p.add_argument("--budget", type=float, default=kernel_plan.BUDGET_S, help="seconds the calibration may take")
    p.add_argument("--json", action="store_true", help="end with one JSON line")
    p.set_defaults(func=doctor)
