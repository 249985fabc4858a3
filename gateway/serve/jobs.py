"""Jobs on the engine thread: what a submitted job is (Job), how its output comes back (JobHandle),
and why a job is turned away (QueueFull, Refused, NotReady, PromptTooLong: one class each, for the
appliance and the HTTP routes alike). Knows nothing about the engine or about HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, TypedDict, Union

from gateway.serve.answer.call import TYPICAL_ANSWER_TOKENS, TYPICAL_CALL_TOKENS

log = logging.getLogger(__name__)

TTFT, COMPLETE = "first_token", "complete"
# Queue order: an operator waiting at the line goes ahead of queued alert explanations (the alert
# itself is already out; its explanation can wait). Lower runs first; FIFO within a priority.
PRIORITY = {"chat": 0, "explain": 1}


class QueueFull(Exception):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"engine queue is full; retry after {retry_after_s:.0f} s")
        self.retry_after_s = retry_after_s


class Refused(Exception):
    """Admission control: the job cannot meet its deadline; serve the fallback instead."""

    def __init__(self, retry_after_s: float, estimate_ms: float, budget_ms: float) -> None:
        super().__init__(f"job refused: estimated {estimate_ms:.0f} ms > budget {budget_ms:.0f} ms; "
                         f"retry after {retry_after_s:.0f} s")
        self.retry_after_s = retry_after_s
        self.estimate_ms = estimate_ms
        self.budget_ms = budget_ms


class PromptTooLong(ValueError):
    """The prompt (with the answer's room) does not fit the engine's scratch (engine.n_scratch)."""


class NotReady(RuntimeError):
    """The model is still loading, or failed to load."""


class TokenEvent(TypedDict):
    type: Literal["token"]
    id: int | None                    # None: a checked answer sent whole
    text: str


class QueryEvent(TypedDict, total=False):   # a chat's store query ran (before its answer's tokens)
    type: Literal["query"]
    call: dict
    result: dict
    evidence: dict


class RestartEvent(TypedDict):        # the job was stopped for a higher one: its tokens so far are void
    type: Literal["restart"]


class DoneEvent(TypedDict):
    type: Literal["done"]
    result: dict


class ErrorEvent(TypedDict):
    type: Literal["error"]
    message: str


JobEvent = Union[TokenEvent, QueryEvent, RestartEvent, DoneEvent, ErrorEvent]
EVENT_TYPES = frozenset({"token", "query", "restart", "done", "error"})
FINAL_TYPES = frozenset({"done", "error"})


class JobHandle:
    """A submitted job's output: JobEvents. Tokens ... then done (with the result) or error. A chat
    with a store query sends a query event before its answer. An explanation stopped for an
    operator's question sends restart: its tokens so far are void, it runs again later.
    Thread use: `for ev in handle.events()`; asyncio: submit with loop=..., then `async for ev in handle`.
    `result()` waits for the end; `cancel()` stops generation at the next token."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None,
                 on_event: Callable[[dict], None] | None = None) -> None:
        self._loop = loop
        self._q: queue.Queue = queue.Queue()
        self._aq: asyncio.Queue | None = asyncio.Queue() if loop else None
        self._on_event = on_event
        self._done = threading.Event()
        self._result: dict | None = None
        self._error: str | None = None
        self.cancelled = False

    def _emit(self, ev: JobEvent) -> None:
        if ev["type"] not in EVENT_TYPES:
            raise ValueError(f"not a job event: {ev!r}")
        if ev["type"] == "done":
            self._result = ev["result"]
        elif ev["type"] == "error":
            self._error = ev["message"]
        if self._on_event is not None:
            try:
                self._on_event(ev)
            except Exception:   # a consumer's bug must not kill the engine thread
                log.exception("job event callback failed")
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._aq.put_nowait, ev)  # type: ignore[union-attr]
            except RuntimeError:
                self.cancelled = True   # the consumer's loop is gone
        else:
            self._q.put(ev)
        if ev["type"] in FINAL_TYPES:
            self._done.set()

    def events(self, timeout: float | None = None):
        while True:
            ev = self._q.get(timeout=timeout)
            yield ev
            if ev["type"] in FINAL_TYPES:
                return

    def __aiter__(self):
        return self._aiter()

    async def _aiter(self):
        if self._aq is None:
            raise RuntimeError("job was submitted without an event loop: use events()")
        while True:
            ev = await self._aq.get()
            yield ev
            if ev["type"] in FINAL_TYPES:
                return

    def result(self, timeout: float | None = None) -> dict:
        if not self._done.wait(timeout):
            raise TimeoutError("job did not finish in time")
        if self._error is not None:
            raise RuntimeError(self._error)
        assert self._result is not None
        return self._result

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class Job:
    kind: str                         # "chat" | "explain"
    prompt: list[int]                 # scratch tokens (continuing the open user turn)
    max_tokens: int
    budget_ms: float
    deadline_kind: str                # TTFT (first token) | COMPLETE (whole answer)
    handle: JobHandle
    estimate_ms: float = 0.0
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None           # sampling seed (reproducible answers); None: fresh entropy
    turns: list | None = None         # chat with a store query: the conversation (the engine thread plans the call)
    grammar: Any = None               # the answer decoded under this grammar (gateway.llm.constrained), if any
    submitted: float = field(default_factory=time.monotonic)
    model_ms: float = 0.0             # admission's uncorrected estimate to the deadline point (its outcome feedback)
    preemptions: int = 0              # times an operator's question stopped it to go first (explanations only)
    seq: int = 0                      # FIFO order within its priority (kept when it is put back after a preemption)

    @property
    def deadline(self) -> float:
        return self.submitted + self.budget_ms / 1000.0

    @property
    def held(self) -> bool:
        """A query's answer: checked whole before the client sees any of it."""
        return self.turns is not None

    @property
    def due_at_first_token(self) -> bool:
        """Its deadline is met by its first token (a held answer's first token comes with its end)."""
        return self.deadline_kind == TTFT and not self.held

    def due_at(self, first_token_at: float | None, end: float) -> float:
        """When the client got what the deadline is for: the first token, or the whole answer."""
        return first_token_at if self.due_at_first_token and first_token_at is not None else end


def decode_to_due(deadline_kind: str, max_tokens: int, query: bool, called: bool = False) -> int:
    """Tokens decoded before a job's deadline point: its first token, or all of them. A query's call is
    decoded first (unless `called`: its call is done), and its answer is checked before the client sees
    any of it: the client's first token is the answer's end (priced at a typical answer)."""
    if deadline_kind != TTFT:
        n = max_tokens
    else:
        n = min(max_tokens, TYPICAL_ANSWER_TOKENS) if query else 1
    return n + (TYPICAL_CALL_TOKENS if query and not called else 0)
