"""Conversation services at their edges: a conversation deleted while one of its questions is
answered is not found, and nothing is written to it (before, the question's or the answer's
write failed on the missing row: a 500); a page offset past the database's range is empty."""

from __future__ import annotations

import threading

import psycopg
import pytest

from access.auth import OPEN_CALLER
from conversations.models import Message
from conversations.services import (
    conversation_create,
    conversation_delete,
    conversations_list,
    turn_answer,
    turn_prepare,
    turn_stream,
)
from core.config import get_config
from core.errors import NotFound

QUESTION = "What are the Atlas CRM export limits?"


def prepare(conversation_id: int):
    return turn_prepare(caller=OPEN_CALLER, conversation_id=conversation_id, question=QUESTION,
                        top_k=None, fallback=False, on_llm_error="error", config=get_config())


def test_an_answer_to_a_conversation_deleted_meanwhile_is_not_found(clean_tables, sample_index):
    conversation = conversation_create(caller=OPEN_CALLER)
    turn = prepare(conversation.pk)
    conversation_delete(caller=OPEN_CALLER, conversation_id=conversation.pk)
    with pytest.raises(NotFound) as refused:
        turn_answer(turn, config=get_config())
    assert refused.value.details == {"conversation_id": conversation.pk}
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()


def test_a_streamed_answer_to_a_conversation_deleted_meanwhile_ends_with_an_error_event(
        clean_tables, sample_index):
    conversation = conversation_create(caller=OPEN_CALLER)
    turn = prepare(conversation.pk)
    conversation_delete(caller=OPEN_CALLER, conversation_id=conversation.pk)
    stream = turn_stream(turn, config=get_config())
    events = list(stream)
    stream.close()
    assert [name for name, _ in events][:1] == ["retrieval"]
    assert events[-1] == ("error", {"error": {"code": "not_found",
                                              "message": "conversation not found",
                                              "details": {"conversation_id": conversation.pk}}})
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()


def test_a_question_in_a_conversation_being_deleted_is_not_found(clean_tables, sample_index):
    conversation = conversation_create(caller=OPEN_CALLER)
    with psycopg.connect(get_config().test_database_url) as other:
        # Another request's delete, not yet committed: the question still finds the
        # conversation, then must wait for the delete to commit and see it gone.
        other.execute("DELETE FROM conversations_conversation WHERE id = %s", [conversation.pk])
        commit = threading.Timer(1.0, other.commit)
        commit.start()
        try:
            with pytest.raises(NotFound):
                prepare(conversation.pk)
        finally:
            commit.join()
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()


def test_a_page_offset_past_the_databases_range_is_an_empty_page(db):
    conversation_create(caller=OPEN_CALLER)
    assert conversations_list(caller=OPEN_CALLER, limit=1, offset=10**30) == []
    assert len(conversations_list(caller=OPEN_CALLER, limit=1, offset=0)) == 1
