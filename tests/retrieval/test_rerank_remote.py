"""The openai-compatible reranker against a local stub server: the request, mapping by index,
the provider's limits, error mapping, retries, the deadline, and the key kept secret."""

from __future__ import annotations

import itertools
import logging
import socket
import time
import traceback
from collections.abc import Iterator

import pytest

from core.text_tokens import tokens_count
from retrieval.rerank import RerankCandidate, rerank
from retrieval.rerank.limits import (
    MAX_DOCUMENTS,
    MAX_REQUEST_TOKENS,
    MAX_TEXT_TOKENS,
    RerankRequestInvalid,
    rerank_request_plan,
)
from retrieval.rerank.remote import (
    OpenAICompatibleReranker,
    RerankAuthFailed,
    RerankRateLimited,
    RerankTimeout,
    RerankUpstreamError,
)
from tests.retrieval.stub_rerank import StubRerank, stub_score

API_KEY = "sk-rerank-secret-5f1c9a"
QUERY = "rotate vpn certificate"
TEXTS = ["VPN certificate rotation happens yearly, before expiry.",
         "The cafeteria menu changes weekly.",
         "Rotate the VPN certificate with the ops runbook.",
         "Certificate authorities sign TLS certificates.",
         "vpn access needs a ticket"]


@pytest.fixture
def stub() -> Iterator[StubRerank]:
    with StubRerank() as server:
        yield server


def reranker_for(stub: StubRerank, *, timeout: float = 5.0, retries: int = 2,
                 instruct: str | None = None) -> OpenAICompatibleReranker:
    return OpenAICompatibleReranker(base_url=stub.base_url, model="stub-reranker",
                                    api_key=API_KEY, timeout_seconds=timeout,
                                    max_retries=retries, instruct=instruct)


def candidates_of(texts: list[str]) -> list[RerankCandidate]:
    """One candidate per text, fused in the order given; no note or section, so the text sent
    is the content itself."""
    return [RerankCandidate(chunk_id=100 + rank, content=text, heading_path=(), relative_path="",
                            fused_rank=rank)
            for rank, text in enumerate(texts, start=1)]


def words(word: str, count: int) -> str:
    """A text of exactly `count` tokens."""
    text = " ".join([word] * count)
    assert tokens_count(text) == count
    return text


# --- the request ------------------------------------------------------------------------------


def test_request_has_the_top_level_fields_and_the_key_only_in_the_header(stub):
    candidate = RerankCandidate(chunk_id=1, content="Use the ops runbook.",
                                heading_path=("VPN", "Certificates"), relative_path="ops/vpn.md",
                                fused_rank=1, cosine=0.4)
    reranker_for(stub).rerank(query=QUERY, candidates=[candidate, *candidates_of(TEXTS[:2])[1:]])
    [request] = stub.requests
    assert request.path == "/v1/reranks"
    assert request.body == {
        "model": "stub-reranker", "query": QUERY, "top_n": 2,
        "documents": ["Note: ops/vpn.md\nSection: VPN > Certificates\n\nUse the ops runbook.",
                      TEXTS[1]]}
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert API_KEY not in str(request.body)


def test_instruct_is_sent_when_given(stub):
    reranker_for(stub, instruct="Find the runbook step.").rerank(
        query=QUERY, candidates=candidates_of(TEXTS))
    assert stub.requests[0].body["instruct"] == "Find the runbook step."


def test_documents_are_sent_in_fused_order_whatever_the_input_order(stub):
    candidates = candidates_of(TEXTS)
    reranker_for(stub).rerank(query=QUERY, candidates=list(reversed(candidates)))
    assert stub.requests[0].body["documents"] == TEXTS


def test_no_candidates_sends_no_request(stub):
    assert reranker_for(stub).rerank(query=QUERY, candidates=[]) == []
    assert stub.requests == []


# --- mapping by index -------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["ok", "mislabelled"])
def test_scores_are_mapped_by_index_never_by_order_or_text(stub, behaviour):
    stub.behaviour = behaviour
    ranked = reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    returned = [result["index"] for result in stub.last_results]
    assert returned != sorted(returned), "the stub should answer out of order"
    assert returned != sorted(returned, key=lambda index: -stub_score(QUERY, TEXTS[index]))
    for item in ranked:
        assert item.score == stub_score(QUERY, item.candidate.content)
    expected = sorted(candidates_of(TEXTS),
                      key=lambda candidate: (-stub_score(QUERY, candidate.content),
                                             candidate.fused_rank))
    assert [item.candidate for item in ranked] == expected
    assert ranked[0].candidate.content == TEXTS[2]


