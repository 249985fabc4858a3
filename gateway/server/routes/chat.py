"""POST /v1/chat/completions (OpenAI format; SSE when stream=true) and GET /v1/models. The answer is a
job on the appliance's engine thread; prompt and sources come from gateway/server/retrieval.py.
A full job queue -> 429, an admission refusal -> 503, both with Retry-After.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from gateway.serve.jobs import NotReady, PromptTooLong, QueueFull, Refused
from gateway.serve.prompts import MAX_QUESTION_CHARS
from gateway.server.deps import ApplianceDep, ErrorDetail, KeyDep, ServerSettingsDep
from gateway.server.retrieval import MAX_SOURCES, Prompt, fit_prompt

router = APIRouter(prefix="/v1", tags=["chat"])
MAX_MESSAGES = 32
DEFAULT_MAX_TOKENS = 256
MIN_TEMPERATURE = 1e-3 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.  # below this, sampling is greedy anyway; logits / 1e-300 would overflow
STREAM_DONE = "data: [DONE]\n\n"
# One event of the stream: data is a chat.completion.chunk as JSON, or the literal [DONE] at the end.
SSE_EVENT_SCHEMA = {"type": "object", "required": ["data"],
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"}}}


# pydantic refuses a lone surrogate (JSON "\\ud800") itself; app.py's 422 handler can then echo it.
ChatText = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS)]


class TextPart(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.type: Literal["text"]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.text: ChatText


class ChatMessage(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.model_config = ConfigDict(extra="ignore")
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.role: Literal["system", "developer", "user", "assistant"]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.content: ChatText | Annotated[list[TextPart], Field(min_length=1, max_length=16)]

 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.def text(self) -> str:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    return self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)


class StreamOptions(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.include_usage: bool = False


class ChatRequest(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.model_config = ConfigDict(extra="ignore")    # OpenAI clients send fields we have no use for
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.model: str = Field("linegate", max_length=200)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES, json_schema_extra={
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    "contains": {"type": "object", "properties": {"role": {"const": "user"}}, "required": ["role"]},
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    "description": "at least one message from the operator (role 'user'); the last one is answered"})
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.stream: bool = False
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.stream_options: StreamOptions | None = None
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.max_tokens: int | None = Field(None, ge=1)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.max_completion_tokens: int | None = Field(None, ge=1)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.temperature: float = Field(0.0, ge=0.0, le=2.0)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.# Accepted for OpenAI compatibility; the engine thread samples with temperature alone (greedy at 0).
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.top_p: float = Field(1.0, gt=0.0, le=1.0, description="nucleus sampling (with temperature > 0)")
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.# Bound: the largest integer a JSON number (an IEEE double to most clients) carries exactly. With
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.# 2**63 - 1, a client's 2**63 rounded onto the bound and a schema-valid request got a 422 (a fuzz find).
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.seed: int | None = Field(None, ge=0, le=2**53 - 1, description="sampling seed: same seed, same answer")
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.n: int = Field(1, ge=1, le=1)


class Source(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it."""A stored log line the answer drew on."""
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.kind: Literal["line"] = "line"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.id: int
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.ts: float
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.host: str
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.severity: str
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.text: str


class QuerySource(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it."""The store query the answer's figures come from (gateway/pipeline/query.py): the call the model
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.wrote and its result (a "no_match" result says no line matched; "error" says why it did not run)."""
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.kind: Literal["query"] = "query"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.call: dict[str, Any]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.result: dict[str, Any]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.# The answer's check against this result (gateway/serve/answer/check.py): action "kept", "cited"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.# (the top value added) or "replaced" (the result said plainly), with the figures that failed it.
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.check: dict[str, Any] | None = None


class AssistantMessage(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.role: Literal["assistant"] = "assistant"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.content: str


class Choice(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.index: int
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.message: AssistantMessage
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.finish_reason: Literal["stop", "length"]


class Usage(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.prompt_tokens: int
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.completion_tokens: int
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.total_tokens: int


class ChatCompletion(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.id: str
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.object: Literal["chat.completion"] = "chat.completion"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.created: int
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.model: str
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.choices: list[Choice]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.usage: Usage
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.sources: list[Source | QuerySource]   # log lines the answer drew on (store ids), and the store query


class ModelCard(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.id: str
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.object: Literal["model"] = "model"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.created: int
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.owned_by: str


class ModelList(BaseModel):
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.object: Literal["list"] = "list"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.data: list[ModelCard]


def model_name(request: Request) -> str:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.settings = request.app.state.settings
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return str(settings.engine.model)


@router.get("/models", response_model=ModelList)
def list_models(request: Request, _key: KeyDep) -> ModelList:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return ModelList(data=[ModelCard(id=model_name(request), created=int(request.app.state.started), owned_by="linegate")])


def _retry_after(seconds: float) -> dict[str, str]:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return {"Retry-After": str(max(1, int(seconds + 0.999)))}


def _sources(prompt: Prompt) -> list[Source]:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return [Source(id=r["id"], ts=r["ts"], host=r["host"], severity=r["severity"], text=r["text"]) for r in prompt.sources]


def _query_source(result: dict) -> list[QuerySource]:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it."""The answer's store queries: one per ask of the question (result["queries"]), else its one."""
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.qs = result.get("queries") or ([result["query"]] if result.get("query") else [])
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return [QuerySource(call=q.get("call") or {}, result=q.get("result") or {}, check=q.get("check")) for q in qs]


