"""`POST /ask` and `POST /ask/stream` (Server-Sent Events)."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from ninja import Router

from access.auth import CallerRequest
from answering.api_schemas import AskOutcome, AskRequest, ask_body
from answering.services import AnswerRequest, ask
from answering.sse import SSEFrames, sse_response
from answering.streaming import RecordedEvents, ask_stream_open
from core.api_schemas import ErrorBody
from core.config import get_config
from retrieval.api_schemas import filters_checked
from traces.recording import Trace, trace_of, trace_record, trace_ref

router = Router(tags=["answering"])
ERRORS = {code: ErrorBody for code in (401, 404, 422, 500, 502, 503, 504)}


@router.post("/ask", response={200: AskOutcome, **ERRORS},
             summary="Answer from the knowledge base with citations, or say it has no answer")
def ask_view(request: CallerRequest, payload: AskRequest) -> dict[str, Any]:
    trace = trace_of(request)
    answer = ask(_answer_request(request, payload, trace=trace), config=get_config())
    trace_record(trace, *answer.measures)
    return ask_body(answer, trace_id=trace.id if trace is not None else None)


@router.post("/ask/stream", response={200: None, **ERRORS},
             summary="The same answer as /ask, streamed as Server-Sent Events",
             description="Events in order: `retrieval`, `delta` (repeated), `citations`, "
                         "`usage`, `done`; an `error` event with the unified error body if "
                         "generation fails after the stream started (or, with `on_llm_error: "
                         "sources`, a `notice` event and the stream goes on).")
def ask_stream_view(request: CallerRequest, payload: AskRequest) -> StreamingHttpResponse:
    trace = trace_of(request)
    stream = ask_stream_open(_answer_request(request, payload, trace=trace), config=get_config())
    trace_record(trace, stream.plan.measures)
    events = RecordedEvents(stream, plan=stream.plan, trace=trace)
    return sse_response(SSEFrames(events, closes=events))


def _answer_request(request: CallerRequest, payload: AskRequest, *,
                    trace: Trace | None) -> AnswerRequest:
    return AnswerRequest(question=payload.question,
                         scope=request.auth.scope(slugs=payload.knowledge_bases),
                         top_k=payload.top_k, fallback=payload.fallback,
                         on_llm_error=payload.on_llm_error,
                         filters=filters_checked(payload.filters),
                         trace=trace_ref(trace))
