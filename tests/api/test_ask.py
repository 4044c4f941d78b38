"""`POST /ask`: the response shape, validation, body limit and LLM error mapping."""

from __future__ import annotations

import json
import logging
import time

import pytest

from tests.answering.stub_openai import StubOpenAI
from tests.api.http import (
    IN_DOMAIN,
    SECRET,
    error_of,
    openai,
    post,
    slots_free,
    slots_held,
)
from tests.conftest import PAGED_SOURCE


def test_ask_shape(client, sample_index):
    response = post(client, "/ask", {"question": IN_DOMAIN})
    body = json.loads(response.content)
    assert response.status_code == 200
    assert set(body) == {"mode", "confidence", "answer", "citations", "invalid_citations_removed",
                         "unsupported_citations", "trace_id", "refusal"}
    assert body["mode"] == "rag" and body["citations"]
    assert response["X-Request-ID"] == body["trace_id"]
    # How the mode was decided: the fake provider's rule, the signals it read.
    refusal = body["refusal"]
    assert refusal["rule"] == "signals" and refusal["grounded"] is True
    assert refusal["probability"] >= 0.402 and refusal["threshold"] is None
    assert refusal["signals"]["top"] == round(body["confidence"], 6)
    assert set(refusal["signals"]) == {"top", "gap", "support", "coverage", "cjk_share"}


def test_ask_citations_carry_page_spans_and_null_for_notes(client, paged_index):
    response = post(client, "/ask", {"question": IN_DOMAIN, "top_k": 10})
    body = json.loads(response.content)
    assert response.status_code == 200 and body["mode"] == "rag"
    paged = [c for c in body["citations"] if c["source"] == PAGED_SOURCE]
    notes = [c for c in body["citations"] if c["source"] != PAGED_SOURCE]
    assert paged and notes
    # A citation names its own chunk's pages, also when its block holds adjacent chunks.
    assert [(c["page_start"], c["page_end"]) for c in paged] == [
        paged_index[c["chunk_index"]] for c in paged]
    assert [(c["page_start"], c["page_end"]) for c in notes] == [(None, None)] * len(notes)


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


@pytest.mark.parametrize("behaviour", ["drip", "drip_headers"])
def test_dripping_upstream_is_504_within_the_deadline(client, sample_index, config_override,
                                                      behaviour):
    # One byte every 0.2 s, of the body or of the headers themselves: every read is quick, the
    # whole answer never is.
    with StubOpenAI(behaviour=behaviour, drip_seconds=0.2, answer="slow " * 100) as stub:
        openai(config_override, stub, llm_timeout_seconds=1.0)
        started = time.monotonic()
        response = post(client, "/ask", {"question": IN_DOMAIN})
        elapsed = time.monotonic() - started
    assert response.status_code == 504 and error_of(response)["code"] == "llm_timeout"
    assert elapsed < 1.0 + 1.0


def test_stall_before_headers_is_504_within_the_deadline(client, sample_index, config_override):
    with StubOpenAI(behaviour="hang", hang_seconds=10) as stub:
        openai(config_override, stub, llm_timeout_seconds=1.0)
        started = time.monotonic()
        response = post(client, "/ask", {"question": IN_DOMAIN})
        elapsed = time.monotonic() - started
    assert response.status_code == 504 and error_of(response)["code"] == "llm_timeout"
    assert elapsed < 1.0 + 1.0


def test_all_llm_slots_busy_is_503_with_retry_after(client, sample_index, config_override,
                                                    tmp_path):
    with StubOpenAI() as stub, slots_held(tmp_path, 2):
        openai(config_override, stub, project_root=tmp_path, llm_max_concurrency=2,
               llm_queue_wait_seconds=0.2)
        response = post(client, "/ask", {"question": IN_DOMAIN})
        assert stub.requests == []  # turned away before reaching the model
    assert response.status_code == 503 and error_of(response)["code"] == "llm_busy"
    assert response["Retry-After"] == "1"


def test_ask_gives_its_llm_slot_back(client, sample_index, config_override, tmp_path):
    with StubOpenAI() as stub:
        openai(config_override, stub, project_root=tmp_path, llm_max_concurrency=1)
        for _ in range(2):
            assert post(client, "/ask", {"question": IN_DOMAIN}).status_code == 200
    assert slots_free(tmp_path, 1)


def test_upstream_rate_limit_passes_retry_after_on(client, sample_index, config_override):
    with StubOpenAI(behaviour="status:429", retry_after="120") as stub:
        openai(config_override, stub)
        response = post(client, "/ask", {"question": IN_DOMAIN})
    assert response.status_code == 503 and error_of(response)["code"] == "llm_rate_limited"
    assert response["Retry-After"] == "120"


@pytest.mark.parametrize("behaviour", ["status:500", "status:401", "status:429", "hang", "drip",
                                       "malformed_json", "close"])
def test_no_error_body_names_the_llm_server(client, sample_index, config_override, behaviour):
    with StubOpenAI(behaviour=behaviour, hang_seconds=3, drip_seconds=0.2) as stub:
        openai(config_override, stub, llm_max_retries=0)
        response = post(client, "/ask", {"question": IN_DOMAIN})
        host, port = stub.base_url.split("//")[1].split("/")[0].split(":")
    assert response.status_code in (502, 503, 504)
    text = response.content.decode()
    assert stub.base_url not in text and f"{host}:{port}" not in text and port not in text
