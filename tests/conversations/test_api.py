"""The conversations API in process: follow-ups that keep their context, ownership inside the
SQL (another caller's conversation is 404 on every path), feedback, deletion, the stream's
events and the LLM-failure path."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from access.api_tokens import token_create
from conversations.models import Conversation, Message
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import SECRET, error_of, openai, post, sse_events

P1 = "客户 P1 工单应该怎么升级？"
P2_FOLLOW_UP = "那 P2 呢？"
EXPORT = "What are the Atlas CRM export limits?"
EXPORT_FOLLOW_UP = "and how many rows can they hold?"


@pytest.fixture
def tokens(sample_index):
    """Two tokens of one person who reads everything, and one of somebody else."""
    users = get_user_model().objects
    users.create_superuser("ana", "", "unused-pw-1")
    users.create_superuser("bo", "", "unused-pw-2")
    return {name: f"Bearer {token_create(username=user).secret}"
            for name, user in (("ana", "ana"), ("ana_other_token", "ana"), ("bo", "bo"))}


def call(client, method: str, path: str, token: str | None = None, body=None):
    headers = {"HTTP_AUTHORIZATION": token} if token else {}
    if body is None and method != "post":
        return getattr(client, method)(path, **headers)
    return getattr(client, method)(path, data=json.dumps(body or {}),
                                   content_type="application/json", **headers)


def test_a_follow_up_is_searched_with_the_question_before_it(client, sample_index):
    created = post(client, "/conversations", {"question": EXPORT})
    assert created.status_code == 201
    conversation = json.loads(created.content)
    first = conversation["answer"]
    assert first["condensation"] == "as_asked" and first["standalone_query"] == EXPORT
    assert conversation["title"] == EXPORT and conversation["message_count"] == 2

    follow_up = json.loads(post(client, f"/conversations/{conversation['id']}/messages",
                                {"question": EXPORT_FOLLOW_UP}).content)
    assert follow_up["condensation"] == "rule"
    # The first question's key terms, then the follow-up's own.
    assert follow_up["standalone_query"] == "Atlas CRM export limits many rows hold"
    assert follow_up["mode"] == "rag"
    assert {citation["source"] for citation in follow_up["citations"]} & {
        "products/Atlas CRM FAQ.md", "products/Atlas CRM.md"}
    # Alone, the same words find no answer: the conversation is what makes it answerable.
    alone = json.loads(post(client, "/ask", {"question": EXPORT_FOLLOW_UP}).content)
    assert alone["mode"] == "no_answer"

    stored = json.loads(client.get(f"/conversations/{conversation['id']}").content)
    assert [message["role"] for message in stored["messages"]] == [
        "user", "assistant", "user", "assistant"]
    answer = stored["messages"][3]
    assert answer["standalone_query"] == follow_up["standalone_query"]
    assert answer["trace_id"] == follow_up["trace_id"] and answer["id"] == follow_up["message_id"]
    cited = answer["citations"][0]
    assert cited["chunk_id"] > 0 and len(cited["content_hash"]) == 64
    assert answer["prompt_tokens"] > 0 and answer["token_source"] == "counted"
    assert answer["unsupported_citations"] == follow_up["unsupported_citations"] == 0


def test_the_answer_prompt_holds_the_earlier_turn_without_its_citation_markers(
        client, sample_index, config_override):
    with StubOpenAI(behaviour="json", answer="Follow-up answer [1].") as stub:
        openai(config_override, stub, llm_timeout_seconds=5.0)
        conversation = json.loads(post(client, "/conversations", {"question": P1}).content)
        stub.answer = "P2 answer [1]."
        post(client, f"/conversations/{conversation['id']}/messages", {"question": P2_FOLLOW_UP})
        # Two answers and, between them, one condensation call.
        condense, answer = stub.requests[1], stub.requests[2]
    condensation = condense.body["messages"]
    assert "standalone search query" in condensation[0]["content"]
    assert P1 in condensation[1]["content"] and P2_FOLLOW_UP in condensation[1]["content"]
    messages = answer.body["messages"]
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == P1 and messages[2]["content"] == "Follow-up answer ."
    assert messages[3]["content"].endswith(P2_FOLLOW_UP)


def test_another_callers_conversation_is_not_found_on_every_path(client, tokens):
    mine = json.loads(call(client, "post", "/conversations", tokens["ana"],
                           {"question": P1}).content)
    answer_id = mine["answer"]["message_id"]
    for other in (tokens["bo"], tokens["ana_other_token"]):
        for method, path, body in (
                ("get", f"/conversations/{mine['id']}", None),
                ("post", f"/conversations/{mine['id']}/messages", {"question": "那 P2 呢？"}),
                ("post", f"/conversations/{mine['id']}/messages/stream", {"question": "P2?"}),
                ("patch", f"/conversations/{mine['id']}", {"title": "taken"}),
                ("delete", f"/conversations/{mine['id']}", None),
                ("post", f"/messages/{answer_id}/feedback", {"rating": "up"})):
            response = call(client, method, path, other, body)
            assert response.status_code == 404, (method, path, response.content)
            assert error_of(response)["code"] == "not_found"
        assert json.loads(call(client, "get", "/conversations", other).content) == []
    listed = json.loads(call(client, "get", "/conversations", tokens["ana"]).content)
    assert [conversation["id"] for conversation in listed] == [mine["id"]]
    assert Conversation.objects.get(pk=mine["id"]).title == P1
    assert Message.objects.filter(conversation_id=mine["id"]).count() == 2


def test_feedback_rename_and_delete(client, sample_index):
    conversation = json.loads(post(client, "/conversations", {"question": P1}).content)
    answer_id = conversation["answer"]["message_id"]
    recorded = post(client, f"/messages/{answer_id}/feedback",
                    {"rating": "down", "error_type": "missing_source", "comment": " no P2 "})
    assert recorded.status_code == 200
    assert json.loads(recorded.content)["feedback"]["error_type"] == "missing_source"
    message = Message.objects.get(pk=answer_id)
    assert (message.rating, message.error_type, message.comment) == (-1, "missing_source",
                                                                     "no P2")
    question_id = conversation["answer"]["question_message_id"]
    assert post(client, f"/messages/{question_id}/feedback", {"rating": "up"}).status_code == 404
    bad = post(client, f"/messages/{answer_id}/feedback", {"rating": "meh"})
    assert bad.status_code == 422

    renamed = client.patch(f"/conversations/{conversation['id']}",
                           data=json.dumps({"title": "P1 升级"}), content_type="application/json")
    assert json.loads(renamed.content)["title"] == "P1 升级"
    assert client.delete(f"/conversations/{conversation['id']}").status_code == 204
    assert not Message.objects.filter(conversation_id=conversation["id"]).exists()
    assert client.get(f"/conversations/{conversation['id']}").status_code == 404


def test_the_conversation_stream_has_the_ask_events_and_stores_the_answer(client, sample_index):
    conversation = json.loads(post(client, "/conversations", {"question": EXPORT}).content)
    response = post(client, f"/conversations/{conversation['id']}/messages/stream",
                    {"question": EXPORT_FOLLOW_UP})
    assert response.status_code == 200
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-3:] == ["citations", "usage", "done"]
    by_name = dict(events)
    assert by_name["retrieval"]["standalone_query"] == "Atlas CRM export limits many rows hold"
    usage = by_name["usage"]
    assert set(usage) == {"prompt_tokens", "completion_tokens", "token_source", "timings_ms",
                          "embedding_model", "llm_model"}
    assert usage["token_source"] == "counted" and usage["completion_tokens"] > 0
    assert {"embed", "total"} <= set(usage["timings_ms"])
    assert usage["llm_model"] == "fake/fake-local" and usage["embedding_model"] == (
        "fake/fake-lexical-v1")
    done = by_name["done"]
    stored = Message.objects.get(pk=done["message_id"])
    assert stored.text == "".join(data["text"] for name, data in events if name == "delta")
    assert stored.conversation_id == conversation["id"] == done["conversation_id"]


def test_a_failing_model_answers_the_sources_when_asked(client, sample_index, config_override):
    with StubOpenAI(behaviour="status:500") as stub:
        openai(config_override, stub, llm_max_retries=0)
        refused = post(client, "/ask", {"question": P1})
        assert refused.status_code == 502 and error_of(refused)["code"] == "llm_upstream_error"
        answered = post(client, "/ask", {"question": P1, "on_llm_error": "sources"})
        assert answered.status_code == 200
        body = json.loads(answered.content)
        assert body["notice"]["code"] == "llm_unavailable"
        assert body["notice"]["cause"] == "llm_upstream_error"
        assert body["citations"] and body["mode"] == "rag"
        assert SECRET not in answered.content.decode()

        events = sse_events(post(client, "/ask/stream", {"question": P1,
                                                         "on_llm_error": "sources"}))
        names = [name for name, _ in events]
        assert names == ["retrieval", "notice", "citations", "usage", "done"]
        assert dict(events)["citations"]["citations"] == body["citations"]

        conversation = json.loads(post(client, "/conversations",
                                       {"question": P1, "on_llm_error": "sources"}).content)
        assert conversation["answer"]["notice"]["code"] == "llm_unavailable"
        assert conversation["messages"][1]["notice"]["cause"] == "llm_upstream_error"


def test_a_conversation_over_a_base_the_caller_cannot_read_is_refused(client, sample_index):
    response = post(client, "/conversations", {"knowledge_bases": ["nope"]})
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert post(client, "/conversations", {"title": "x\x00y"}).status_code == 422
    assert not Conversation.objects.exists()


def test_a_conversations_filters_hold_for_every_question_unless_one_gives_its_own(
        client, sample_index):
    created = post(client, "/conversations", {"question": EXPORT, "top_k": 3,
                                              "filters": {"folder": "products/"}})
    assert created.status_code == 201
    conversation = json.loads(created.content)
    assert conversation["filters"] == {"folder": "products/"}
    assert {c["source"] for c in conversation["answer"]["citations"]} <= {
        "products/Atlas CRM FAQ.md", "products/Atlas CRM.md"}
    path = f"/conversations/{conversation['id']}/messages"
    kept = json.loads(post(client, path, {"question": P1, "top_k": 3}).content)
    assert kept["mode"] == "no_answer" or all(
        c["source"].startswith("products/") for c in kept["citations"])
    own = json.loads(post(client, path, {"question": P1, "top_k": 3,
                                         "filters": {"folder": "policies"}}).content)
    assert own["mode"] == "rag" and {c["source"] for c in own["citations"]} == {
        "policies/Support Escalation Policy.md"}
    assert json.loads(client.get(f"/conversations/{conversation['id']}").content)[
        "filters"] == {"folder": "products/"}
    refused = post(client, "/conversations", {"filters": {"format": ["pptx"]}})
    assert refused.status_code == 422 and Conversation.objects.count() == 1
