"""Constrained decoding: token masks that keep generated text inside a regular grammar over bytes.

Knows tokens and strings, nothing of logs. A grammar is built from a few combinators:

  Lit("abc")                   exactly these bytes (str is UTF-8 encoded)
  OneOf(["a", "bc", ...])      one of these literals (compiled as a trie)
  Chars(min, max, deny=b'"')   min..max bytes, none in `deny` (or, with allow=..., each in `allow`)
  Seq(a, b, ...) / Alt(a, b, ...) / Opt(a)   sequence / alternatives / optional

and compiled to a byte NFA; its state sets are memoized as DFA states. `Constraint(grammar, token_bytes,
stop_ids)` masks a vocabulary: a token is allowed when its bytes keep the text a prefix of some sentence
of the grammar; a stop token only once the text is a whole sentence, and then, if the grammar cannot go on,
only a stop token. Control tokens (token_bytes None) are never allowed otherwise.

In the decode loop (gateway.llm.speculative) the mask is applied to every target row before the rule
(`LogitsMask.__call__`), identically to drafts and verification, so speculative decoding stays exact: the
output is distributed as masked target-only decoding (greedy: token for token the masked argmax).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

NEG = -np.inf
_FAR = 1 << 30
GREEDY_PROBES = 64            # candidates tried in logit order before the full mask is computed


# --- grammar -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lit:
    text: str | bytes


@dataclass(frozen=True)
class OneOf:
    options: tuple


@dataclass(frozen=True)
class Chars:
    min: int
    max: int
    deny: bytes = b""
    allow: bytes | None = None


@dataclass(frozen=True)
class Seq:
    parts: tuple


@dataclass(frozen=True)
class Alt:
    parts: tuple


def one_of(options: Iterable[str | bytes]) -> OneOf:
    return OneOf(tuple(dict.fromkeys(options)))


def seq(*parts) -> Seq:
    return Seq(tuple(parts))


def any_of(*parts) -> Alt:
    return Alt(tuple(parts))


def opt(part) -> Alt:
    return Alt((part, Lit(b"")))


def _b(x: str | bytes) -> bytes:
    return x.encode("utf-8") if isinstance(x, str) else x


class _NFA:
    """Nodes with byte edges (a set of bytes -> node) and epsilon edges."""

    def __init__(self) -> None:
        self.edges: list[list[tuple[frozenset[int], int]]] = []
        self.eps: list[list[int]] = []

    def node(self) -> int:
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def build(self, g, start: int) -> int:
        """Adds g from `start`; returns its end node."""
        if isinstance(g, (str, bytes)):
            g = Lit(g)
        if isinstance(g, Lit):
            cur = start
            for byte in _b(g.text):
                nxt = self.node()
                self.edges[cur].append((frozenset([byte]), nxt))
                cur = nxt
            return cur
        if isinstance(g, OneOf):
            end = self.node()
            trie: dict[tuple[int, int], int] = {}
            for option in g.options:
                cur = start
                for byte in _b(option):
                    if (cur, byte) not in trie:
                        trie[(cur, byte)] = self.node()
                        self.edges[cur].append((frozenset([byte]), trie[(cur, byte)]))
                    cur = trie[(cur, byte)]
                self.eps[cur].append(end)
            return end
        if isinstance(g, Chars):
            allowed = frozenset(range(256)) - frozenset(g.deny) if g.allow is None else frozenset(g.allow) - frozenset(g.deny)
            end = self.node()
            cur = start
            for i in range(g.max):
                if i >= g.min:
                    self.eps[cur].append(end)
                nxt = self.node()
                self.edges[cur].append((allowed, nxt))
                cur = nxt
            self.eps[cur].append(end)
            return end
        if isinstance(g, Seq):
            cur = start
            for part in g.parts:
                cur = self.build(part, cur)
            return cur
        if isinstance(g, Alt):
            end = self.node()
            for part in g.parts:
                self.eps[self.build(part, start)].append(end)
            return end
        raise TypeError(f"not a grammar part: {g!r}")


class Grammar:
    """A compiled grammar: start() -> state; step(state, bytes) -> state or None (dead);
    accepting(state); can_continue(state). States are hashable (frozensets of NFA nodes)."""

    def __init__(self, g) -> None:
        self._nfa = _NFA()
        start = self._nfa.node()
        self._final = self._nfa.build(g, start)
        self._start = self._closure({start})
        self._memo: dict[tuple[frozenset, int], frozenset | None] = {}
        self._dist = self._distances()
        self.max_dist = max(d for d in self._dist if d < _FAR)

    def _distances(self) -> list[int]:
        """Per NFA node, the fewest bytes to the final node (0-1 BFS backwards: bytes cost 1, epsilons 0)."""
        n = len(self._nfa.edges)
        back: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for a in range(n):
            for _, b in self._nfa.edges[a]:
                back[b].append((a, 1))
            for b in self._nfa.eps[a]:
                back[b].append((a, 0))
        dist = [_FAR] * n
        dist[self._final] = 0
        dq = deque([self._final])
        while dq:
            b = dq.popleft()
            for a, w in back[b]:
                if dist[b] + w < dist[a]:
                    dist[a] = dist[b] + w
                    (dq.appendleft if w == 0 else dq.append)(a)
        return dist

    def dist(self, state: frozenset) -> int:
        """The fewest bytes that make `state` a whole sentence."""
        return min(self._dist[n] for n in state)

    def _closure(self, nodes: set[int]) -> frozenset:
        stack, seen = list(nodes), set(nodes)
        while stack:
            for m in self._nfa.eps[stack.pop()]:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        return frozenset(seen)

    def start(self) -> frozenset:
        return self._start

    def step_byte(self, state: frozenset, byte: int) -> frozenset | None:
        key = (state, byte)
        if key not in self._memo:
            nxt = {m for n in state for allowed, m in self._nfa.edges[n] if byte in allowed}
            self._memo[key] = self._closure(nxt) if nxt else None
        return self._memo[key]

    def step(self, state: frozenset | None, data: bytes) -> frozenset | None:
        for byte in data:
            if state is None:
                return None
            state = self.step_byte(state, byte)
        return state

    def accepting(self, state: frozenset) -> bool:
        return self._final in state

    def can_continue(self, state: frozenset) -> bool:
        return any(self._nfa.edges[n] for n in state)

    def matches(self, text: str | bytes) -> bool:
        state = self.step(self._start, _b(text))
        return state is not None and self.accepting(state)


# --- token masks ---------------------------------------------------------------------------------

class _TokenTrie:
    """The vocabulary's byte strings as a trie: children[node] = {byte: child}, ids[node] = token ids."""

    def __init__(self, token_bytes: Sequence[bytes | None]) -> None:
        self.children: list[dict[int, int]] = [{}]
        self.ids: list[list[int]] = [[]]
        for tid, data in enumerate(token_bytes):
            if not data:
                continue
            node = 0
            for byte in data:
                nxt = self.children[node].get(byte)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[node][byte] = nxt
                    self.children.append({})
                    self.ids.append([])
                node = nxt
            self.ids[node].append(tid)


