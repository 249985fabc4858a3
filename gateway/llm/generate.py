"""`linegate generate`: run one prompt through the engine, streaming text (or one JSON object), with
or without a speculative drafter (`--draft`). Knows nothing about the server or the stream.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Sequence

from gateway.llm.drafters import make_drafter
from gateway.llm.engine import Engine
from gateway.llm.models import resolve_model
from gateway.llm.sampling import SamplingParams
from gateway.llm.speculative import K_MAX, GenerateResult, speculative_generate
from gateway.llm.tokenizer import Tokenizer

SCRATCH_MARGIN = 32   # scratch slots beyond prompt + answer: room for a drafted block being verified
# The engine runs outside the appliance: the plain ring (the prompt runs in scratch, the stream stays empty)
# and the precision the correctness gate holds, as gateway/settings.py's BARE_ENGINE names for such engines.
# gateway/llm may not import the settings (tests/test_layout.py); tests/test_defaults.py checks they agree.
GENERATE_KV_POLICY = "sink_ring"
GENERATE_ACT_PRECISION = "q8x2"


def add_draft_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--draft", default="none", metavar="none|ngram|model[:native|onnx|rknn]",
                        help="speculative drafter (default none: target-only decoding)")
    parser.add_argument("--draft-model", default=None,
                        help="draft GGUF for --draft model (default: qwen2.5-coder-0.5b-instruct in the model dir)")
    parser.add_argument("--draft-onnx", default=None,
                        help="exported draft graph for model:onnx (default: next to the draft GGUF, see tools/convert/export_draft_onnx.py)")
    parser.add_argument("--draft-deferred", choices=("on", "off"), default=None,
                        help="draft the next block on a thread while the target verifies (default: on where draft and "
                             "target run on different processors, see gateway.llm.drafters.deferred_default)")


def generate_with_drafter(engine, prompt_tokens: Sequence[int], max_tokens: int, draft_spec: str = "ngram",
                          temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int | None = None,
                          on_token: Callable[[int], bool | None] | None = None, stop_tokens: Sequence[int] | None = None,
                          draft_model: str | None = None, draft_onnx: str | None = None,
                          deferred: bool | None = None, stream_tokens: Sequence[int] | None = None,
                          n_threads: int | None = None, skip_special: bool = False) -> GenerateResult:
    """What `linegate generate [--draft ...]` calls: the drafter built from `draft_spec` (make_drafter), then
    the one decode loop (gateway.llm.speculative.speculative_generate). `engine` is a gateway.llm.engine.Engine.

    stream_tokens: the tokens the engine's stream holds (n-gram lookup context / the draft
    model's own stream); None when the job has no stream. skip_special: leave control tokens out of .text.
    """
    if stop_tokens is None:
        stop_tokens = sorted(getattr(engine.tokenizer, "stop_ids", ()))
    drafter = make_drafter(draft_spec, engine, draft_model=draft_model, draft_onnx=draft_onnx, deferred=deferred,
                           n_threads=n_threads, n_scratch=len(prompt_tokens) + max_tokens + 2 * K_MAX)
    try:
        if drafter is not None and stream_tokens:
            drafter.push_stream(list(stream_tokens))
        return speculative_generate(engine, drafter, prompt_tokens, max_tokens,
                                    SamplingParams(temperature, top_k, top_p), seed, stop_tokens, on_token,
                                    detokenize=lambda ids: engine.tokenizer.decode(ids, skip_special=skip_special))
    finally:
        if drafter is not None:
            drafter.close()


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("generate", help="generate text from a prompt with the native engine")
    p.add_argument("--model", required=True, help="model name, role (target/draft/tests) or GGUF path")
    p.add_argument("--prompt", required=True, help="prompt text (raw, no chat template unless --chat)")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--chat", action="store_true", help="wrap the prompt as a user turn of the chat template")
    p.add_argument("--json", action="store_true", help="print one JSON object (text, tokens, timings) instead of streaming text")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    p.add_argument("--n-scratch", type=int, default=None, help="scratch slots (default: prompt + max tokens)")
    add_draft_argument(p)
    p.set_defaults(func=run)


class _TextStreamer:
    """Prints the decoded text as tokens arrive, holding back an incomplete UTF-8 tail."""

    def __init__(self, tokenizer, out):
        self.tok, self.out, self.ids, self.shown = tokenizer, out, [], 0

    def __call__(self, token: int) -> None:
        self.ids.append(token)
        text = self.tok.decode(self.ids, skip_special=True)
        if text.endswith("\ufffd"):
            return
        self.out.write(text[self.shown:])
        self.out.flush()
        self.shown = len(text)


def _prompt_tokens(tokenizer: Tokenizer, args: argparse.Namespace) -> list[int]:
    if args.chat:
        return tokenizer.encode_chat([{"role": "user", "content": args.prompt}])
    return tokenizer.encode(args.prompt, add_special=True, parse_special=False)


def run(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        print("linegate generate: --max-tokens must be >= 1", file=sys.stderr)
        return 2
    path = resolve_model(args.model)
    tokenizer = Tokenizer.from_gguf(path)
    prompt = _prompt_tokens(tokenizer, args)
    if not prompt:
        print("linegate generate: the prompt encodes to no tokens", file=sys.stderr)
        return 2
    n_scratch = args.n_scratch or len(prompt) + args.max_tokens + SCRATCH_MARGIN
    engine = Engine(path, n_sink=4, n_ring=64, n_scratch=n_scratch, n_threads=args.threads, tokenizer=tokenizer,
                    kv_policy=GENERATE_KV_POLICY, act_precision=GENERATE_ACT_PRECISION)
    streamer = None if args.json else _TextStreamer(tokenizer, sys.stdout)
    draft = getattr(args, "draft", "none") or "none"
    res = generate_with_drafter(
        engine, prompt, args.max_tokens, draft_spec=draft, temperature=args.temperature,
        top_k=args.top_k, top_p=args.top_p, seed=args.seed, on_token=streamer,
        draft_model=getattr(args, "draft_model", None), draft_onnx=getattr(args, "draft_onnx", None),
        deferred=None if getattr(args, "draft_deferred", None) is None else args.draft_deferred == "on",
        n_threads=args.threads, skip_special=True)
    extra = {"finish_reason": res.finish_reason, **res.timings}
    if draft != "none":
        extra |= {"draft": draft, "acceptance": res.acceptance,
                  "tokens_per_target_forward": res.tokens_per_target_forward}
    if args.json:
        print(json.dumps({"text": res.text, "tokens": [int(t) for t in res.tokens],
                          "prefill_tok_s": round(res.prefill_tok_s, 3), "decode_tok_s": round(res.decode_tok_s, 3),
                          "prompt_tokens": len(prompt), **extra}, ensure_ascii=False))
    else:
        print()
    return 0
