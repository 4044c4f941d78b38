"""A conversation's answers carry what their tokens cost at RAG_MODEL_PRICES ({amount,
currency}), whole or streamed; null where the model has no price."""

from __future__ import annotations

import json

import pytest

from tests.answering.stub_openai import StubOpenAI
from tests.api.http import IN_DOMAIN, openai, post, sse_events

PRICES = json.dumps({"stub-model": {"input_per_1k": 1, "output_per_1k": 4, "currency": "EUR"}})
USAGE = {"prompt_tokens": 200, "completion_tokens": 25, "total_tokens": 225}


def test_answers_whole_and_streamed_keep_the_cost_of_their_tokens(client, sample_index,
                                                                  config_override):
    with StubOpenAI(behaviour="json") as stub:
        stub.usage = USAGE
        openai(config_override, stub, llm_timeout_seconds=5.0, RAG_MODEL_PRICES=PRICES)
        conversation = json.loads(post(client, "/conversations", {"question": IN_DOMAIN}).content)
        stub.behaviour = "sse"
        sse_events(post(client, f"/conversations/{conversation['id']}/messages/stream",
                        {"question": IN_DOMAIN}))
    stored = json.loads(client.get(f"/conversations/{conversation['id']}").content)
    question, answer, _, streamed = stored["messages"]
    assert question["cost"] is None
    for message in (answer, streamed):
        assert (message["prompt_tokens"], message["completion_tokens"]) == (200, 25)
        assert message["cost"] == {"amount": pytest.approx(0.3), "currency": "EUR"}  # 0.2 + 0.1


def test_an_answer_of_a_model_without_a_price_costs_null(client, sample_index, config_override):
    with StubOpenAI(behaviour="json") as stub:
        stub.usage = USAGE
        openai(config_override, stub, llm_timeout_seconds=5.0)
        conversation = json.loads(post(client, "/conversations", {"question": IN_DOMAIN}).content)
    stored = json.loads(client.get(f"/conversations/{conversation['id']}").content)
    assert stored["messages"][1]["prompt_tokens"] == 200
    assert stored["messages"][1]["cost"] is None
