"""Reads of a conversation stay bounded, refusals leave nothing behind, and an answer whose
stream the client dropped is kept, marked interrupted."""

from __future__ import annotations

import json

import pytest

from access.callers import OPERATOR
from conversations import services
from conversations.models import Conversation, Message
from conversations.selectors import MESSAGES_PAGE_DEFAULT, MESSAGES_PAGE_MAX
from core.config import get_config
from tests.api.http import error_of, post

P1 = "客户 P1 工单应该怎么升级？"


def test_a_long_conversation_is_read_a_page_at_a_time_newest_first(client, sample_index):
    conversation = services.conversation_create(caller=OPERATOR, title="Long")
    Message.objects.bulk_create(
        Message(conversation=conversation, role=Message.USER if n % 2 == 0 else Message.ASSISTANT,
                text=f"message {n} " + "x" * 1000) for n in range(250))
    ids = list(conversation.messages.order_by("id").values_list("id", flat=True))
    pages, before = [], None
    while True:
        path = f"/conversations/{conversation.pk}" + (f"?before={before}" if before else "")
        body = json.loads(client.get(path).content)
        assert body["message_count"] == 250
        pages.append([message["id"] for message in body["messages"]])
        before = body["older_before"]
        if before is None:
            break
    # The newest page first, each page oldest first; together every message once.
    assert [len(page) for page in pages] == [MESSAGES_PAGE_DEFAULT, MESSAGES_PAGE_DEFAULT, 50]
    assert pages[0] == ids[-MESSAGES_PAGE_DEFAULT:]
    assert [message for page in reversed(pages) for message in page] == ids
    small = json.loads(client.get(f"/conversations/{conversation.pk}?limit=3").content)
    assert [message["id"] for message in small["messages"]] == ids[-3:]
    assert small["older_before"] == ids[-3]
    for limit in (0, MESSAGES_PAGE_MAX + 1):
        refused = client.get(f"/conversations/{conversation.pk}?limit={limit}")
        assert refused.status_code == 422 and error_of(refused)["details"]["field"] == "limit"


def test_a_refused_first_question_leaves_no_empty_conversation(client, sample_index,
                                                              config_override):
    # An LLM that is asked for but not configured: refused after the conversation was made.
    config_override(llm_provider="openai-compatible", llm_base_url="", llm_model="")
    response = post(client, "/conversations", {"question": P1})
    assert response.status_code == 503 and error_of(response)["code"] == "llm_config_missing"
    assert not Conversation.objects.exists()


@pytest.mark.parametrize("events_read", [1, 3])
def test_an_answer_whose_stream_the_client_dropped_is_kept_marked_interrupted(sample_index,
                                                                              events_read):
    config = get_config()
    conversation = services.conversation_create(caller=OPERATOR)
    stream = services.turn_stream(services.turn_prepare(
        caller=OPERATOR, conversation_id=conversation.pk, question=P1, top_k=None,
        fallback=False, on_llm_error="error", config=config), config=config)
    read = [next(stream) for _ in range(events_read)]
    stream.close()  # what Django does when the client goes away
    question, answer = conversation.messages.order_by("id")
    assert (question.text, answer.role) == (P1, Message.ASSISTANT)
    assert answer.notice["code"] == "interrupted"
    assert answer.text == "".join(data["text"] for name, data in read if name == "delta")
    body = json.loads(json.dumps(services.conversation_get(
        caller=OPERATOR, conversation_id=conversation.pk).messages.last().notice))
    assert body["cause"] == "client_disconnected"


def test_a_stream_read_to_its_end_is_stored_once_without_a_notice(sample_index):
    config = get_config()
    conversation = services.conversation_create(caller=OPERATOR)
    stream = services.turn_stream(services.turn_prepare(
        caller=OPERATOR, conversation_id=conversation.pk, question=P1, top_k=None,
        fallback=False, on_llm_error="error", config=config), config=config)
    names = [name for name, _ in stream]
    stream.close()
    assert names[-1] == "done"
    [answer] = conversation.messages.filter(role=Message.ASSISTANT)
    assert answer.notice is None and answer.text
