"""`POST /ask` and `POST /ask/stream` with LLM_PROVIDER=extractive: an answer quoted from the
sources, its quotes verified, the same text streamed in small deltas, the fallback path."""

from __future__ import annotations

import json
import re

import pytest

from answering.extractive import EXTRACTIVE_MODEL, NO_SOURCES_ZH
from answering.modes import FALLBACK_NOTICE
from tests.api.http import IN_DOMAIN, OUT_OF_DOMAIN, post, sse_events


@pytest.fixture
def extractive(config_override):
    return config_override(llm_provider="extractive")


def cited(answer: str) -> set[int]:
    return {int(number) for number in re.findall(r"\[(\d+)\]", answer)}


def test_ask_quotes_the_timeline_and_every_quote_verifies(client, sample_index, extractive):
    body = json.loads(post(client, "/ask", {"question": IN_DOMAIN}).content)
    assert body["mode"] == "rag" and body["unsupported_citations"] == 0
    answer = body["answer"]
    assert "客户提交的 P1 工单按以下时间线升级。 [1]" in answer
    assert "**T+30 分钟**" in answer and "**T+2 小时**" in answer
    for number, citation in enumerate(body["citations"], start=1):
        # A source the answer quotes has its quote; one it leaves out has none.
        assert (citation["quote"] is not None) is (number in cited(answer))
        if citation["quote"] is not None:
            assert citation["quote_support"] == 1.0


def test_the_stream_sends_the_same_answer_in_small_deltas(client, sample_index, extractive):
    whole = json.loads(post(client, "/ask", {"question": IN_DOMAIN}).content)
    events = sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN}))
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-3:] == ["citations", "usage", "done"]
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert "".join(deltas) == whole["answer"] and len(deltas) > 20
    payloads = dict(events)
    assert payloads["citations"]["citations"] == whole["citations"]
    assert payloads["citations"]["unsupported_citations"] == 0
    assert payloads["usage"]["llm_model"] == f"extractive/{EXTRACTIVE_MODEL}"
    assert payloads["usage"]["completion_tokens"] > 0


def test_out_of_domain_is_still_no_answer(client, sample_index, extractive):
    body = json.loads(post(client, "/ask", {"question": OUT_OF_DOMAIN}).content)
    assert body["mode"] == "no_answer" and body["citations"] == []


def test_a_fallback_answer_says_there_is_nothing_to_quote(client, sample_index, config_override):
    config_override(llm_provider="extractive", rag_fallback_enabled=True)
    body = json.loads(post(client, "/ask", {"question": OUT_OF_DOMAIN, "fallback": True}).content)
    assert body["mode"] == "fallback"
    assert body["answer"] == FALLBACK_NOTICE + NO_SOURCES_ZH
    events = sse_events(post(client, "/ask/stream", {"question": OUT_OF_DOMAIN,
                                                     "fallback": True}))
    assert "".join(data["text"] for name, data in events if name == "delta") == body["answer"]
