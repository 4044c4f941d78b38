"""`GET /v1/models` and `POST /v1/chat/completions`: the knowledge base behind an
OpenAI-compatible API (mounted by localrag_site/openai_api.py, with OpenAI's error shape)."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from ninja import Router

from access.auth import CallerRequest
from answering.sse import sse_response
from answering.streaming import RecordedEvents
from conversations import openai_chat
from conversations.openai_models import openai_model_get, openai_models_list
from conversations.openai_schemas import (
    ChatCompletion,
    ChatCompletionRequest,
    ModelList,
    ModelOut,
    OpenAIErrorBody,
)
from core.config import get_config
from traces.recording import trace_of, trace_record, trace_ref

router = Router(tags=["openai"])
ERRORS = {code: OpenAIErrorBody for code in (400, 401, 404, 429, 500, 502, 503, 504)}


@router.get("/models", response={200: ModelList, **ERRORS},
            summary="The knowledge bases the caller may read, as models")
def models_view(request: CallerRequest) -> dict[str, Any]:
    return {"object": "list", "data": openai_models_list(caller=request.auth)}


@router.get("/models/{model}", response={200: ModelOut, **ERRORS}, summary="One model")
def model_view(request: CallerRequest, model: str) -> dict[str, Any]:
    return openai_model_get(caller=request.auth, model=model)


@router.post("/chat/completions", response={200: ChatCompletion, **ERRORS},
             summary="Answer the last user message from the model's knowledge bases",
             description="With `stream: true`, `text/event-stream` of `chat.completion.chunk` "
                         "objects ending with `data: [DONE]`.")
def chat_completions_view(request: CallerRequest, payload: ChatCompletionRequest
                          ) -> dict[str, Any] | StreamingHttpResponse:
    config = get_config()
    trace = trace_of(request)
    if trace is not None:
        # The middleware cannot tell a stream from the request's path, only from its body.
        trace.operation = "ask_stream" if payload.stream else "ask"
        trace.parameters["openai_model"] = payload.model
    turn = openai_chat.chat_prepare(
        caller=request.auth, model=payload.model,
        messages=[openai_chat.ChatMessage(role=message.role, text=message.text)
                  for message in payload.messages],
        on_llm_error=payload.on_llm_error, config=config,
        trace=trace_ref(trace))
    if not payload.stream:
        answer = openai_chat.chat_answer(turn, config=config)
        trace_record(trace, *answer.measures)
        return openai_chat.chat_completion(turn, answer)
    include_usage = bool(payload.stream_options and payload.stream_options.include_usage)
    stream = openai_chat.chat_events(turn, config=config)
    trace_record(trace, *turn.measures)
    events = RecordedEvents(stream, plan=turn.plan, trace=trace)
    return sse_response(openai_chat.ChatChunks(turn=turn, events=events,
                                               include_usage=include_usage))
