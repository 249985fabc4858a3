"""The engine thread reads the stream while a job runs (issue 42 part 3), with the real SmolLM2-135M: lines
that arrive during an answer are read between its steps (counted in stats), the answer is token for token
the one given with reading off, and the stream ends the same."""

from __future__ import annotations

import time

import pytest

from gateway.pipeline.token_queue import ContextFeed, TokenQueue
from gateway.serve.engine_thread import EngineThread
from gateway.serve.prompts import Prompts
from gateway.settings import EngineSettings

pytestmark = pytest.mark.models
TIMEOUT_S = 300
GENEROUS_MS = 600_000


def _wait(cond, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _run(smollm_path, read: bool) -> tuple[list[int], dict, int]:
    """One answer while 12 lines arrive at its first token. -> (its tokens, engine stats, stream checksum)."""
    p = Prompts.for_model(smollm_path)
    config = EngineSettings(model=str(smollm_path), n_ring=512, n_scratch=192, n_threads=2, prefill_chunk=16,
                            queue_size=2, drafter="none", act_precision="q8x2", no_repeat_ngram=0,
                            kernel_calibration="off", read_during_jobs=read)
    w = EngineThread(config, ContextFeed(TokenQueue(8192, 1024), p.log_tokens, window_s=0.0), prompts=p)
    w.start()
    try:
        assert w.wait_ready(TIMEOUT_S)
        now = 1_700_000_000.0                # fixed times: the context text holds them
        for i in range(8):
            w.feed.add(now, "line3/plc", i, f"INFO cycle {i} complete in {40 + i} ms")
        w.notify()
        _wait(lambda: w.feed.queue.backlog_tokens() == 0, "the first lines read")
        time.sleep(0.2)                      # the last chunk's prefill returns

        def arrive(ev: dict) -> None:        # on the engine thread, at the answer's first token
            if ev["type"] == "token" and not arrive.done:
                arrive.done = True
                for i in range(12):
                    w.feed.add(now + 60, "line3/filler", 100 + i, f"WARN filler zone {i % 4} pressure {2.0 + i / 10:.1f} bar")
        arrive.done = False
        h = w.submit_chat([{"role": "user", "content": "Summarise what the line did."}], max_tokens=40,
                          ttft_budget_ms=GENEROUS_MS, on_event=arrive)
        result = h.result(TIMEOUT_S)
        w.notify()
        _wait(lambda: w.feed.queue.backlog_tokens() == 0, "the lines read")
        time.sleep(0.2)
    finally:
        w.stop()
    return result["tokens"], w.stats()["engine"], w.engine.stream_checksum()


def test_lines_arriving_during_an_answer_are_read_during_it_and_change_nothing(smollm_path):
    on_tokens, on, on_sum = _run(smollm_path, True)
    off_tokens, off, off_sum = _run(smollm_path, False)
    assert len(on_tokens) > 2 and on_tokens == off_tokens      # the answer keeps the stream it started with
    assert on["read_during_jobs"] is True and on["stream_chunks_during_jobs"] >= 1
    assert on["stream_tokens_during_jobs"] > 0 and on["job_view_lost_tokens"] == 0
    assert off["read_during_jobs"] is False and off["stream_chunks_during_jobs"] == 0
    assert on_sum == off_sum                                      # the same stream, read during or after
