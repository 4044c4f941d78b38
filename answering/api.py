"""`POST /ask` and `POST /ask/stream` (Server-Sent Events)."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from ninja import Router

from access.auth import CallerRequest
from answering.api_schemas import AskOutcome, AskRequest
from answering.services import ask, ask_stream_open
from answering.sse import SSEFrames, sse_response
from core.api_schemas import ErrorBody
from core.config import get_config
from retrieval.api_schemas import filters_checked

router = Router(tags=["answering"])
ERRORS = {code: ErrorBody for code in (401, 404, 422, 500, 502, 503, 504)}


@router.post("/ask", response={200: AskOutcome, **ERRORS},
             summary="Answer from the knowledge base with citations, or say it has no answer")
def ask_view(request: CallerRequest, payload: AskRequest) -> dict[str, Any]:
    return ask(question=payload.question, top_k=payload.top_k, fallback=payload.fallback,
               config=get_config(), scope=request.auth.scope(slugs=payload.knowledge_bases),
               on_llm_error=payload.on_llm_error,
               filters=filters_checked(payload.filters))


@router.post("/ask/stream", response={200: None, **ERRORS},
             summary="The same answer as /ask, streamed as Server-Sent Events",
             description="Events in order: `retrieval`, `delta` (repeated), `citations`, "
                         "`usage`, `done`; an `error` event with the unified error body if "
                         "generation fails after the stream started (or, with `on_llm_error: "
                         "sources`, a `notice` event and the stream goes on).")
def ask_stream_view(request: CallerRequest, payload: AskRequest) -> StreamingHttpResponse:
    events = ask_stream_open(question=payload.question, top_k=payload.top_k,
                             fallback=payload.fallback, config=get_config(),
                             scope=request.auth.scope(slugs=payload.knowledge_bases),
                             on_llm_error=payload.on_llm_error,
                             filters=filters_checked(payload.filters))
    return sse_response(SSEFrames(events, closes=events))
