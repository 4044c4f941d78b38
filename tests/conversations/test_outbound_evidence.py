"""The outbound policy follows what a conversation's earlier answers quoted, not the scope of
today: a turn citing a local-only base keeps it off any server elsewhere, a turn citing a base
its reader lost is sent nowhere and no longer shown, and condensation is recorded in the trace
like every other call to a server elsewhere. The LLM is a stub on loopback, counted as outside
this machine (tests/embeddings/test_outbound.py)."""

from __future__ import annotations

import json
import shutil

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from access.api_tokens import token_create
from access.callers import caller_for_user
from access.people import grant_remove, grant_set
from conversations import services
from conversations.api_schemas import turn_body
from conversations.models import Conversation, Message
from conversations.selectors import conversation_dict
from knowledge.bases import kb_create, kb_update
from tests.answering.stub_openai import StubOpenAI
from tests.embeddings.test_outbound import SAMPLE_VAULT, remote_llm
from traces.recording import trace_record, trace_ref, traced

SECRET = "主库切换口令：只在私有知识库中"  # text only the private base's answer holds
FOLLOW_UP = "那 P2 呢？"


@pytest.fixture
def bob(sample_index, tmp_path):
    """bob reads `default` (allowed to leave) and `private` (local-only); his conversation over
    `default` holds one answered turn that cited `private` (it was asked over both)."""
    folder = tmp_path / "private"
    shutil.copytree(SAMPLE_VAULT, folder)
    kb_create(slug="private", name="Private", sources=[str(folder)])
    kb_update(slug="default", outbound="allowed")
    user = get_user_model().objects.create_user(username="bob", password="pw")
    for slug in ("default", "private"):
        grant_set(username="bob", slug=slug, role="reader")
    caller = caller_for_user(user)
    conversation = services.conversation_create(caller=caller, knowledge_bases=["default"])
    Message.objects.create(conversation=conversation, role=Message.USER,
                           text="数据库主库故障怎么处理？")
    Message.objects.create(conversation=conversation, role=Message.ASSISTANT, mode="rag",
                           text=f"按 Runbook 切换到备库 [1]。{SECRET}",
                           standalone_query="数据库主库故障怎么处理？", condensation="as_asked",
                           citations=[{"knowledge_base": "private", "chunk_id": 1,
                                       "relative_path": "runbooks/db.md", "source": "db.md"}])
    return user, conversation


def ask(user, conversation: Conversation, config, trace=None) -> dict:
    """The follow-up asked as the API asks it, what it measured recorded in `trace`."""
    turn = services.turn_prepare(caller=caller_for_user(user), conversation_id=conversation.pk,
                                 question=FOLLOW_UP, top_k=5, fallback=False,
                                 on_llm_error="sources", config=config, trace=trace_ref(trace))
    answered = services.turn_answer(turn, config=config)
    trace_record(trace, *answered.measures)
    return turn_body(answered, trace_id=trace.id if trace is not None else None)


def test_a_turn_that_quoted_a_local_only_base_keeps_the_conversation_here(bob, tmp_path):
    user, conversation = bob
    # Today's scope is `default` alone, which may leave: the earlier answer's base decides.
    with StubOpenAI(answer="数据库 主库 故障 P2") as stub:
        config = remote_llm(stub, tmp_path)
        body = ask(user, conversation, config)
        assert stub.requests == []  # neither condensed nor answered elsewhere
    assert "outbound_refused" in body["notice"]["message"]
    assert "private" in body["notice"]["message"]


def test_a_turn_of_a_revoked_base_is_sent_nowhere_and_condensation_is_recorded(bob, tmp_path):
    user, conversation = bob
    grant_remove(username="bob", slug="private")
    with StubOpenAI(answer="P2 工单 升级") as stub, traced(operation="ask",
                                                        channel="test") as trace:
        body = ask(user, conversation, remote_llm(stub, tmp_path), trace=trace)
        sent = [json.dumps(request.body, ensure_ascii=False) for request in stub.requests]
    assert body["mode"] == "rag" and sent  # answered by the stub
    assert all(SECRET not in request for request in sent)
    assert all("数据库主库故障" not in request for request in sent)  # the whole turn is left out
    # The follow-up with no earlier turn to lean on is searched as asked: no condensation call.
    assert body["condensation"] == "as_asked"
    assert [record["what"] for record in trace.parameters["outbound"]] == ["LLM"]


def test_condensation_calls_are_in_the_traces_outbound_record(bob, tmp_path):
    user, conversation = bob
    kb_update(slug="private", outbound="allowed")
    with StubOpenAI(answer="数据库 主库 故障 P2") as stub, traced(operation="ask",
                                                              channel="test") as trace:
        body = ask(user, conversation, remote_llm(stub, tmp_path), trace=trace)
    assert body["condensation"] == "llm" and len(stub.requests) == 2
    condense, answer = trace.parameters["outbound"]
    assert (condense["what"], condense["knowledge_bases"]) == ("LLM", ["private"])
    assert condense["bytes"] == sum(len(message["content"].encode())
                                    for message in stub.requests[0].body["messages"])
    assert "private" in answer["knowledge_bases"]


def test_an_answer_quoting_a_base_its_reader_lost_is_withheld(bob):
    user, conversation = bob
    shown = conversation_dict(conversation, caller=caller_for_user(user))
    assert SECRET in shown["messages"][1]["text"]
    grant_remove(username="bob", slug="private")
    client = Client()
    client.force_login(user)
    # Over the API, with a token of bob's that owns the conversation (a token owns its own).
    token = token_create(username="bob")
    Conversation.objects.filter(pk=conversation.pk).update(owner=f"token:{token.id}")
    over_api = Client().get(f"/conversations/{conversation.pk}",
                            HTTP_AUTHORIZATION=f"Bearer {token.secret}")
    assert over_api.status_code == 200, over_api.content
    for body in (conversation_dict(conversation, caller=caller_for_user(user)),
                 over_api.json()):
        question, answer = body["messages"]
        assert question["text"] == "数据库主库故障怎么处理？"
        assert answer["text"] == "" and answer["citations"] == []
        assert answer["notice"]["code"] == "withheld"
        assert SECRET not in json.dumps(body, ensure_ascii=False, default=str)
    Conversation.objects.filter(pk=conversation.pk).update(owner=f"user:{user.pk}")
    page = client.get(f"/workbench/conversations/{conversation.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert SECRET not in html and "数据库主库故障怎么处理？" in html
    assert "you can no longer read, so it is withheld" in html
