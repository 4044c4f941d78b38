"""Conversations and messages in the shape the API, MCP and the workbench show them."""

from __future__ import annotations

from typing import Any

from access.callers import Caller
from conversations.models import FEEDBACK_UP, Conversation, Message

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
            "feedback": feedback, "created_at": message.created_at}


def conversation_summary(conversation: Conversation) -> dict[str, Any]:
    count = getattr(conversation, "message_count", None)
    return {"id": conversation.pk, "title": conversation.title,
            "knowledge_bases": conversation.knowledge_bases, "filters": conversation.filters,
            "message_count": conversation.messages.count() if count is None else count,
            "created_at": conversation.created_at, "updated_at": conversation.updated_at}


def conversation_dict(conversation: Conversation, *, caller: Caller) -> dict[str, Any]:
    """A conversation with all its messages, oldest first, as `caller` may see it now: an
    answer whose citations name a base the caller can no longer read (a revoked grant, a
    narrowed token, a deleted base) is withheld, its text, citations and standalone query
    replaced by a notice."""
    messages = list(conversation.messages.order_by("id"))
    cited = {message.pk: cited_slugs(message) for message in messages}
    unreadable = caller.unreadable(slug for slugs in cited.values() for slug in slugs)
    shown = []
    for message in messages:
        body = message_dict(message)
        if unreadable & cited[message.pk]:
            body.update(text="", citations=[], standalone_query="", notice=WITHHELD_NOTICE)
        shown.append(body)
    return {**conversation_summary(conversation), "message_count": len(messages),
            "messages": shown}