@pytest.mark.parametrize("behaviour", ["bad_index", "repeated_index"])
def test_index_out_of_range_or_repeated_is_upstream_error(stub, behaviour):
    stub.behaviour = behaviour
    with pytest.raises(RerankUpstreamError) as caught:
        reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert caught.value.details == {"reason": "bad_index"}
    assert caught.value.http_status == 502


def test_malformed_json_is_upstream_error_and_not_retried(stub):
    stub.behaviour = "malformed_json"
    with pytest.raises(RerankUpstreamError) as caught:
        reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert caught.value.details == {"reason": "malformed_response"}
    assert len(stub.requests) == 1


# --- the provider's limits --------------------------------------------------------------------


def test_501_documents_send_the_500_best_fused(stub):
    texts = [f"note number {number}" for number in range(MAX_DOCUMENTS + 1)]
    candidates = candidates_of(texts)
    ranked = reranker_for(stub).rerank(query="note 7", candidates=candidates[::-1])
    body = stub.requests[0].body
    assert len(body["documents"]) == body["top_n"] == 500
    assert body["documents"] == texts[:500]
    assert ranked[-1].candidate == candidates[500] and ranked[-1].score is None
    assert all(item.score is not None for item in ranked[:500])


def test_a_4001_token_document_is_cut_to_4000(stub):
    long_text = words("hello", MAX_TEXT_TOKENS + 1)
    ranked = reranker_for(stub).rerank(query="hello world",
                                       candidates=candidates_of([long_text, "world"]))
    sent = stub.requests[0].body["documents"]
    assert tokens_count(sent[0]) == MAX_TEXT_TOKENS
    assert long_text.startswith(sent[0]) and sent[1] == "world"
    assert {item.candidate.fused_rank: item.truncated for item in ranked} == {1: True, 2: False}
    assert all(item.score is not None for item in ranked)


def test_the_query_counts_once_per_document_within_120000_tokens(stub):
    query = words("alpha", 1000)
    sizes = [1500, 2500, 3999] * 20
    texts = [words("beta", size) for size in sizes]
    # The rule, computed here: documents in fused order while query × n + their tokens fit.
    expected, total = 0, 0
    while total + 1000 + sizes[expected] <= MAX_REQUEST_TOKENS:
        total += 1000 + sizes[expected]
        expected += 1
    assert 0 < expected < len(texts)
    ranked = reranker_for(stub).rerank(query=query, candidates=candidates_of(texts))
    body = stub.requests[0].body
    assert len(body["documents"]) == body["top_n"] == expected
    sent_tokens = tokens_count(body["query"]) * expected + sum(map(tokens_count,
                                                                   body["documents"]))
    assert sent_tokens == total <= MAX_REQUEST_TOKENS
    assert sent_tokens + 1000 + sizes[expected] > MAX_REQUEST_TOKENS
    assert [item.candidate.fused_rank for item in ranked[expected:]] == list(
        range(expected + 1, len(texts) + 1))
    assert all(item.score is None for item in ranked[expected:])


def test_request_plan_reports_what_was_left_out_and_cut():
    candidates = candidates_of([words("gamma", 4100), *[words("delta", 3999)] * 40])
    plan = rerank_request_plan(query=words("alpha", 4000), candidates=candidates)
    # 4000 + 4000 for the cut first document, then 4000 + 3999 each: 14 fit in 120,000.
    assert (len(plan.sent), plan.truncated, plan.query_tokens) == (15, frozenset({0}), 4000)
    assert plan.request_tokens == 8000 + 14 * 7999
    assert plan.left_out == candidates[15:]


def test_a_query_over_4000_tokens_is_refused_before_any_request(stub):
    with pytest.raises(RerankRequestInvalid) as caught:
        reranker_for(stub).rerank(query=words("alpha", MAX_TEXT_TOKENS + 1),
                                  candidates=candidates_of(TEXTS))
    assert caught.value.details == {"query_tokens": 4001, "limit_tokens": 4000}
    assert stub.requests == []


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "error", "code", "requests"), [
    (401, RerankAuthFailed, "rerank_auth_failed", 1),
    (403, RerankAuthFailed, "rerank_auth_failed", 1),
    (429, RerankRateLimited, "rerank_rate_limited", 3),
    (400, RerankUpstreamError, "rerank_upstream_error", 1),
    (404, RerankUpstreamError, "rerank_upstream_error", 1),
    (500, RerankUpstreamError, "rerank_upstream_error", 3),
    (503, RerankUpstreamError, "rerank_upstream_error", 3),
])
def test_status_errors_map_to_rerank_codes(stub, status, error, code, requests):
    stub.behaviour = f"status:{status}"
    with pytest.raises(error) as caught:
        reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert caught.value.code == code
    assert caught.value.details == {"status": status}
    assert stub.base_url not in str(caught.value.as_body())
    assert len(stub.requests) == requests


