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
MIN_TEMPERATURE = 1e-3      # below this, sampling is greedy anyway; logits / 1e-300 would overflow
STREAM_DONE = "data: [DONE]\n\n"
# One event of the stream: data is a chat.completion.chunk as JSON, or the literal [DONE] at the end.
SSE_EVENT_SCHEMA = {"type": "object", "required": ["data"],
                    "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"}}}


# pydantic refuses a lone surrogate (JSON "\\ud800") itself; app.py's 422 handler can then echo it.
ChatText = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS)]


class TextPart(BaseModel):
    type: Literal["text"]
    text: ChatText


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant"]
    content: ChatText | Annotated[list[TextPart], Field(min_length=1, max_length=16)]

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")    # OpenAI clients send fields we have no use for
    model: str = Field("linegate", max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES, json_schema_extra={
        "contains": {"type": "object", "properties": {"role": {"const": "user"}}, "required": ["role"]},
        "description": "at least one message from the operator (role 'user'); the last one is answered"})
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    # Accepted for OpenAI compatibility; the engine thread samples with temperature alone (greedy at 0).
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="nucleus sampling (with temperature > 0)")
    # Bound: the largest integer a JSON number (an IEEE double to most clients) carries exactly. With
    # 2**63 - 1, a client's 2**63 rounded onto the bound and a schema-valid request got a 422 (a fuzz find).
    seed: int | None = Field(None, ge=0, le=2**53 - 1, description="sampling seed: same seed, same answer")
    n: int = Field(1, ge=1, le=1)


class Source(BaseModel):
    """A stored log line the answer drew on."""
    kind: Literal["line"] = "line"
    id: int
    ts: float
    host: str
    severity: str
    text: str


class QuerySource(BaseModel):
    """The store query the answer's figures come from (gateway/pipeline/query.py): the call the model
    wrote and its result (a "no_match" result says no line matched; "error" says why it did not run)."""
    kind: Literal["query"] = "query"
    call: dict[str, Any]
    result: dict[str, Any]
    # The answer's check against this result (gateway/serve/answer/check.py): action "kept", "cited"
    # (the top value added), "corrected" (a misstated figure replaced by the result's), "replaced" (the
    # result said plainly) or "noted" (a count of every line, or of a text matched on its first words),
    # with the figures that failed it.
    check: dict[str, Any] | None = None
    # Where the question's time went, in ms by stage (plan: grounding; call: prompt and decode; query:
    # the store; answer: prompt and decode; read: the stream read between the job's steps).
    timing: dict[str, float] | None = None


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: Literal["stop", "length"]


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    sources: list[Source | QuerySource]   # log lines the answer drew on (store ids), and the store query


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


def model_name(request: Request) -> str:
    settings = request.app.state.settings
    return str(settings.engine.model)


@router.get("/models", response_model=ModelList)
def list_models(request: Request, _key: KeyDep) -> ModelList:
    return ModelList(data=[ModelCard(id=model_name(request), created=int(request.app.state.started), owned_by="linegate")])


def _retry_after(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, int(seconds + 0.999)))}


def _sources(prompt: Prompt) -> list[Source]:
    return [Source(id=r["id"], ts=r["ts"], host=r["host"], severity=r["severity"], text=r["text"]) for r in prompt.sources]


def _query_source(result: dict) -> list[QuerySource]:
    """The answer's store queries: one per ask of the question (result["queries"]), else its one."""
    qs = result.get("queries") or ([result["query"]] if result.get("query") else [])
    return [QuerySource(call=q.get("call") or {}, result=q.get("result") or {}, check=q.get("check"),
                        timing=q.get("timing")) for q in qs]


def _submit(appliance: Any, prompt: Prompt, req: ChatRequest, max_tokens: int, budget_ms: float,
            query: bool = False) -> Any:
    """The answer job on the engine thread (an asyncio-iterable JobHandle), or the HTTP refusal."""
    try:
        return appliance.engine_thread.submit_chat(prompt.messages, max_tokens=max_tokens, ttft_budget_ms=budget_ms,
                                            temperature=req.temperature if req.temperature >= MIN_TEMPERATURE else 0.0,
                                            top_p=req.top_p, seed=req.seed, loop=asyncio.get_running_loop(),
                                            query=query)
    except QueueFull as exc:
        raise HTTPException(429, f"the engine's job queue is full; retry in {exc.retry_after_s:.0f} s",
                            headers=_retry_after(exc.retry_after_s)) from None
    except Refused as exc:
        raise HTTPException(503, f"admission control refused the job (estimated {exc.estimate_ms:.0f} ms > "
                                 f"budget {exc.budget_ms:.0f} ms to the first token); retry in "
                                 f"{exc.retry_after_s:.0f} s", headers=_retry_after(exc.retry_after_s)) from None
    except NotReady as exc:
        raise HTTPException(503, f"the model is not ready: {exc}", headers=_retry_after(5)) from None
    except PromptTooLong as exc:
        raise HTTPException(413, f"{exc}: shorten the conversation or max_tokens") from None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


