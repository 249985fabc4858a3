"""Retrieval for chat: store lines (FTS5) matching the hosts, times or terms the operator's question
names; those lines are the answer's sources. gateway.serve.prompts writes them into the question;
the engine thread runs `Prompt.messages` forked from the live stream context (the line's recent logs
already in the KV cache). Knows nothing about HTTP or the engine.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

from gateway.serve.jobs import PromptTooLong
from gateway.serve.answer.question import CLOCK_TEXT, STOP_WORDS, clock, span_s
from gateway.serve.prompts import MAX_QUESTION_CHARS, QUOTE_HEADER, job_turns, with_sources

__all__ = ["MAX_SOURCES", "MIN_ANSWER_TOKENS", "MAX_QUESTION_CHARS", "QUOTE_HEADER", "PromptTooLong", "Hints",
           "Prompt", "known_hosts", "extract_hints", "retrieve", "build_prompt", "fit_prompt"]

MAX_SOURCES = 8              # lines quoted into the prompt and returned as sources
MIN_ANSWER_TOKENS = 64       # quoted lines are dropped before the answer gets shorter than this
MAX_TERMS = 4                # FTS searches per question (one per term: the store ANDs words)
MAX_TERM_CHARS = 64          # a longer word is no search term (a pasted blob; the store refuses > 512)
PER_TERM = 4                 # lines kept per term
KNOWN_HOSTS_SCAN = 1000      # recent lines scanned for host names the question may mention
TIME_WINDOW_S = 120          # "at 14:05" -> lines within +-2 minutes

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{2,}|\d{3,}")


@dataclass
class Hints:
    hosts: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    since: float | None = None
    until: float | None = None

    def any(self) -> bool:
        return bool(self.hosts or self.terms or self.since is not None)


@dataclass
class Prompt:
    messages: list[dict[str, str]]     # chat messages for the job, after the stream context
    sources: list[dict[str, Any]]      # store rows (id, ts, host, severity, text, ...), oldest first
    hints: Hints


def known_hosts(store: Any) -> list[str]:
    return sorted({r["host"] for r in store.search(limit=KNOWN_HOSTS_SCAN) if r["host"]}, key=len, reverse=True)


def extract_hints(question: str, hosts: list[str], now: float | None = None) -> Hints:
    """Hosts (any known host, or a '/'-separated part of one, named in the question), clock times
    ("14:05") and spans ("last 10 minutes", "最近5分钟"), and the remaining content words."""
    now = time.time() if now is None else now
    low = question.lower()
    hints = Hints()
    for h in hosts:
        parts = [h] + [p for p in h.split("/") if len(p) >= 3]
        if any(re.search(r"(?<![\w/])" + re.escape(p.lower()) + r"(?![\w])", low) for p in parts):
            hints.hosts.append(h)
    if (span := span_s(question)) is not None:
        hints.since = now - span
    elif (hms := clock(question)) is not None:
        local_now = datetime.fromtimestamp(now)
        t = local_now.replace(hour=hms[0], minute=hms[1], second=hms[2], microsecond=0)
        if t > local_now + timedelta(minutes=5):   # "at 23:50" asked just after midnight: yesterday
            t -= timedelta(days=1)
        hints.since, hints.until = t.timestamp() - TIME_WINDOW_S, t.timestamp() + TIME_WINDOW_S
    host_words = {p.lower() for h in hints.hosts for p in [h, *h.split("/")]}
    for w in _WORD.findall(CLOCK_TEXT.sub(" ", question)):
        lw = w.lower().strip(".-")
        if (lw in STOP_WORDS or lw in host_words or not 3 <= len(lw) <= MAX_TERM_CHARS
                or lw in (t.lower() for t in hints.terms)):
            continue
        hints.terms.append(w.strip(".-"))
        if len(hints.terms) >= MAX_TERMS:
            break
    return hints


def retrieve(store: Any, hints: Hints, max_sources: int = MAX_SOURCES) -> list[dict[str, Any]]:
    """Store rows for the hints, newest first within each search, merged by id, at most max_sources;
    warning-or-worse lines first, then the newest."""
    found: dict[int, dict[str, Any]] = {}
    window = {"since": hints.since, "until": hints.until}
    hosts = hints.hosts or [None]
    for term in hints.terms:
        for host in hosts:
            for r in store.search(term, host=host, limit=PER_TERM, **window):
                found.setdefault(r["id"], r)
    if not hints.terms and (hints.hosts or hints.since is not None):
        # No words, only where/when: the most severe recent lines there and then.
        for host in hosts:
            for sev in ("warning", None):
                for r in store.search(host=host, severity=sev, limit=PER_TERM, **window):
                    found.setdefault(r["id"], r)
    rows = sorted(found.values(), key=lambda r: (r["severity"] not in ("emergency", "alert", "critical", "error", "warning"),
                                                 -r["id"]))[:max_sources]
    return sorted(rows, key=lambda r: r["id"])


def build_prompt(store: Any, messages: list[dict[str, str]], now: float | None = None,
                 max_sources: int = MAX_SOURCES) -> Prompt:
    """The job's messages: earlier turns as given; the last user turn gets the quoted lines before it.

    The engine thread continues the stream context (system prompt in the sink, the live log in the ring)
    with these messages, so the quoted lines only add what the question names beyond that context."""
    system, turns = job_turns(messages)
    question = turns[-1]["content"]
    hints = extract_hints(question, known_hosts(store), now)
    sources = retrieve(store, hints, max_sources) if hints.any() and max_sources > 0 else []
    if sources:
        turns[-1] = {"role": "user", "content": with_sources(question, sources)}
    return Prompt(messages=system + turns, sources=sources, hints=hints)


def fit_prompt(store: Any, messages: list[dict[str, str]], max_tokens: int, n_scratch: int,
               count_tokens: Callable[[list[dict[str, str]]], int],
               max_prompt_tokens: int | None = None, max_sources: int = MAX_SOURCES) -> tuple[Prompt, int]:
    """The prompt and answer length that fit the engine's scratch (prompt + answer <= n_scratch).

    The answer keeps up to `max_tokens` while at least MIN_ANSWER_TOKENS fit; beyond that, quoted
    lines are halved until they do. They are halved too while the prompt is over max_prompt_tokens
    (what can be prefilled before the first-token deadline); then earlier turns are dropped. Raises
    PromptTooLong when the question alone does not fit the scratch. max_sources=0: no quoted lines (a
    chat answered through a store query gets its lines from the query)."""
    n_sources = max_sources
    while True:
        prompt = build_prompt(store, messages, max_sources=n_sources)
        n_prompt = count_tokens(prompt.messages)
        room = n_scratch - n_prompt
        fast_enough = max_prompt_tokens is None or n_prompt <= max_prompt_tokens
        if (room >= min(max_tokens, MIN_ANSWER_TOKENS) and fast_enough) or n_sources == 0:
            break
        n_sources //= 2
    # Still over the scratch: earlier turns go, oldest first (the question itself stays whole).
    while room < 1 and len(prompt.messages) > 1:
        prompt.messages.pop(0)
        room = n_scratch - count_tokens(prompt.messages)
    if room < 1:
        raise PromptTooLong(f"the conversation needs {n_scratch - room} tokens; the engine's scratch "
                         f"(engine.n_scratch) holds {n_scratch}: shorten it")
    return prompt, min(max_tokens, room)