def test_429_waits_for_retry_after_then_succeeds(stub):
    stub.script, stub.retry_after = ["status:429"], "1"
    ranked = reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert ranked[0].candidate.content == TEXTS[2]
    first, second = (request.received_at for request in stub.requests)
    assert 0.95 <= second - first < 1.6


def test_500_then_success_is_retried(stub):
    stub.script = ["status:500"]
    ranked = reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert len(stub.requests) == 2 and all(item.score is not None for item in ranked)


def test_retry_after_beyond_the_deadline_ends_at_once(stub):
    stub.behaviour, stub.retry_after = "status:429", "30"
    started = time.monotonic()
    with pytest.raises(RerankRateLimited) as caught:
        reranker_for(stub, timeout=2).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert time.monotonic() - started < 0.5
    assert len(stub.requests) == 1
    assert caught.value.headers == {"Retry-After": "30"}


def test_slow_server_is_rerank_timeout_at_the_deadline(stub):
    stub.behaviour = "slow"
    started = time.monotonic()
    with pytest.raises(RerankTimeout) as caught:
        reranker_for(stub, timeout=0.5).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert 0.45 <= time.monotonic() - started < 2
    assert (caught.value.code, caught.value.http_status) == ("rerank_timeout", 504)
    assert "RERANK_TIMEOUT_SECONDS" in caught.value.message
    assert len(stub.requests) == 1


def test_dropped_connection_is_retried(stub):
    stub.script = ["close"]
    reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert len(stub.requests) == 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_nothing_listening_is_upstream_error():
    reranker = OpenAICompatibleReranker(base_url=f"http://127.0.0.1:{free_port()}/v1",
                                        model="m", api_key=API_KEY, timeout_seconds=2,
                                        max_retries=0)
    with pytest.raises(RerankUpstreamError) as caught:
        reranker.rerank(query=QUERY, candidates=candidates_of(TEXTS))
    assert caught.value.details["error"] == "ConnectError"


def test_client_takes_its_settings_from_the_config(config_override, stub):
    config = config_override(rag_rerank="openai-compatible", rerank_base_url=stub.base_url,
                             rerank_model="stub-reranker", rerank_api_key=API_KEY,
                             rerank_timeout_seconds=3.5, llm_max_retries=0)
    stub.behaviour = "status:500"
    with pytest.raises(RerankUpstreamError):
        rerank(query=QUERY, candidates=candidates_of(TEXTS), config=config)
    assert len(stub.requests) == 1
    assert stub.requests[0].body["model"] == "stub-reranker"


# --- the key never leaks ----------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["status:401", "status:403", "status:429", "status:500",
                                       "malformed_json", "bad_index", "slow"])
def test_api_key_never_in_errors_reprs_or_logs(stub, caplog, behaviour):
    caplog.set_level(logging.DEBUG)
    stub.behaviour = behaviour
    reranker = reranker_for(stub, timeout=0.5, retries=1)
    with pytest.raises((RerankAuthFailed, RerankRateLimited, RerankTimeout,
                        RerankUpstreamError)) as caught:
        reranker.rerank(query=QUERY, candidates=candidates_of(TEXTS))
    exc = caught.value
    for text in (str(exc), repr(exc), repr(exc.details), str(exc.as_body()), repr(reranker),
                 caplog.text, "".join(traceback.format_exception(exc))):
        assert API_KEY not in text
    assert any(record.name == "localrag.rerank" for record in caplog.records)


def test_retry_waits_are_logged_under_the_rerank_logger(stub, caplog):
    caplog.set_level(logging.INFO, logger="localrag.rerank")
    stub.script = ["status:503"]
    reranker_for(stub).rerank(query=QUERY, candidates=candidates_of(TEXTS))
    messages = [record.getMessage() for record in caplog.records
                if record.name == "localrag.rerank"]
    assert any(message.startswith("rerank request failed (rerank_upstream_error); retry 1 of 2")
               for message in messages)


def test_gaps_between_retries_stay_inside_the_deadline(stub):
    stub.behaviour, stub.retry_after = "status:503", None
    started = time.monotonic()
    with pytest.raises(RerankUpstreamError):
        reranker_for(stub, timeout=0.9, retries=5).rerank(query=QUERY,
                                                          candidates=candidates_of(TEXTS))
    # The first backoff (at most 0.5 s) fits, the second (at least 0.75 s) does not.
    assert len(stub.requests) == 2
    assert time.monotonic() - started < 0.9
    times = [request.received_at for request in stub.requests]
    assert all(later > earlier for earlier, later in itertools.pairwise(times))
