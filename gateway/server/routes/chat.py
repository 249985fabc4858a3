"""POST /v1/chat/completions (OpenAI format; SSE when stream=true) and GET /v1/models.

The answer is a job on the appliance's engine worker (forked from the live stream context); the
prompt and its sources come from gateway/server/chat.py. 429 when the job queue is full, 503 when
admission control refuses the job; both with Retry-After.
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

from gateway.server.chat import MAX_QUESTION_CHARS, Prompt, build_prompt
from gateway.server.deps import ApplianceDep, KeyDep, ServerSettingsDep

router = APIRouter(prefix="/v1", tags=["chat"])
MAX_MESSAGES = 32
DEFAULT_MAX_TOKENS = 256
STREAM_DONE = "data: [DONE]\n\n"


class TextPart(BaseModel):
    type: Literal["text"]
    text: str = Field(max_length=MAX_QUESTION_CHARS)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant"]
    content: Annotated[str, Field(max_length=MAX_QUESTION_CHARS)] | Annotated[list[TextPart], Field(max_length=16)]

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")    # OpenAI clients send fields we have no use for
    model: str = Field("linegate", max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = Field(None, ge=0, le=2**63 - 1)
    n: int = Field(1, ge=1, le=1)


class Source(BaseModel):
    id: int
    ts: float
    host: str
    severity: str
    text: str


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
    sources: list[Source]         # log lines the answer drew on (store ids)


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


async def _start_job(appliance: Any, prompt: Prompt, req: ChatRequest, max_tokens: int,
                     queue: asyncio.Queue, loop: asyncio.AbstractEventLoop, cancelled: list[bool]) -> Any:
    """Submit the answer job; its tokens arrive on `queue` as str pieces, then a final dict (usage)."""
    from gateway.worker import QueueFull, Refused   # the pipeline's worker owns the engine thread

    def on_piece(piece: str) -> bool:
        loop.call_soon_threadsafe(queue.put_nowait, piece)
        return not cancelled[0]

    def on_done(result: dict) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, result)

    try:
        return appliance.worker.submit_chat(prompt.messages, max_tokens=max_tokens, temperature=req.temperature,
                                            top_p=req.top_p, seed=req.seed, on_piece=on_piece, on_done=on_done)
    except QueueFull as exc:
        raise HTTPException(429, f"the engine's job queue is full; retry in {exc.retry_after_s:.0f} s",
                            headers=_retry_after(exc.retry_after_s)) from None
    except Refused as exc:
        raise HTTPException(503, f"admission control refused the job: it cannot meet its deadline now; "
                                 f"retry in {exc.retry_after_s:.0f} s", headers=_retry_after(exc.retry_after_s)) from None


@router.post("/chat/completions", response_model=ChatCompletion, responses={
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}},
          "description": "JSON, or with stream=true an SSE stream of chat.completion.chunk objects"},
    429: {"description": "job queue full (Retry-After)"}, 503: {"description": "refused by admission control or models not loaded (Retry-After)"}})
async def chat_completions(req: ChatRequest, request: Request, appliance: ApplianceDep, _key: KeyDep,
                           server: ServerSettingsDep) -> Any:
    if not appliance.ready:
        raise HTTPException(503, "the models are still loading", headers=_retry_after(5))
    max_tokens = min(req.max_completion_tokens or req.max_tokens or DEFAULT_MAX_TOKENS, server.max_chat_tokens)
    messages = [{"role": "system" if m.role == "developer" else m.role, "content": m.text()} for m in req.messages]
    prompt = await run_in_threadpool(build_prompt, appliance.store, messages)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    cancelled = [False]
    await _start_job(appliance, prompt, req, max_tokens, queue, loop, cancelled)
    cid = "chatcmpl-" + uuid.uuid4().hex[:24]
    created = int(time.time())
    name = model_name(request)
    metrics = request.app.state.metrics
    sources = _sources(prompt)

    if not req.stream:
        pieces: list[str] = []
        while not isinstance(item := await queue.get(), dict):
            pieces.append(item)
        metrics.chat_tokens.inc(item.get("completion_tokens", 0))
        return ChatCompletion(id=cid, created=created, model=name,
                              choices=[Choice(index=0, message=AssistantMessage(content="".join(pieces)),
                                              finish_reason=item.get("finish_reason", "stop"))],
                              usage=_usage(item), sources=sources)

    async def events() -> AsyncIterator[str]:
        def chunk(delta: dict, finish: str | None = None, **extra: Any) -> str:
            body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": name,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"

        try:
            yield chunk({"role": "assistant", "content": ""})
            while not isinstance(item := await queue.get(), dict):
                yield chunk({"content": item})
            metrics.chat_tokens.inc(item.get("completion_tokens", 0))
            # The last chunk carries the finish reason and the sources (an extra field OpenAI clients keep).
            yield chunk({}, item.get("finish_reason", "stop"), sources=[s.model_dump() for s in sources])
            if req.stream_options and req.stream_options.include_usage:
                body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": name,
                        "choices": [], "usage": _usage(item).model_dump()}
                yield "data: " + json.dumps(body) + "\n\n"
            yield STREAM_DONE
        finally:
            cancelled[0] = True   # client gone: the engine stops at its next token

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _usage(result: dict) -> Usage:
    p, c = int(result.get("prompt_tokens", 0)), int(result.get("completion_tokens", 0))
    return Usage(prompt_tokens=p, completion_tokens=c, total_tokens=p + c)
