"""An engine-thread stand-in for the chat route's tests (helper module, imported as
tests.server.stand_in_engine; not a test): ready, an answer budget with room, 10 prompt tokens, and each
chat job's events emitted by the test's `events(handle)` on a thread of its own."""

from __future__ import annotations

import threading
from typing import Callable

from gateway.serve.engine_thread import AnswerBudget
from gateway.serve.jobs import JobHandle


class StandInEngine:
    def __init__(self, events: Callable[[JobHandle], None]) -> None:
        self.events = events
        self.handles: list[JobHandle] = []      # every job submitted, in order
        self.ready, self.error = True, None

    def answer_budget(self, ttft_budget_ms):
        return AnswerBudget(None, False, 0, 2048)

    def prompt_tokens(self, messages):
        return 10

    def submit_chat(self, messages, *, loop, **kw) -> JobHandle:
        h = JobHandle(loop=loop)
        self.handles.append(h)
        threading.Thread(target=self.events, args=(h,), daemon=True).start()
        return h
