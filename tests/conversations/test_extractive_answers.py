"""LLM_PROVIDER=extractive behind `/v1/chat/completions` (whole and streamed) and a
conversation's follow-up: the answer quoted from the sources, unrelated sources left uncited."""

from __future__ import annotations

import json
import re

import pytest

from tests.api.http import IN_DOMAIN, post
from tests.conversations.test_openai_chat_completions import ask, chat, chunks, completion

P2_FOLLOW_UP = "那 P2 呢？"


@pytest.fixture
def extractive(config_override):
    return config_override(llm_provider="extractive")


def test_a_completion_is_the_quoted_answer_and_its_sources(client, sample_index, extractive):
    body = completion(chat(client, ask(IN_DOMAIN)))
    answer, sources = body["choices"][0]["message"]["content"].split("\n\nSources:\n")
    assert answer.startswith("客户提交的 P1 工单按以下时间线升级。 [1]")
    assert "**T+30 分钟**" in answer
    assert sources.startswith("- [1] policies/Support Escalation Policy.md")
    assert body["mode"] == "rag" and body["usage"]["completion_tokens"] > 0


def test_a_streamed_completion_is_the_same_text(client, sample_index, extractive):
    whole = completion(chat(client, ask(IN_DOMAIN)))
    sent = chunks(chat(client, ask(IN_DOMAIN, stream=True)))
    assert sent[-1] == "[DONE]"
    text_chunks = [chunk for chunk in sent[:-1] if chunk["choices"]]
    content = "".join(chunk["choices"][0]["delta"].get("content") or ""
                      for chunk in text_chunks)
    assert content == whole["choices"][0]["message"]["content"]
    assert len(text_chunks) > 20


def test_a_follow_up_quotes_p2_and_leaves_the_unrelated_sources_uncited(client, sample_index,
                                                                         extractive):
    conversation = json.loads(post(client, "/conversations",
                                   {"question": "客户 P1 工单应该怎么升级？"}).content)
    follow_up = json.loads(post(client, f"/conversations/{conversation['id']}/messages",
                                {"question": P2_FOLLOW_UP}).content)
    assert follow_up["mode"] == "rag" and follow_up["condensation"] == "rule"
    answer = follow_up["answer"]
    assert "**P2（High）**" in answer and "| P2 | 1 小时 | 每 4 小时 | 7×24" in answer
    numbers = {int(number) for number in re.findall(r"\[(\d+)\]", answer)}
    cited = {follow_up["citations"][number - 1]["source"] for number in numbers}
    assert "policies/Support Escalation Policy.md" in cited
    assert "products/Atlas CRM FAQ.md" not in cited
    assert follow_up["unsupported_citations"] == 0
