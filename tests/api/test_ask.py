"""`POST /ask`: the response shape, validation, body limit and LLM error mapping."""

from __future__ import annotations

import json
import logging

import pytest

from tests.answering.stub_openai import StubOpenAI
from tests.api.http import IN_DOMAIN, SECRET, error_of, openai, post


def test_ask_shape(client, sample_index):
    response = post(client, "/ask", {"question": IN_DOMAIN})
    body = json.loads(response.content)
    assert response.status_code == 200
    assert set(body) == {"mode", "confidence", "answer", "citations", "invalid_citations_removed"}
    assert body["mode"] == "rag" and body["citations"]


@pytest.mark.parametrize("body", [{"question": "x", "fallback": "yes"},
                                  {"question": "x", "fallback": 1},
                                  {"question": "  "}, {"query": "x"}])
def test_invalid_ask_requests_are_422(client, db, body):
    for path in ("/ask", "/ask/stream"):
        response = post(client, path, body)
        assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"


def test_body_over_one_megabyte_is_413(client, db):
    response = post(client, "/ask", json.dumps({"question": "x" * (1024 * 1024 + 10)}), raw=True)
    assert response.status_code == 413 and error_of(response)["code"] == "payload_too_large"


@pytest.mark.parametrize(
    ("behaviour", "status", "code"),
    [
        ("status:401", 502, "llm_auth_failed"),
        ("status:403", 502, "llm_auth_failed"),
        ("status:429", 503, "llm_rate_limited"),
        ("status:500", 502, "llm_upstream_error"),
        ("malformed_json", 502, "llm_upstream_error"),
        ("missing_choices", 502, "llm_upstream_error"),
        ("hang", 504, "llm_timeout"),
    ],
)
def test_llm_failures_map_to_status_and_code(client, sample_index, config_override, caplog,
                                             behaviour, status, code):
    caplog.set_level(logging.DEBUG)
    with StubOpenAI(behaviour=behaviour, hang_seconds=3) as stub:
        openai(config_override, stub)
        response = post(client, "/ask", {"question": IN_DOMAIN})
        assert response.status_code == status and error_of(response)["code"] == code
        assert stub.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in response.content.decode()
    assert SECRET not in caplog.text


def test_llm_network_error_is_502(client, sample_index, config_override):
    config_override(llm_provider="openai-compatible", llm_base_url="http://127.0.0.1:9/v1",
                    llm_model="m", llm_api_key=SECRET)
    response = post(client, "/ask", {"question": IN_DOMAIN})
    assert response.status_code == 502 and error_of(response)["code"] == "llm_upstream_error"
    assert SECRET not in response.content.decode()