@router.post("/chat/completions", response_model=ChatCompletion, responses={
    200: {"content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
          "description": "JSON, or with stream=true an SSE stream of chat.completion.chunk objects"},
    413: {"model": ErrorDetail, "description": "body over the limit, or prompt + max_tokens over the scratch"},
    429: {"model": ErrorDetail, "description": "rate limit, or the job queue is full (Retry-After)"},
    503: {"model": ErrorDetail, "description": "refused by admission control, or no model loaded (Retry-After)"}})
async def chat_completions(req: ChatRequest, request: Request, appliance: ApplianceDep, _key: KeyDep,
                           server: ServerSettingsDep) -> Any:
    if appliance.engine_thread is None:
        raise HTTPException(503, "this appliance runs without a model (engine.enabled = false): no chat",
                            headers=_retry_after(3600))
    if not appliance.ready:
        raise HTTPException(503, "the models are still loading", headers=_retry_after(5))
    max_tokens = min(req.max_completion_tokens or req.max_tokens or DEFAULT_MAX_TOKENS, server.max_chat_tokens)
    messages = [{"role": "system" if m.role == "developer" else m.role, "content": m.text()} for m in req.messages]
    engine_thread = appliance.engine_thread
    budget_ms = request.app.state.settings.alerts.ttft_budget_ms
    # The prompt fits what prefill does in a share of the first-token budget; through a store query
    # there are no quoted lines (the query's call and result take that room); admission decides the rest.
    fit = engine_thread.answer_budget(budget_ms)
    query = fit.query
    try:
        prompt, max_tokens = await run_in_threadpool(
            fit_prompt, appliance.store, messages, max_tokens, fit.n_scratch,
            lambda m: engine_thread.prompt_tokens(m) + fit.reserved, fit.max_prompt_tokens,
            0 if query else MAX_SOURCES)
    except PromptTooLong as exc:
        raise HTTPException(413, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    handle = _submit(appliance, prompt, req, max_tokens, budget_ms, query)
    cid = "chatcmpl-" + uuid.uuid4().hex[:24]
    created = int(time.time())
    name = model_name(request)
    metrics = request.app.state.metrics
    sources = _sources(prompt)

    if not req.stream:
        pieces: list[str] = []
        result: dict = {}
        # Nothing reads a plain response until it is complete, so a client that goes away is only
        # noticed by waiting for its disconnect: then the job is cancelled like an abandoned stream.
        watcher = asyncio.create_task(_cancel_on_disconnect(request, handle))
        try:
            async for ev in handle:
                if ev["type"] == "token":
                    pieces.append(ev["text"])
                elif ev["type"] == "error":
                    raise HTTPException(500, ev["message"])
                elif ev["type"] == "restart":
                    pieces.clear()                 # its tokens so far are void: it runs again
                elif ev["type"] == "done":
                    result = ev["result"]          # (a query event's result is the query's, not the job's)
        finally:
            watcher.cancel()
            handle.cancel()   # no-op once done; stops the engine if this request was abandoned
        _count(metrics, result)
        return ChatCompletion(id=cid, created=created, model=name,
                              choices=[Choice(index=0, message=AssistantMessage(content="".join(pieces)),
                                              finish_reason=_finish(result))],
                              usage=_usage(result), sources=[*sources, *_query_source(result)])

    async def events() -> AsyncIterator[str]:
        def chunk(delta: dict, finish: str | None = None, **extra: Any) -> str:
            body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": name,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"

        try:
            yield chunk({"role": "assistant", "content": ""})
            result: dict = {}
            async for ev in handle:
                if ev["type"] == "token":
                    if ev["text"]:
                        yield chunk({"content": ev["text"]})
                elif ev["type"] == "error":
                    yield "data: " + json.dumps({"error": {"message": ev["message"], "type": "engine_error"}}) + "\n\n"
                    return
                elif ev["type"] == "done":
                    result = ev["result"]
            _count(metrics, result)
            # The last chunk carries the finish reason and the sources (an extra field OpenAI clients keep).
            yield chunk({}, _finish(result), sources=[s.model_dump() for s in [*sources, *_query_source(result)]])
            if req.stream_options and req.stream_options.include_usage:
                body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": name,
                        "choices": [], "usage": _usage(result).model_dump()}
                yield "data: " + json.dumps(body) + "\n\n"
            yield STREAM_DONE
        finally:
            handle.cancel()   # client gone: the engine stops at its next token

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _cancel_on_disconnect(request: Request, handle: Any) -> None:
    """The body is read already: the next message the server gives is the client's disconnect."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            handle.cancel()
            return


def _count(metrics: Any, result: dict) -> None:
    metrics.chat_tokens.inc(result["completion_tokens"])
    check = (result.get("query") or {}).get("check")
    if check:
        metrics.answer_checks.labels(check["action"]).inc()


def _finish(result: dict) -> str:
    return "length" if result.get("finish_reason") == "length" else "stop"


def _usage(result: dict) -> Usage:
    p, c = int(result.get("prompt_tokens", 0)), int(result.get("completion_tokens", 0))
    return Usage(prompt_tokens=p, completion_tokens=c, total_tokens=p + c)