class Vocabulary:
    """A model's tokens as bytes (control tokens None) and its stop ids, with their trie: built once per
    tokenizer and shared by every Constraint over it."""

    def __init__(self, token_bytes: Sequence[bytes | None], stop_ids: Iterable[int]) -> None:
        self.token_bytes = list(token_bytes)
        self.stop_ids = sorted(int(t) for t in stop_ids)
        if not self.stop_ids:
            raise ValueError("a vocabulary for constrained decoding needs a stop token (a finished sentence ends on it)")
        self.trie = _TokenTrie(self.token_bytes)

    @classmethod
    def of(cls, tokenizer) -> "Vocabulary":
        """From a gateway.llm.tokenizer.Tokenizer (its control tokens are never text)."""
        special = set(getattr(tokenizer, "special_ids", ()))
        return cls([None if i in special else tokenizer.token_bytes(i) for i in range(tokenizer.n_vocab)],
                   tokenizer.stop_ids)


class Constraint:
    """A grammar over a vocabulary. mask(state) -> bool[V]; advance(state, token) -> state | None;
    choose_greedy(state, logits) -> the masked argmax. Masks are cached per grammar state."""

    def __init__(self, grammar: Grammar, vocab: Vocabulary) -> None:
        self.grammar = grammar
        self.token_bytes = vocab.token_bytes
        self.n_vocab = len(self.token_bytes)
        self.stop_ids = vocab.stop_ids
        self._trie = vocab.trie
        self._masks: dict[frozenset, np.ndarray] = {}

    def advance(self, state: frozenset | None, token: int) -> frozenset | None:
        """The state after `token`; None when the token breaks the grammar (a stop token keeps an accepting state)."""
        if state is None:
            return None
        if token in self.stop_ids:
            return state if self.grammar.accepting(state) else None
        data = self.token_bytes[token] if 0 <= token < self.n_vocab else None
        return self.grammar.step(state, data) if data else None

    def allowed(self, state: frozenset, token: int, room: int | None = None) -> bool:
        """May `token` come next? With `room` (tokens left after this one), only if the text can still
        become a whole sentence in that many tokens (one byte per token at worst)."""
        if token in self.stop_ids:
            return self.grammar.accepting(state)
        if not self.grammar.can_continue(state):
            return False
        nxt = self.advance(state, token)
        return nxt is not None and (room is None or self.grammar.dist(nxt) <= room)

    def _tight(self, room: int | None) -> bool:
        return room is not None and room < self.grammar.max_dist

    def budget_mask(self, state: frozenset, room: int | None) -> np.ndarray:
        """mask(state), less the tokens after which the sentence cannot end within `room` tokens."""
        m = self.mask(state)
        if not self._tight(room):
            return m
        m = m.copy()
        for tid in np.flatnonzero(m):
            if int(tid) not in self.stop_ids and not self.allowed(state, int(tid), room):
                m[tid] = False
        if not m.any():
            m[self.stop_ids] = True
        return m

    def mask(self, state: frozenset) -> np.ndarray:
        m = self._masks.get(state)
        if m is not None:
            return m
        m = np.zeros(self.n_vocab, dtype=bool)
        g, trie = self.grammar, self._trie
        stack = [(0, state)]
        while stack:                      # depth-first over the token trie, pruned where the grammar dies
            node, st = stack.pop()
            for byte, child in trie.children[node].items():
                nxt = g.step_byte(st, byte)
                if nxt is None:
                    continue
                for tid in trie.ids[child]:
                    m[tid] = True
                if trie.children[child]:
                    stack.append((child, nxt))
        if g.accepting(state):
            if not g.can_continue(state):
                m[:] = False
            m[self.stop_ids] = True
        if not m.any():                   # cannot happen for a grammar whose sentences are tokenizable
            m[self.stop_ids] = True
        self._masks[state] = m
        return m

    def choose_greedy(self, state: frozenset, logits: np.ndarray, room: int | None = None) -> int:
        """argmax of logits over the allowed tokens (ties to the lowest id), without a full mask when
        one of the GREEDY_PROBES best tokens is allowed."""
        if state in self._masks and not self._tight(room):
            return int(np.argmax(np.where(self._masks[state], logits[: self.n_vocab], NEG)))
        row = np.array(logits[: self.n_vocab], dtype=np.float64, copy=True)
        for _ in range(GREEDY_PROBES):
            t = int(np.argmax(row))
            if row[t] == NEG:
                break
            if self.allowed(state, t, room):
                return t
            row[t] = NEG
        return int(np.argmax(np.where(self.budget_mask(state, room), logits[: self.n_vocab], NEG)))


