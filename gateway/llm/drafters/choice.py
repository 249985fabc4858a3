"""`drafter = "auto"`: the drafter chosen by timing, once per machine, as the kernel plan is.

Why: whether a drafter pays depends on the machine (the box's model: the NPU draft 1.00x on shared
DRAM, the n-gram 1.34x; docs/perf/2026-12-02-box-cost-model.md), so a rule cannot pick it. At first
start the candidates (target-only, n-gram, the model draft: on the NPU where it can start, else native
where the draft GGUF is present) decode the same short answer to a short log excerpt, greedily, in
the target's scratch; each must give target-only's tokens (greedy output is identical by
construction; one that differs, or fails, is skipped with its reason). The fastest is kept, and a
candidate that does more work (ngram over none, a model over ngram) only when MIN_GAIN faster. The
choice is cached (choice_cache.py) and reused while its key holds. Measured: docs/perf/2026-12-04-drafter-choice.md.
Knows nothing about the appliance.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Callable, Sequence

from gateway.llm.drafters import choice_cache
from gateway.llm.drafters.base import Drafter, Proposal
from gateway.llm.drafters.choice_timing import race
from gateway.llm.drafters.model import default_paths, rknn_ready

log = logging.getLogger(__name__)

N_NEW = 32          # tokens of the timed answer: a short one, as the issue asks
ROUNDS = 3          # runs per candidate, interleaved; the best kept (a loaded host only slows a run)
SCREEN = 0.5        # below this x the fastest after one run each: not run again
WARMUP = 4          # tokens decoded untimed first: the first steps after a load run cold
BUDGET_S = 60.0     # past this (from the first build) no further round starts
MIN_GAIN = 0.05     # a candidate doing more work must beat every simpler one by this much
ORDER = ("none", "ngram", "model:native", "model:onnx", "model:rknn")   # simplest first
_active: dict = {"configured": None}   # the last choice in this process (active())

# The timed job: an alert on a line of a factory's log, as the appliance explains one. Lines with the
# repeats a line's log has, so the n-gram drafter sees what it sees in service.
LINES = "\n".join([
    "10:01:02 line3 filler INFO heater zone 2 temperature 81.2 C",
    "10:01:03 line3 capper INFO torque 2.31 Nm ok",
    "10:01:04 line3 filler INFO heater zone 2 temperature 81.6 C",
    "10:01:05 line3 conveyor WARN belt 2 speed 0.92 m/s below setpoint",
    "10:01:06 line3 filler WARN heater zone 2 temperature 84.9 C above limit",
    "10:01:07 line3 capper INFO torque 2.29 Nm ok",
    "10:01:08 line3 filler ERROR heater zone 2 overtemperature 88.3 C: heater tripped, filling paused",
    "10:01:09 line3 conveyor WARN belt 2 stopped by filler interlock",
])
QUESTION = ("ALERT (error) on line3 filler: heater zone 2 overtemperature. Quote the alerting line exactly, "
            "then explain it, its likely cause given the lines before it, and what to check.")


class TargetOnly(Drafter):
    """The choice "none" where a drafter object is expected: proposes nothing, so each step is one
    target forward of one token, as plain decoding."""
    name = "none"

    def propose(self, context_tokens: Sequence[int], k: int) -> Proposal:
        return [], None


def active() -> dict:
    """The last drafter choice in this process: configured, spec, why, figures, skipped, path (cache file)."""
    return dict(_active)


def under_test() -> bool:
    return "PYTEST_CURRENT_TEST" in os.environ


def candidate_specs(draft_model: str | None = None) -> tuple[list[str], dict[str, str]]:
    """(the specs to time, simplest first; {spec: why it is not a candidate})."""
    specs, skipped = ["none", "ngram"], {}
    ok, why = rknn_ready(draft_model)
    if ok:
        return specs + ["model:rknn"], skipped
    skipped["model:rknn"] = why
    gguf = default_paths(draft_model)[0]
    if gguf.is_file():
        specs.append("model:native")
    else:
        skipped["model:native"] = f"no draft model at {gguf}"
    return specs, skipped


def static_choice(specs: Sequence[str]) -> str:
    """What `auto` runs when it may not time (under pytest, or timing off): the NPU draft when it can
    start, else the n-gram drafter (the rule before timing)."""
    return "model:rknn" if "model:rknn" in specs else "ngram"


def timing_prompt(tokenizer) -> tuple[list[int], list[int]]:
    """(the timed job's prompt tokens, the stop ids) for this target's tokenizer."""
    content = f"Lines:\n{LINES}\n{QUESTION}"
    if getattr(tokenizer, "chat_template", None) is not None:
        prompt = tokenizer.encode_chat([{"role": "user", "content": content}])
    else:
        prompt = tokenizer.encode(content)
    return list(prompt), sorted(int(t) for t in getattr(tokenizer, "stop_ids", ()))


def pick(best: dict[str, float]) -> str:
    """The simplest candidate (ORDER) within MIN_GAIN of the fastest: one that does more work must pay."""
    fastest = max(best.values())
    return next(s for s in sorted(best, key=ORDER.index) if best[s] * (1 + MIN_GAIN) >= fastest)


def explain(chosen: str, best: dict[str, float], skipped: dict[str, str]) -> str:
    """The choice and the figures behind it, in one line."""
    base = best["none"]
    timed = ", ".join(f"{s} {v:.2f} tok/s ({v / base:.2f}x)" for s, v in sorted(best.items(), key=lambda kv: -kv[1]))
    out = f"fastest within {MIN_GAIN:.0%} and simplest: {chosen}; timed {timed}"
    if skipped:
        out += "; skipped " + "; ".join(f"{s}: {why}" for s, why in skipped.items())
    return out


def choose_drafter(engine, build: Callable[[str], Drafter | None], *, draft_model: str | None = None,
                   cache_dir: str | os.PathLike | None = None, timing: str = "auto",
                   prompt: Sequence[int] | None = None, stops: Sequence[int] | None = None,
                   clock: Callable[[], float] = time.perf_counter, n_new: int = N_NEW, rounds: int = ROUNDS,
                   budget_s: float = BUDGET_S) -> Drafter:
    """The drafter `auto` runs for `engine` (the target, loaded): the cached choice when its key holds,
    else timed now and cached in cache_dir (None: beside the loaded kernel plan, or not cached).
    timing: "auto" (not under pytest), "on", "off" (the static rule). build(spec) -> a drafter or None
    (make_drafter). The returned drafter carries `.choice` (spec, why, figures); so does active()."""
    if timing not in ("auto", "on", "off"):
        raise ValueError(f"drafter timing must be auto, on or off, got {timing!r}")
    specs, skipped = candidate_specs(draft_model)
    folder = Path(cache_dir) if cache_dir is not None else choice_cache.default_dir()
    key = choice_cache.choice_key(getattr(engine, "path", None), engine.stats()["n_threads"],
                                  getattr(engine, "act_precision", "?"), specs, draft_model)
    doc = choice_cache.load(folder, key) if folder is not None else None
    if doc is not None:
        try:
            return _chosen(build(doc["choice"]), doc["choice"], f"cached: {doc['why']}", doc, folder)
        except Exception as exc:
            log.warning("drafter choice %s cannot start (%s): timed again", doc["choice"], exc)
    if timing == "off" or (timing == "auto" and under_test()):
        spec = static_choice(specs)
        why = f"not timed ({'timing off' if timing == 'off' else 'under pytest'}): the NPU draft if it starts, else ngram"
        return _chosen(build(spec), spec, why, None, None)
    if prompt is None:
        prompt, stop_ids = timing_prompt(engine.tokenizer)
        stops = stop_ids if stops is None else stops
    try:
        r = race(engine, build, specs, prompt, stops or (), n_new=n_new, rounds=rounds, budget_s=budget_s,
                 warmup=WARMUP, screen=SCREEN, clock=clock)
    except Exception as exc:
        spec = static_choice(specs)
        log.warning("drafter timing failed (%s): %s runs", exc, spec)
        return _chosen(build(spec), spec, f"timing failed ({type(exc).__name__}: {exc}): {spec}", None, None)
    spec = pick(r.best)
    r.close_all_but(spec)
    skipped.update(r.skipped)
    figures = {s: {"tok_s": round(b, 3), "runs": [round(v, 3) for v in r.tok_s[s]]} for s, b in r.best.items()}
    doc = choice_cache.document(key, spec, explain(spec, r.best, skipped), figures, skipped, r.seconds)
    doc["n_tokens"] = r.n_tokens
    if folder is not None:
        log.info("drafter choice cached in %s", choice_cache.save(doc, folder))
    log.info("drafter timed in %.1f s: %s", r.seconds, doc["why"])
    return _chosen(r.drafters.get(spec), spec, doc["why"], doc, folder)


def _chosen(drafter: Drafter | None, spec: str, why: str, doc: dict | None, folder: Path | None) -> Drafter:
    """The drafter that runs, labelled with its choice (TargetOnly for "none")."""
    drafter = drafter if drafter is not None else TargetOnly()
    drafter.choice = {"configured": "auto", "spec": spec, "why": why,
                      "figures": (doc or {}).get("figures"), "skipped": (doc or {}).get("skipped"),
                      "path": str(choice_cache.choice_path(folder)) if folder is not None and doc is not None else None}
    _active.clear()
    _active.update(drafter.choice)
    return drafter


def cached_status(cache_dir: str | os.PathLike, target_path: str | os.PathLike | None, n_threads: int,
                  act_precision: str, draft_model: str | None = None) -> dict:
    """What `auto` will run, as far as the cache tells without loading a model (`linegate doctor`):
    state "cached" (choice, why, figures), "stale" (the next start times again: why) or "untimed";
    with the candidates a timing would run and those left out."""
    specs, skipped = candidate_specs(draft_model)
    out = {"state": "untimed", "candidates": specs, "not_candidates": skipped,
           "path": str(choice_cache.choice_path(cache_dir))}
    doc = choice_cache.read(cache_dir)
    if doc is None:
        return out
    stale = choice_cache.mismatch(doc, choice_cache.choice_key(target_path, n_threads, act_precision, specs, draft_model))
    out.update({"state": "stale", "stale": stale} if stale else
               {"state": "cached", "choice": doc["choice"], "why": doc.get("why"), "figures": doc.get("figures"),
                "created": doc.get("created")})
    return out
