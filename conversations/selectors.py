"""Conversations and messages in the shape the API, MCP and the workbench show them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from access.callers import Caller
from conversations.models import FEEDBACK_UP, Conversation, Message
from core.errors import InvalidRequest

# In place of an answer that cites a knowledge base its reader may no longer read.
WITHHELD_MESSAGE = ("This answer quoted a knowledge base you can no longer read, so it is "
                    "withheld.")
WITHHELD_NOTICE = {"code": "withheld", "cause": "knowledge_base_unreadable",
                   "message": WITHHELD_MESSAGE}


def cited_slugs(message: Message) -> set[str]:
    """The knowledge bases an answer's citations name."""
    return {citation["knowledge_base"] for citation in message.citations or []
            if isinstance(citation, dict) and citation.get("knowledge_base")}


def message_dict(message: Message) -> dict[str, Any]:
    """A message as the API shows it: its citations with chunk ids, hashes and pages; its
    owner's feedback when there is some."""
    feedback = None
    if message.rating is not None and message.feedback_at is not None:
        feedback = {"rating": "up" if message.rating == FEEDBACK_UP else "down",
                    "error_type": message.error_type, "comment": message.comment,
                    "created_at": message.feedback_at}
    return {"id": message.pk, "role": message.role, "text": message.text,
            "mode": message.mode or None, "confidence": message.confidence,
            "standalone_query": message.standalone_query, "condensation": message.condensation,
            "citations": message.citations,
            "unsupported_citations": message.unsupported_citations, "notice": message.notice,
            "trace_id": message.trace_id, "prompt_tokens": message.prompt_tokens,
            "completion_tokens": message.completion_tokens, "token_source": message.token_source,
            "cost": message.cost, "feedback": feedback, "created_at": message.created_at}


def conversation_summary(conversation: Conversation) -> dict[str, Any]:
    count = getattr(conversation, "message_count", None)
    return {"id": conversation.pk, "title": conversation.title,
            "knowledge_bases": conversation.knowledge_bases, "filters": conversation.filters,
            "message_count": conversation.messages.count() if count is None else count,
            "created_at": conversation.created_at, "updated_at": conversation.updated_at}


# A page of messages: the newest first, so a long conversation is read from its end.
MESSAGES_PAGE_DEFAULT = 100
MESSAGES_PAGE_MAX = 200


@dataclass(frozen=True)
class MessagesPage:
    """Which messages of a conversation to show: at most `limit`, the newest of those with an
    id below `before` (None: the newest of all)."""

    limit: int = MESSAGES_PAGE_DEFAULT
    before: int | None = None

    def checked(self) -> MessagesPage:
        if not 1 <= self.limit <= MESSAGES_PAGE_MAX:
            raise InvalidRequest(f"limit must be between 1 and {MESSAGES_PAGE_MAX}",
                                 details={"field": "limit"})
        if self.before is not None and self.before < 1:
            raise InvalidRequest("before must be a message id", details={"field": "before"})
        return self


def conversation_dict(conversation: Conversation, *, caller: Caller,
                      page: MessagesPage | None = None) -> dict[str, Any]:
    """A conversation with a page of its messages (the newest, by default MESSAGES_PAGE_DEFAULT
    of them), shown oldest first, as `caller` may see them now: an answer whose citations name
    a base the caller can no longer read (a revoked grant, a narrowed token, a deleted base) is
    withheld, its text, citations and standalone query replaced by a notice.
    `message_count` counts them all; `older_before` is the `before` of the page before this
    one (None at the conversation's start)."""
    page = (page or MessagesPage()).checked()
    query = conversation.messages.all()
    if page.before is not None:
        query = query.filter(pk__lt=page.before)
    newest = list(query.order_by("-id")[:page.limit + 1])
    older = len(newest) > page.limit
    messages = newest[:page.limit][::-1]
    cited = {message.pk: cited_slugs(message) for message in messages}
    unreadable = caller.unreadable(slug for slugs in cited.values() for slug in slugs)
    shown = []
    for message in messages:
        body = message_dict(message)
        if unreadable & cited[message.pk]:
            body.update(text="", citations=[], standalone_query="", notice=WITHHELD_NOTICE)
        shown.append(body)
    return {**conversation_summary(conversation), "messages": shown,
            "older_before": messages[0].pk if older and messages else None}
