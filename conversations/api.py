"""`/conversations` and `/messages/{id}/feedback`: questions that keep their context."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from ninja import Router
from ninja.responses import Status

from access.auth import CallerRequest
from answering.sse import SSEFrames, sse_response
from answering.streaming import RecordedEvents
from conversations import services
from conversations.api_schemas import (
    ConversationCreate,
    ConversationCreated,
    ConversationOut,
    ConversationRename,
    ConversationSummary,
    FeedbackIn,
    FeedbackRecorded,
    MessageAsk,
    TurnResponse,
    turn_body,
)
from conversations.selectors import (
    MESSAGES_PAGE_DEFAULT,
    MessagesPage,
    conversation_dict,
    conversation_summary,
    message_dict,
)
from core.api_schemas import ErrorBody
from core.config import get_config
from retrieval.api_schemas import filters_plain
from traces.recording import trace_discard, trace_of, trace_record, trace_ref

router = Router(tags=["conversations"])
ERRORS = {code: ErrorBody for code in (401, 404, 422, 500, 502, 503, 504)}


@router.post("/conversations", response={201: ConversationCreated, **ERRORS},
             summary="Start a conversation, optionally with its first question")
def conversation_create_view(request: CallerRequest,
                             payload: ConversationCreate) -> Status[dict[str, Any]]:
    conversation = services.conversation_create(caller=request.auth, title=payload.title or "",
                                                knowledge_bases=payload.knowledge_bases,
                                                filters=filters_plain(payload.filters))
    answer = None
    trace = trace_of(request)
    if payload.question is None:
        trace_discard(trace)
    else:
        turn = services.conversation_first_turn(
            caller=request.auth, conversation=conversation, question=payload.question,
            top_k=payload.top_k, fallback=payload.fallback, on_llm_error=payload.on_llm_error,
            config=get_config(), trace=trace_ref(trace))
        trace_record(trace, *turn.measures)
        answer = turn_body(turn, trace_id=trace.id if trace is not None else None)
        conversation.refresh_from_db()
    return Status(201, {**conversation_dict(conversation, caller=request.auth),
                        "answer": answer})


@router.get("/conversations", response={200: list[ConversationSummary], **ERRORS},
            summary="The caller's conversations, most recently active first")
def conversations_list_view(request: CallerRequest, limit: int = 50,
                            offset: int = 0) -> list[dict[str, Any]]:
    return [conversation_summary(conversation) for conversation in
            services.conversations_list(caller=request.auth, limit=limit, offset=offset)]


@router.get("/conversations/{conversation_id}", response={200: ConversationOut, **ERRORS},
            summary="One conversation with a page of its messages (the newest first) and their "
                    "citations")
def conversation_get_view(request: CallerRequest, conversation_id: int,
                          limit: int = MESSAGES_PAGE_DEFAULT,
                          before: int | None = None) -> dict[str, Any]:
    return conversation_dict(services.conversation_get(caller=request.auth,
                                                       conversation_id=conversation_id),
                             caller=request.auth, page=MessagesPage(limit=limit, before=before))


@router.patch("/conversations/{conversation_id}", response={200: ConversationSummary, **ERRORS},
              summary="Rename a conversation")
def conversation_rename_view(request: CallerRequest, conversation_id: int,
                             payload: ConversationRename) -> dict[str, Any]:
    return conversation_summary(services.conversation_rename(
        caller=request.auth, conversation_id=conversation_id, title=payload.title))


@router.delete("/conversations/{conversation_id}", response={204: None, **ERRORS},
               summary="Delete a conversation and its messages")
def conversation_delete_view(request: CallerRequest, conversation_id: int) -> Status[None]:
    services.conversation_delete(caller=request.auth, conversation_id=conversation_id)
    return Status(204, None)


@router.post("/conversations/{conversation_id}/messages", response={200: TurnResponse, **ERRORS},
             summary="Ask in a conversation: a follow-up is searched as a standalone query")
def conversation_ask_view(request: CallerRequest, conversation_id: int,
                          payload: MessageAsk) -> dict[str, Any]:
    config = get_config()
    trace = trace_of(request)
    turn = services.turn_answer(services.turn_prepare(
        caller=request.auth, conversation_id=conversation_id, question=payload.question,
        top_k=payload.top_k, fallback=payload.fallback, on_llm_error=payload.on_llm_error,
        config=config, filters=filters_plain(payload.filters), trace=trace_ref(trace)),
        config=config)
    trace_record(trace, *turn.measures)
    return turn_body(turn, trace_id=trace.id if trace is not None else None)


@router.post("/conversations/{conversation_id}/messages/stream", response={200: None, **ERRORS},
             summary="Ask in a conversation, streamed as Server-Sent Events",
             description="The events of /ask/stream: `retrieval` (also with `standalone_query`), "
                         "`delta`…, `citations`, `usage`, `done` (also with `conversation_id` "
                         "and `message_id`); `notice` or `error` as there.")
def conversation_ask_stream_view(request: CallerRequest, conversation_id: int,
                                 payload: MessageAsk) -> StreamingHttpResponse:
    config = get_config()
    trace = trace_of(request)
    turn = services.turn_prepare(
        caller=request.auth, conversation_id=conversation_id, question=payload.question,
        top_k=payload.top_k, fallback=payload.fallback, on_llm_error=payload.on_llm_error,
        config=config, filters=filters_plain(payload.filters), trace=trace_ref(trace))
    stream = services.turn_stream(turn, config=config)
    trace_record(trace, *turn.measures)
    events = RecordedEvents(stream, plan=turn.plan, trace=trace)
    return sse_response(SSEFrames(events, closes=events))


@router.post("/messages/{message_id}/feedback", response={200: FeedbackRecorded, **ERRORS},
             summary="Rate an answer of one of the caller's conversations")
def message_feedback_view(request: CallerRequest, message_id: int,
                          payload: FeedbackIn) -> dict[str, Any]:
    message = services.message_feedback_record(
        caller=request.auth, message_id=message_id, rating=payload.rating,
        error_type=payload.error_type, comment=payload.comment)
    return {"message_id": message.pk, "feedback": message_dict(message)["feedback"]}