class LogitsMask:
    """The decode loop's logits processor for one job: __call__(generated, logits, greedy) -> logits with
    the disallowed tokens at -inf (greedy: every token but the masked argmax, which gives the same argmax).
    `generated` are the job's tokens so far (the prompt excluded). With max_tokens, the text always becomes
    a whole sentence within that many tokens. complete(generated) once it cannot go on (stop there)."""

    def __init__(self, constraint: Constraint, max_tokens: int | None = None) -> None:
        self.c = constraint
        self.max_tokens = max_tokens
        self._states: dict[tuple[int, ...], frozenset | None] = {(): constraint.grammar.start()}

    def state(self, generated: Sequence[int]) -> frozenset | None:
        key = tuple(int(t) for t in generated)
        if key not in self._states:
            self._states[key] = self.c.advance(self.state(key[:-1]), key[-1])
        return self._states[key]

    def __call__(self, generated: Sequence[int], logits: np.ndarray, greedy: bool) -> np.ndarray:
        state = self.state(generated)
        logits = np.asarray(logits)
        if state is None:
            # A row after a draft the grammar rules out: the rule rejects that draft (its masked
            # probability is 0) before this row is reached, so the row is never used. Left as it is.
            return logits
        room = None if self.max_tokens is None else max(self.max_tokens - len(generated) - 1, 0)
        if greedy:
            out = np.full(logits.shape, NEG, dtype=np.float64)
            t = self.c.choose_greedy(state, logits, room)
            out[t] = 0.0
            return out
        m = self.c.budget_mask(state, room)
        out = np.full(logits.shape, NEG, dtype=np.float64)
        out[: self.c.n_vocab] = np.where(m, logits[: self.c.n_vocab], NEG)
        return out

    def complete(self, generated: Sequence[int]) -> bool:
        """True when the text is a whole sentence that cannot go on (stop now)."""
        state = self.state(generated)
        return state is not None and self.c.grammar.accepting(state) and not self.c.grammar.can_continue(state)

    def text_bytes(self, generated: Sequence[int]) -> bytes:
        return b"".join(self.c.token_bytes[t] or b"" for t in generated if t not in self.c.stop_ids)

