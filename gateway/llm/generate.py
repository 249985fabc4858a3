"""`linegate generate`: run one prompt through the engine, streaming text (or one JSON object).

Knows nothing about the server or the stream; drafters plug in through gateway.llm.speculative's
`--draft` hook (add_draft_argument / generate_speculative) when that module is present.
"""

from __future__ import annotations

import argparse
import json
import sys

SCRATCH_MARGIN = 32   # scratch slots beyond prompt + answer: room for a drafted block being verified


def _speculative():
    try:
        from gateway.llm import speculative
    except ModuleNotFoundError:
        return None
    return speculative if hasattr(speculative, "add_draft_argument") else None


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
    spec = _speculative()
    if spec is not None:
        spec.add_draft_argument(p)
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


def run(args: argparse.Namespace) -> int:
    from gateway.llm.engine import Engine
    from gateway.llm.tokenizer import Tokenizer
    from gateway.llm.models import resolve_model

    if args.max_tokens < 1:
        print("linegate generate: --max-tokens must be >= 1", file=sys.stderr)
        return 2
    path = resolve_model(args.model)
    tokenizer = Tokenizer.from_gguf(path)
    if args.chat:
        prompt = tokenizer.encode_chat([{"role": "user", "content": args.prompt}])
    else:
        prompt = tokenizer.encode(args.prompt, add_special=True, parse_special=False)
    if not prompt:
        print("linegate generate: the prompt encodes to no tokens", file=sys.stderr)
        return 2
    n_scratch = args.n_scratch or len(prompt) + args.max_tokens + SCRATCH_MARGIN
    engine = Engine(path, n_sink=4, n_ring=64, n_scratch=n_scratch, n_threads=args.threads, tokenizer=tokenizer)
    streamer = None if args.json else _TextStreamer(tokenizer, sys.stdout)
    draft = getattr(args, "draft", "none") or "none"
    if draft != "none":
        spec = _speculative()
        res = spec.generate_speculative(
            engine, prompt, args.max_tokens, draft_spec=draft, temperature=args.temperature,
            top_k=args.top_k, top_p=args.top_p, seed=args.seed, on_token=streamer,
            draft_model=getattr(args, "draft_model", None), draft_onnx=getattr(args, "draft_onnx", None),
            deferred=None if getattr(args, "draft_deferred", None) is None else args.draft_deferred == "on",
            n_threads=args.threads)
        prefill_tok_s = (len(prompt) - 1) / (res.prefill_ms / 1e3) if res.prefill_ms > 0 else 0.0
        extra = {"draft": draft, **res.timings, "acceptance": res.acceptance,
                 "tokens_per_target_forward": res.tokens_per_target_forward}
    else:
        res = engine.generate(prompt, args.max_tokens, temperature=args.temperature, top_k=args.top_k,
                              top_p=args.top_p, seed=args.seed, on_token=streamer)
        prefill_tok_s = res.prefill_tok_s
        extra = {"finish_reason": res.finish_reason, "prefill_ms": round(res.prefill_ms, 2),
                 "decode_ms": round(res.decode_ms, 2)}
    if args.json:
        print(json.dumps({"text": res.text, "tokens": [int(t) for t in res.tokens],
                          "prefill_tok_s": round(prefill_tok_s, 3), "decode_tok_s": round(res.decode_tok_s, 3),
                          "prompt_tokens": len(prompt), **extra}, ensure_ascii=False))
    else:
        print()
    return 0