def _submit(appliance: Any, prompt: Prompt, req: ChatRequest, max_tokens: int, budget_ms: float,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        query: bool = False) -> Any:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it."""The answer job on the engine thread (an asyncio-iterable JobHandle), or the HTTP refusal."""
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.try:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    return appliance.engine_thread.submit_chat(prompt.messages, max_tokens=max_tokens, ttft_budget_ms=budget_ms,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                                        temperature=req.temperature if req.temperature >= MIN_TEMPERATURE else 0.0,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                                        top_p=req.top_p, seed=req.seed, loop=asyncio.get_running_loop(),
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                                        query=query)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.except QueueFull as exc:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(429, f"the engine's job queue is full; retry in {exc.retry_after_s:.0f} s",
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                        headers=_retry_after(exc.retry_after_s)) from None
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.except Refused as exc:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(503, f"admission control refused the job (estimated {exc.estimate_ms:.0f} ms > "
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                             f"budget {exc.budget_ms:.0f} ms to the first token); retry in "
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                             f"{exc.retry_after_s:.0f} s", headers=_retry_after(exc.retry_after_s)) from None
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.except NotReady as exc:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(503, f"the model is not ready: {exc}", headers=_retry_after(5)) from None
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.except PromptTooLong as exc:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(413, f"{exc}: shorten the conversation or max_tokens") from None
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.except ValueError as exc:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(422, str(exc)) from None


