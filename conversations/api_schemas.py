"""The conversations API contract (conversations/api.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import AfterValidator, Field

from answering.api_schemas import AskResponse, CitationOut, Notice, ask_body
from conversations.models import FEEDBACK_ERROR_TYPES, TITLE_MAX_CHARS
from conversations.turns import TurnAnswer
from core.api_schemas import KnowledgeBases, QueryText, StrictRequest, TopK, no_control_characters
from retrieval.api_schemas import SearchFilters

Title = Annotated[str, Field(min_length=1, max_length=TITLE_MAX_CHARS),
                  AfterValidator(no_control_characters)]
ErrorType = Literal["wrong_answer", "wrong_citation", "missing_source", "should_refuse",
                    "should_answer", "other"]


class AskFields(StrictRequest):
    top_k: TopK = None
    fallback: bool = False
    on_llm_error: Literal["error", "sources"] = "error"


class ConversationCreate(AskFields):
    title: Title | None = None
    # The knowledge bases every question of the conversation searches (slugs); by default,
    # all the caller may read when each question is asked.
    knowledge_bases: KnowledgeBases = None
    # Asked at once when given: the response then holds its answer.
    question: QueryText | None = None
    # The metadata filters every question searches with, as in /search.
    filters: SearchFilters | None = None


class ConversationRename(StrictRequest):
    title: Title


class MessageAsk(AskFields):
    question: QueryText
    # This question's filters instead of the conversation's.
    filters: SearchFilters | None = None


assert set(ErrorType.__args__) == {code for code, _ in FEEDBACK_ERROR_TYPES}  # type: ignore[attr-defined]


class FeedbackIn(StrictRequest):
    rating: Literal["up", "down"]
    error_type: ErrorType | Literal[""] = ""  # only kept with "down"
    comment: Annotated[str, Field(max_length=2000)] = ""


class StoredCitation(CitationOut):
    chunk_id: int | None = None
    content_hash: str = ""


class FeedbackOut(Schema):
    rating: Literal["up", "down"]
    error_type: str
    comment: str
    created_at: datetime


class Cost(Schema):
    amount: float
    currency: str


class MessageOut(Schema):
    id: int
    role: Literal["user", "assistant"]
    text: str
    # Assistant messages only (null or empty on questions).
    mode: str | None
    confidence: float | None
    standalone_query: str
    condensation: str
    citations: list[StoredCitation]
    # Markers of the answer no sentence of their block supports.
    unsupported_citations: int = 0
    notice: Notice | None
    trace_id: str
    prompt_tokens: int | None
    completion_tokens: int | None
    token_source: str
    # The tokens at RAG_MODEL_PRICES when the answer was stored; null: no price, or no model.
    cost: Cost | None = None
    feedback: FeedbackOut | None
    created_at: datetime


class ConversationSummary(Schema):
    id: int
    title: str
    knowledge_bases: list[str] | None
    filters: dict[str, Any] | None = None
    message_count: int
    created_at: datetime
    updated_at: datetime


class ConversationOut(ConversationSummary):
    # A page of the messages, oldest first: the newest `limit` (default 100) below `before`.
    messages: list[MessageOut]
    # `before` of the next older page; null when this page reaches the first message.
    older_before: int | None = None


class TurnResponse(AskResponse):
    conversation_id: int
    question_message_id: int
    message_id: int
    # What was searched: the question made standalone from the recent turns.
    standalone_query: str
    condensation: Literal["as_asked", "rule", "llm"]
    # Set when the model failed and the request asked for its sources instead.
    notice: Notice | None = None


class ConversationCreated(ConversationOut):
    # The answer to `question`, when the request asked one.
    answer: TurnResponse | None = None


class FeedbackRecorded(Schema):
    message_id: int
    feedback: FeedbackOut


def turn_body(turn: TurnAnswer, *, trace_id: str | None) -> dict[str, Any]:
    """The body of a question answered in a conversation (TurnResponse): the /ask body, then
    the conversation's ids and the query searched."""
    return {**ask_body(turn.answer, trace_id=trace_id), "conversation_id": turn.conversation_id,
            "question_message_id": turn.question_message_id, "message_id": turn.message_id,
            "standalone_query": turn.standalone_query, "condensation": turn.condensation}
