"""How often would the no-repeat n-gram guard (gateway/llm/repetition.py) bend a faithful answer?

An answer that quotes 8 consecutive store lines ("- [#id] HH:MM:SS host LEVEL text", the way answers cite
lines) of each of the 8 Loghub systems, 20 windows each, in Qwen2.5's tokens. For each n: the share of the
answer's tokens the ban would change, and the share of answers with at least one, (a) when the lines are
not in the prompt (quoted from the live log in the ring, which the guard does not see) and (b) when the
prompt holds them (quoted store lines, a query's result: the guard's `allow`).

    .venv/bin/python tools/probes/ngram_ban_rate.py
"""

from __future__ import annotations

from gateway.datasets import loghub_dir
from gateway.llm.models import resolve_model
from gateway.llm.repetition import NoRepeatNgram
from gateway.llm.tokenizer import Tokenizer

NS = (4, 6, 8, 10, 12, 16, 24, 32, 48)


def bent(ids: list[int], n: int, allow: list[int]) -> int:
    g = NoRepeatNgram(n, allow)
    return sum(ids[i] in g.banned(ids[:i]) for i in range(len(ids)))


def main() -> None:
    tok = Tokenizer.from_gguf(resolve_model("qwen2.5-coder-1.5b-instruct"))
    root = loghub_dir()
    systems = sorted(p.name for p in root.iterdir() if (p / f"{p.name}_2k.log").exists())
    answers = []
    for s in systems:
        lines = (root / s / f"{s}_2k.log").read_text(errors="replace").splitlines()
        for start in range(0, 2000, 100):
            quoted = [f"- [#{start + i}] 10:0{i}:00 {s.lower()} INFO {line[:160]}"
                      for i, line in enumerate(lines[start:start + 8])]
            answers.append((tok.encode("Here are the matching lines:\n" + "\n".join(quoted)),
                            tok.encode("\n".join(q[2:] for q in quoted))))
    total = sum(len(a) for a, _ in answers)
    print(f"systems {systems}, {len(answers)} answers, {total} tokens")
    for n in NS:
        ring = [bent(a, n, []) for a, _ in answers]
        held = [bent(a, n, p) for a, p in answers]
        print(f"n={n:2d}  not in prompt: bent tokens {sum(ring) / total:.4f}, answers bent "
              f"{sum(x > 0 for x in ring) / len(answers):.3f}  |  in prompt: bent tokens {sum(held) / total:.4f}, "
              f"answers bent {sum(x > 0 for x in held) / len(answers):.3f}")


if __name__ == "__main__":
    main()
