"""The OpenAI-compatible endpoint over a real socket (`rag serve`), with the official `openai`
package as the client: the models a token may use, a two-turn Chinese conversation whose
follow-up only makes sense with the first turn (whole and streamed), and the client's own
exceptions for an unknown model, a bad token, a base outside a narrowed token and a refused
parameter."""

from __future__ import annotations

import openai
import pytest
from openai import OpenAI

from tests.commands.test_serve import serve  # noqa: F401 - the fixture
from tests.harness import ROOT

P1 = "客户 P1 工单应该怎么升级？"
P2 = "那 P2 呢？"
ESCALATION = "policies/Support Escalation Policy.md"


@pytest.fixture
def served(clean_tables, serve, run_cli):  # noqa: F811
    """The sample vault in `default`, an empty base `tin`, a superuser's token and one of the
    same person narrowed to `default`; the server."""
    assert run_cli("ingest", str(ROOT / "samples" / "acme-vault")).returncode == 0
    # One process for what `rag kb create`, `createsuperuser` and `rag token create` do.
    made = run_cli("shell", "-c", "\n".join([
        "from django.contrib.auth import get_user_model",
        "from access.api_tokens import token_create",
        "from knowledge.bases import kb_create",
        "kb_create(slug='tin', name='Tin project')",
        "get_user_model().objects.create_superuser('ana', '', 'pw-unused-1x')",
        "print(token_create(username='ana').secret)",
        "print(token_create(username='ana', slugs=['default']).secret)"]))
    assert made.returncode == 0, made.stderr
    full, narrowed = made.stdout.split()[-2:]  # after the shell's own greeting
    return serve(), full, narrowed


def client_of(server, token: str) -> OpenAI:
    return OpenAI(base_url=f"{server.url}/v1", api_key=token, max_retries=0, timeout=30)


def test_a_conversation_through_the_openai_client(served):
    server, token, _ = served
    client = client_of(server, token)
    assert [model.id for model in client.models.list()] == ["local-rag", "kb:default", "kb:tin"]
    assert client.models.retrieve("kb:tin").model_extra["name"] == "Tin project"

    first = client.chat.completions.create(
        model="kb:default", messages=[{"role": "user", "content": P1}])
    answer = first.choices[0].message.content
    assert first.choices[0].finish_reason == "stop" and first.usage.total_tokens > 0
    assert f"\n\nSources:\n- [1] {ESCALATION} › " in answer
    assert first.model_extra["citations"][0]["source"] == ESCALATION

    conversation = [{"role": "user", "content": P1}, {"role": "assistant", "content": answer},
                    {"role": "user", "content": P2}]
    whole = client.chat.completions.create(model="kb:default", messages=conversation)
    assert whole.model_extra["standalone_query"] == "客户 P2 工单应该怎么升级？"
    assert "P2（High）" in whole.choices[0].message.content
    # The P2 section is among the cited sources (its number depends on the ranking).
    sources = whole.choices[0].message.content.split("\n\nSources:\n")[1].splitlines()
    assert any(line.endswith(f"] {ESCALATION} › 其他优先级 P2 / P3 / P4") for line in sources)

    stream = client.chat.completions.create(model="kb:default", messages=conversation,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == whole.choices[0].message.content
    finished = [chunk for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason]
    assert [chunk.choices[0].finish_reason for chunk in finished] == ["stop"]
    assert finished[0].model_extra["citations"] == whole.model_extra["citations"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0


def test_the_openai_client_raises_its_own_errors(served):
    server, token, narrowed = served
    client = client_of(server, token)
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": P1}])
    assert unknown.value.body["param"] == "model"
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="local-rag", n=2,
                                       messages=[{"role": "user", "content": P1}])
    assert refused.value.body["param"] == "n"
    with pytest.raises(openai.AuthenticationError):
        client_of(server, "lr_not-a-token").models.list()

    narrow = client_of(server, narrowed)
    assert [model.id for model in narrow.models.list()] == ["local-rag", "kb:default"]
    with pytest.raises(openai.NotFoundError):
        narrow.chat.completions.create(model="kb:tin", messages=[{"role": "user", "content": P1}])
    with pytest.raises(openai.NotFoundError):
        narrow.models.retrieve("kb:tin")
    # Its "all of mine" model reads only `default`.
    mine = narrow.chat.completions.create(model="local-rag",
                                          messages=[{"role": "user", "content": P1}])
    assert {citation["knowledge_base"] for citation in mine.model_extra["citations"]} == {
        "default"}
