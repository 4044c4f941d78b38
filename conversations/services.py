"""Conversations: create, list, read, rename, delete, ask in one, feedback, prune.

Every read and write filters on the caller's owner key in its SQL (conversations/models.py), so
another caller's conversation is not found, whichever path asks. A question in a conversation:
the recent turns are read, the question is made standalone (conversations/condense.py), the
standalone query is searched in the conversation's knowledge bases as the caller may read them
now, and the answer is generated with the recent turns in the prompt (within
RAG_CONVERSATION_HISTORY_TURNS and RAG_CONVERSATION_HISTORY_TOKENS) and this turn's sources
only. No database connection is held while a model works (condensation or answer)."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Generator
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from access.callers import Caller, Scope
from answering.citations import MARKER_PATTERN
from answering.services import AnswerRequest, AskPlan, ask_answer, ask_prepare
from answering.streaming import AskEventStream, ask_stream_of
from conversations.condense import Condensed, Turn, standalone_query
from conversations.models import (
    FEEDBACK_DOWN,
    FEEDBACK_ERROR_TYPES,
    FEEDBACK_UP,
    TITLE_MAX_CHARS,
    Conversation,
    Message,
)
from conversations.selectors import cited_slugs
from conversations.turns import ConversationNotes, ConversationTurn, TurnAnswer
from core.config import Config, get_config
from core.errors import InvalidRequest, LocalRagError, NotFound
from core.prices import llm_cost
from core.text_tokens import tokens_count
from retrieval.filters import DocumentFilter, filters_parse
from traces.recording import TraceRef, measured_on_failure

logger = logging.getLogger("localrag.conversations")
RATINGS = {"up": FEEDBACK_UP, "down": FEEDBACK_DOWN}
# The notice of an answer whose stream the client left before it ended.
INTERRUPTED_NOTICE = {"code": "interrupted", "cause": "client_disconnected",
                      "message": "The answer was interrupted: the client went away before it "
                                 "ended; what had been generated is kept."}
COMMENT_MAX_CHARS = 2000
# One new conversation in this many also deletes those past their retention (as traces do).
PRUNE_EVERY = 100
LIST_LIMIT_MAX = 200
# Past any conversation there will be, and within the bigint the database's OFFSET takes.
LIST_OFFSET_MAX = 2**62
_MARKERS = re.compile(MARKER_PATTERN)


def conversation_owner(caller: Caller) -> str:
    """The owner key of what `caller` creates and may see."""
    if caller.token_id is not None:
        return f"token:{caller.token_id}"
    if caller.user_id is not None:
        return f"user:{caller.user_id}"
    if caller.label == "RAG_API_TOKEN":
        return "api-token"
    return "local"


def _owned(caller: Caller) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=conversation_owner(caller))


def conversation_create(*, caller: Caller, title: str = "",
                        knowledge_bases: list[str] | None = None,
                        filters: dict[str, Any] | None = None) -> Conversation:
    """A new, empty conversation over `knowledge_bases` (slugs the caller may read; None: all
    the caller may read at each question), searching with `filters` (a request's, as given)."""
    if knowledge_bases is not None:
        caller.scope(slugs=knowledge_bases)  # NotFound for a base the caller cannot read
    filters_parse(filters)  # InvalidRequest now, not at the first question
    if random.randrange(PRUNE_EVERY) == 0:
        conversations_prune(days=get_config().rag_conversation_retention_days)
    return Conversation.objects.create(owner=conversation_owner(caller), user_id=caller.user_id,
                                       knowledge_bases=knowledge_bases, filters=filters or None,
                                       title=_title(title) if title else "")


def conversations_list(*, caller: Caller, limit: int = 50, offset: int = 0) -> list[Conversation]:
    """The caller's conversations, most recently active first, with their message counts."""
    if not 1 <= limit <= LIST_LIMIT_MAX or offset < 0:
        raise InvalidRequest(f"limit must be between 1 and {LIST_LIMIT_MAX}, offset at least 0")
    if offset > LIST_OFFSET_MAX:
        return []
    # Ordered here: Meta.ordering does not apply to a query that aggregates.
    return list(_owned(caller).annotate(message_count=Count("messages"))
                .order_by("-updated_at", "-id")[offset:offset + limit])


def conversation_get(*, caller: Caller, conversation_id: int) -> Conversation:
    """One of the caller's conversations (NotFound for anyone else's)."""
    conversation = _owned(caller).filter(pk=conversation_id).first()
    if conversation is None:
        raise _conversation_not_found(conversation_id)
    return conversation


def _conversation_not_found(conversation_id: int) -> NotFound:
    return NotFound("conversation not found", details={"conversation_id": conversation_id})


def _conversation_lock(conversation_id: int) -> None:
    """Lock the conversation's row until the transaction ends (inside one): a delete under way
    finishes first, and one that comes waits. NotFound when it was deleted meanwhile, e.g.
    while the model answered, so that nothing is written to a conversation that is gone."""
    if not Conversation.objects.select_for_update().filter(pk=conversation_id).exists():
        raise _conversation_not_found(conversation_id)


def conversation_rename(*, caller: Caller, conversation_id: int, title: str) -> Conversation:
    with transaction.atomic():
        conversation = _owned(caller).select_for_update().filter(pk=conversation_id).first()
        if conversation is None:
            raise _conversation_not_found(conversation_id)
        if not title.strip():
            raise InvalidRequest("a title needs at least one character",
                                 details={"field": "title"})
        conversation.title = _title(title)
        conversation.save(update_fields=["title", "updated_at"])
    return conversation


def conversation_delete(*, caller: Caller, conversation_id: int) -> None:
    """Delete the conversation and its messages."""
    with transaction.atomic():
        # Locked first: a question being stored in it now is deleted with the others.
        if not _owned(caller).select_for_update().filter(pk=conversation_id).exists():
            raise _conversation_not_found(conversation_id)
        _owned(caller).filter(pk=conversation_id).delete()


def conversations_prune(*, days: int) -> int:
    """Delete conversations with no activity for `days` days; how many."""
    cutoff = timezone.now() - timedelta(days=days)
    deleted = Conversation.objects.filter(updated_at__lt=cutoff).delete()[1]
    return deleted.get("conversations.Conversation", 0)


def _title(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_MAX_CHARS else text[:TITLE_MAX_CHARS - 1] + "…"


def turn_prepare(*, caller: Caller, conversation_id: int, question: str, top_k: int | None,
                 fallback: bool, on_llm_error: str, config: Config,
                 filters: dict[str, Any] | None = None,
                 trace: TraceRef | None = None) -> ConversationTurn:
    """Read the recent turns, make the question standalone, retrieve (with this question's
    `filters`, else the conversation's) and plan the answer, under `trace` (which the stored
    answer names); raises every pre-generation error before anything is stored, with what was
    measured before it."""
    conversation = conversation_get(caller=caller, conversation_id=conversation_id)
    document_filter = filters_parse(filters if filters is not None else conversation.filters)
    turns = recent_turns(conversation, limit=max(config.rag_conversation_history_turns, 1))
    # A turn that quotes a base the caller can no longer read is sent nowhere: not to the
    # condensing model, not into the answer's prompt.
    unreadable = caller.unreadable(slug for turn in turns for slug in turn.knowledge_bases)
    condensed, plan = follow_up_plan(
        question=question,
        turns=[turn for turn in turns if not unreadable.intersection(turn.knowledge_bases)],
        scope=caller.scope(slugs=conversation.knowledge_bases), top_k=top_k,
        fallback=fallback, on_llm_error=on_llm_error, config=config, filters=document_filter,
        trace=trace)
    notes = ConversationNotes(condensation=condensed.method, conversation_id=conversation.pk)
    with measured_on_failure(condensed, plan.measures, notes), transaction.atomic():
        _conversation_lock(conversation.pk)
        asked = Message.objects.create(conversation=conversation, role=Message.USER,
                                       text=question)
        if not conversation.title:
            conversation.title = _title(question)
        conversation.save(update_fields=["title", "updated_at"])
    return ConversationTurn(conversation=conversation, question=asked, condensed=condensed,
                            plan=plan)


def follow_up_plan(*, question: str, turns: list[Turn], scope: Scope, top_k: int | None,
                   fallback: bool, on_llm_error: str, config: Config,
                   filters: DocumentFilter | None = None,
                   trace: TraceRef | None = None) -> tuple[Condensed, AskPlan]:
    """A question after `turns` (oldest first): made standalone, searched, and planned with
    the recent turns in the prompt — for a stored conversation and a stateless chat alike.
    What the condensation and the plan measured goes with them (ConversationNotes says how
    it was condensed)."""
    condensed = standalone_query(question=question, turns=turns, config=config,
                                 knowledge_base_ids=scope.knowledge_base_ids)
    sent = turns[-config.rag_conversation_history_turns:] \
        if config.rag_conversation_history_turns else []
    history = history_messages(sent, budget=config.rag_conversation_history_tokens)
    with measured_on_failure(condensed):
        plan = ask_prepare(AnswerRequest(
            question=question, scope=scope, top_k=top_k, fallback=fallback,
            on_llm_error=on_llm_error, filters=filters, search_query=condensed.query,
            history=history,
            history_bases=sorted({slug for turn in sent for slug in turn.knowledge_bases}),
            trace=trace), config=config)
    return condensed, plan


def recent_turns(conversation: Conversation, *, limit: int) -> list[Turn]:
    """The last `limit` question-and-answer pairs, oldest first."""
    messages = list(conversation.messages.order_by("-id")[:limit * 2 + 1])[::-1]
    turns = []
    for index, message in enumerate(messages):
        if message.role != Message.USER:
            continue
        answer = next((later for later in messages[index + 1:index + 2]
                       if later.role == Message.ASSISTANT), None)
        if answer is None:
            continue
        turns.append(Turn(question=message.text,
                          standalone_query=answer.standalone_query or message.text,
                          answer=answer.text, knowledge_bases=tuple(sorted(cited_slugs(answer)))))
    return turns[-limit:]


def history_messages(turns: list[Turn], *, budget: int) -> list[dict[str, str]]:
    """Earlier turns as chat messages for the answer's prompt: newest kept first within
    `budget` tokens; their [n] markers removed, since only this turn's sources are numbered."""
    kept: list[dict[str, str]] = []
    used = 0
    for turn in reversed(turns):
        answer = " ".join(_MARKERS.sub("", turn.answer).split())
        cost = tokens_count(turn.question) + tokens_count(answer)
        if used + cost > budget:
            break
        kept[:0] = [{"role": "user", "content": turn.question},
                    {"role": "assistant", "content": answer}]
        used += cost
    return kept


def conversation_first_turn(*, caller: Caller, conversation: Conversation, question: str,
                            top_k: int | None, fallback: bool, on_llm_error: str,
                            config: Config, trace: TraceRef | None = None) -> TurnAnswer:
    """Answer the question a new conversation was started with. Refused before its answer is
    stored (no base, a policy, the model's settings), the conversation goes with it: a refused
    request leaves no empty conversation behind."""
    try:
        return turn_answer(turn_prepare(caller=caller, conversation_id=conversation.pk,
                                        question=question, top_k=top_k, fallback=fallback,
                                        on_llm_error=on_llm_error, config=config, trace=trace),
                           config=config)
    except Exception:
        if not conversation.messages.filter(role=Message.ASSISTANT).exists():
            conversation.delete()
        raise


def turn_answer(turn: ConversationTurn, *, config: Config) -> TurnAnswer:
    """Generate and store the answer: the answer, the conversation's ids and the standalone
    query, with what preparing and answering the turn measured (an error carries it too)."""
    with measured_on_failure(turn.condensed, turn.notes):
        answer = ask_answer(turn.plan, config=config)
        with measured_on_failure(*answer.measures):
            stored = _answer_store(turn, text=answer.answer, notice=answer.notice)
    return TurnAnswer(answer=answer, conversation_id=turn.conversation.pk,
                      question_message_id=turn.question.pk, message_id=stored.pk,
                      standalone_query=turn.condensed.query,
                      condensation=turn.condensed.method,
                      measures=(turn.condensed, turn.notes, *answer.measures))


def turn_stream(turn: ConversationTurn, *, config: Config) -> TurnEventStream:
    """The /ask/stream events of the answer (the LLM slot taken now), stored when complete;
    an error carries what preparing the turn measured."""
    with measured_on_failure(turn.condensed, turn.notes):
        events = ask_stream_of(turn.plan, config=config)
    return TurnEventStream(turn=turn, events=events)


class TurnEventStream:
    """A conversation's answer events: `retrieval` also names the standalone query, the answer
    is stored once its text is complete (before `usage` and `done`), and `done` carries the
    message ids. A stream closed before that (the client went away) still stores what was
    generated, marked with the INTERRUPTED notice: a question is never left without its
    answer."""

    def __init__(self, *, turn: ConversationTurn, events: AskEventStream) -> None:
        self.turn = turn
        self._events = events
        self._text: list[str] = []
        self._stored: Message | None = None
        self._ended = False  # the stream ran to its end, or ended with an error event
        self._iterator = self._run()

    def __iter__(self) -> TurnEventStream:
        return self

    def __next__(self) -> tuple[str, dict[str, Any]]:
        return next(self._iterator)

    def _run(self) -> Generator[tuple[str, dict[str, Any]], None, None]:
        notice = None
        for name, data in self._events:
            if name == "retrieval":
                data = {**data, "standalone_query": self.turn.condensed.query,
                        "condensation": self.turn.condensed.method}
            elif name == "delta":
                self._text.append(data["text"])
            elif name == "notice":
                notice = data
            elif name == "usage" and self._stored is None:
                try:
                    self._stored = _answer_store(self.turn, text="".join(self._text) or (
                        notice["message"] if notice else ""), notice=notice, usage=data)
                except NotFound as exc:  # the conversation was deleted while it was answered
                    self.turn.plan.failure = exc.code
                    self._ended = True
                    yield "error", exc.as_body()
                    return
            elif name == "done" and self._stored is not None:
                data = {**data, **_turn_fields(self.turn, self._stored)}
            elif name == "error":
                self._ended = True
            yield name, data
        self._ended = True

    def close(self) -> None:
        self._iterator.close()
        self._events.close()
        if self._stored is None and not self._ended:
            self._interrupted_store()

    def _interrupted_store(self) -> None:
        """What the model had written when the client went away, kept with the notice."""
        try:
            self._stored = _answer_store(self.turn, text="".join(self._text),
                                         notice=INTERRUPTED_NOTICE)
        except LocalRagError as exc:  # deleted meanwhile, or the database is gone
            logger.warning("the interrupted answer to message %s was not kept: %s",
                           self.turn.question.pk, exc.code)


def _answer_store(turn: ConversationTurn, *, text: str, notice: dict[str, Any] | None,
                  usage: dict[str, Any] | None = None) -> Message:
    plan = turn.plan
    trace = plan.trace
    citations = [{**citation, "chunk_id": chunk_id, "content_hash": content_hash}
                 for citation, chunk_id, content_hash
                 in zip(plan.citations, plan.chunk_ids, plan.content_hashes, strict=False)]
    tokens = usage or {}
    if trace is not None and usage is None:
        tokens = plan.tokens()
    measures = plan.measures
    model = tokens.get("llm_model") or (measures.llm_model if measures is not None else None)
    cost = llm_cost(prices=get_config().rag_model_prices, model=model,
                    prompt_tokens=tokens.get("prompt_tokens"),
                    completion_tokens=tokens.get("completion_tokens"))
    with transaction.atomic():
        _conversation_lock(turn.conversation.pk)
        answer = Message.objects.create(
            conversation=turn.conversation, role=Message.ASSISTANT, text=text, mode=plan.mode,
            confidence=plan.confidence, standalone_query=turn.condensed.query,
            condensation=turn.condensed.method, citations=citations, notice=notice,
            unsupported_citations=plan.unsupported_citations,
            trace_id=trace.id if trace is not None else "",
            prompt_tokens=tokens.get("prompt_tokens"),
            completion_tokens=tokens.get("completion_tokens"),
            token_source=tokens.get("token_source") or "", cost=cost)
        Conversation.objects.filter(pk=turn.conversation.pk).update(updated_at=timezone.now())
    return answer


def _turn_fields(turn: ConversationTurn, answer: Message) -> dict[str, Any]:
    return {"conversation_id": turn.conversation.pk, "question_message_id": turn.question.pk,
            "message_id": answer.pk, "standalone_query": turn.condensed.query,
            "condensation": turn.condensed.method}


def message_feedback_record(*, caller: Caller, message_id: int, rating: str,
                            error_type: str = "", comment: str = "") -> Message:
    """Record (or change) the owner's feedback on one of their answers."""
    if rating not in RATINGS:
        raise InvalidRequest("rating must be up or down", details={"field": "rating"})
    if error_type and error_type not in dict(FEEDBACK_ERROR_TYPES):
        raise InvalidRequest(f"unknown error type: {error_type}",
                             details={"field": "error_type"})
    if len(comment) > COMMENT_MAX_CHARS:
        raise InvalidRequest(f"the comment is longer than {COMMENT_MAX_CHARS} characters",
                             details={"field": "comment"})
    with transaction.atomic():
        # The message's row locked: one its conversation's delete took first is not found.
        message = Message.objects.select_for_update(of=("self",)).filter(
            Q(pk=message_id) & Q(role=Message.ASSISTANT)
            & Q(conversation__owner=conversation_owner(caller))).first()
        if message is None:
            raise NotFound("message not found", details={"message_id": message_id})
        message.rating = RATINGS[rating]
        message.error_type = error_type if rating == "down" else ""
        message.comment = comment.strip()
        message.feedback_at = timezone.now()
        message.save(update_fields=["rating", "error_type", "comment", "feedback_at"])
    return message

