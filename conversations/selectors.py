"""Conversations and messages in the shape the API, MCP and the workbench show them."""

from __future__ import annotations

from typing import Any

from conversations.models import FEEDBACK_UP, Conversation, Message


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


def conversation_dict(conversation: Conversation) -> dict[str, Any]:
    """A conversation with all its messages, oldest first."""
    messages = list(conversation.messages.order_by("id"))
    return {**conversation_summary(conversation), "message_count": len(messages),
            "messages": [message_dict(message) for message in messages]}