@router.post("/chat/completions", response_model=ChatCompletion, responses={
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.200: {"content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.      "description": "JSON, or with stream=true an SSE stream of chat.completion.chunk objects"},
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.413: {"model": ErrorDetail, "description": "body over the limit, or prompt + max_tokens over the scratch"},
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.429: {"model": ErrorDetail, "description": "rate limit, or the job queue is full (Retry-After)"},
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.503: {"model": ErrorDetail, "description": "refused by admission control, or no model loaded (Retry-After)"}})
async def chat_completions(req: ChatRequest, request: Request, appliance: ApplianceDep, _key: KeyDep,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                       server: ServerSettingsDep) -> Any:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.if appliance.engine_thread is None:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(503, "this appliance runs without a model (engine.enabled = false): no chat",
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                        headers=_retry_after(3600))
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.if not appliance.ready:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(503, "the models are still loading", headers=_retry_after(5))
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.max_tokens = min(req.max_completion_tokens or req.max_tokens or DEFAULT_MAX_TOKENS, server.max_chat_tokens)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.messages = [{"role": "system" if m.role == "developer" else m.role, "content": m.text()} for m in req.messages]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.engine_thread = appliance.engine_thread
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.budget_ms = request.app.state.settings.alerts.ttft_budget_ms
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.# The prompt fits what prefill does in a share of the first-token budget; through a store query
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.# there are no quoted lines (the query's call and result take that room); admission decides the rest.
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.fit = engine_thread.answer_budget(budget_ms)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.query = fit.query
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.try:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    prompt, max_tokens = await run_in_threadpool(
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        fit_prompt, appliance.store, messages, max_tokens, fit.n_scratch,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        lambda m: engine_thread.prompt_tokens(m) + fit.reserved, fit.max_prompt_tokens,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        0 if query else MAX_SOURCES)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.except PromptTooLong as exc:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(413, str(exc)) from None
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.except ValueError as exc:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    raise HTTPException(422, str(exc)) from None
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.handle = _submit(appliance, prompt, req, max_tokens, budget_ms, query)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.cid = "chatcmpl-" + uuid.uuid4().hex[:24]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.created = int(time.time())
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.name = model_name(request)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.metrics = request.app.state.metrics
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.sources = _sources(prompt)

 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.if not req.stream:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    pieces: list[str] = []
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    result: dict = {}
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    # Nothing reads a plain response until it is complete, so a client that goes away is only
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    # noticed by waiting for its disconnect: then the job is cancelled like an abandoned stream.
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    watcher = asyncio.create_task(_cancel_on_disconnect(request, handle))
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    try:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        async for ev in handle:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            if ev["type"] == "token":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                pieces.append(ev["text"])
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            elif ev["type"] == "error":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                raise HTTPException(500, ev["message"])
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            elif ev["type"] == "restart":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                pieces.clear()                 # its tokens so far are void: it runs again
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            elif ev["type"] == "done":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                result = ev["result"]          # (a query event's result is the query's, not the job's)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    finally:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        watcher.cancel()
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        handle.cancel()   # no-op once done; stops the engine if this request was abandoned
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    _count(metrics, result)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    return ChatCompletion(id=cid, created=created, model=name,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                          choices=[Choice(index=0, message=AssistantMessage(content="".join(pieces)),
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                                          finish_reason=_finish(result))],
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                          usage=_usage(result), sources=[*sources, *_query_source(result)])

 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.async def events() -> AsyncIterator[str]:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    def chunk(delta: dict, finish: str | None = None, **extra: Any) -> str:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": name,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"

 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    try:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        yield chunk({"role": "assistant", "content": ""})
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        result: dict = {}
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        async for ev in handle:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            if ev["type"] == "token":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                if ev["text"]:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                    yield chunk({"content": ev["text"]})
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            elif ev["type"] == "error":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                yield "data: " + json.dumps({"error": {"message": ev["message"], "type": "engine_error"}}) + "\n\n"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                return
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            elif ev["type"] == "done":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                result = ev["result"]
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        _count(metrics, result)
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        # The last chunk carries the finish reason and the sources (an extra field OpenAI clients keep).
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        yield chunk({}, _finish(result), sources=[s.model_dump() for s in [*sources, *_query_source(result)]])
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        if req.stream_options and req.stream_options.include_usage:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": name,
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                    "choices": [], "usage": _usage(result).model_dump()}
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.            yield "data: " + json.dumps(body) + "\n\n"
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        yield STREAM_DONE
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    finally:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        handle.cancel()   # client gone: the engine stops at its next token

 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return StreamingResponse(events(), media_type="text/event-stream",
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _cancel_on_disconnect(request: Request, handle: Any) -> None:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it."""The body is read already: the next message the server gives is the client's disconnect."""
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.while True:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    message = await request.receive()
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    if message["type"] == "http.disconnect":
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        handle.cancel()
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.        return


def _count(metrics: Any, result: dict) -> None:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.metrics.chat_tokens.inc(result["completion_tokens"])
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.check = (result.get("query") or {}).get("check")
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.if check:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.    metrics.answer_checks.labels(check["action"]).inc()


def _finish(result: dict) -> str:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return "length" if result.get("finish_reason") == "length" else "stop"


def _usage(result: dict) -> Usage:
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.p, c = int(result.get("prompt_tokens", 0)), int(result.get("completion_tokens", 0))
 (the top value added) or "replaced" (the result said plainly), with the figures that failed it.return Usage(prompt_tokens=p, completion_tokens=c, total_tokens=p + c)
