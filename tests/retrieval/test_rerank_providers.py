"""The table of rerank providers, the settings each needs, and `rerank_safely`: a failing
reranker costs the request its refinement, never its answer."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from core.config import RERANK_PROVIDERS
from core.errors import ERROR_TABLE
from retrieval.rerank import (
    RERANK_FAILURES,
    RERANKERS,
    RerankCandidate,
    RerankConfigMissing,
    get_reranker,
    rerank,
    rerank_config_check,
    rerank_safely,
    reranker_status,
)
from tests.retrieval.stub_rerank import StubRerank

API_KEY = "sk-rerank-secret-0b7e"
QUERY = "rotate vpn certificate"
TEXTS = ["Expense reports are due monthly.", "VPN access needs a ticket.",
         "Rotate the VPN certificate with the ops runbook.", "The cafeteria opens at 8."]


@pytest.fixture
def stub() -> Iterator[StubRerank]:
    with StubRerank() as server:
        yield server


@pytest.fixture
def remote(config_override, stub):
    return config_override(rag_rerank="openai-compatible", rerank_base_url=stub.base_url,
                           rerank_model="stub-reranker", rerank_api_key=API_KEY,
                           rerank_timeout_seconds=0.5, llm_max_retries=0)


def candidates_of(texts: list[str]) -> list[RerankCandidate]:
    return [RerankCandidate(chunk_id=10 * rank, content=text, heading_path=(), relative_path="",
                            fused_rank=rank, cosine=0.5)
            for rank, text in enumerate(texts, start=1)]


# --- the table --------------------------------------------------------------------------------


def test_the_table_has_one_row_per_configurable_provider():
    assert tuple(RERANKERS) == RERANK_PROVIDERS


def test_every_rerank_error_but_missing_settings_is_a_fallback():
    codes = {code for code in ERROR_TABLE if code.startswith("rerank_")}
    assert {error.code for error in RERANK_FAILURES} == codes - {"rerank_config_missing"}


@pytest.mark.parametrize(("provider", "kind"), [("none", "FusedOrderReranker"),
                                                ("features", "FeaturesReranker")])
def test_providers_without_settings_build_without_any(config_override, provider, kind):
    config = config_override(rag_rerank=provider, rerank_model="", rerank_base_url="",
                             rerank_api_key="")
    reranker = get_reranker(config=config)
    assert (type(reranker).__name__, reranker.name) == (kind, provider)
    assert reranker_status(config=config) == "ok"


def test_remote_reranker_is_built_from_the_settings(remote):
    reranker = get_reranker(config=remote)
    assert (reranker.name, reranker.model, reranker.timeout_seconds, reranker.max_retries) == (
        "openai-compatible", "stub-reranker", 0.5, 0)
    assert API_KEY not in repr(reranker)


# --- missing settings -------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["RERANK_BASE_URL", "RERANK_MODEL", "RERANK_API_KEY"])
def test_remote_names_each_missing_setting(config_override, variable):
    settings = {"rerank_base_url": "http://x/v1", "rerank_model": "m", "rerank_api_key": API_KEY}
    config = config_override(rag_rerank="openai-compatible", **{**settings, variable.lower(): ""})
    with pytest.raises(RerankConfigMissing) as caught:
        rerank_config_check(config=config)
    assert caught.value.details == {"missing": [variable], "variable": variable}
    assert variable in caught.value.message and API_KEY not in caught.value.message
    assert (caught.value.code, caught.value.http_status) == ("rerank_config_missing", 503)
    assert reranker_status(config=config) == "config_missing"


def test_all_missing_settings_are_named_at_once(config_override):
    config = config_override(rag_rerank="openai-compatible", rerank_base_url="", rerank_model="",
                             rerank_api_key="")
    with pytest.raises(RerankConfigMissing) as caught:
        rerank(query=QUERY, candidates=[], config=config)
    assert caught.value.details["missing"] == ["RERANK_BASE_URL", "RERANK_MODEL",
                                               "RERANK_API_KEY"]


def test_cross_encoder_needs_rerank_model(config_override):
    config = config_override(rag_rerank="cross-encoder", rerank_model="")
    with pytest.raises(RerankConfigMissing) as caught:
        get_reranker(config=config)
    assert caught.value.details["missing"] == ["RERANK_MODEL"]


def test_missing_settings_fail_the_request_instead_of_falling_back(config_override):
    config = config_override(rag_rerank="openai-compatible", rerank_base_url="",
                             rerank_model="m", rerank_api_key=API_KEY)
    with pytest.raises(RerankConfigMissing):
        rerank_safely(query=QUERY, candidates=candidates_of(TEXTS), config=config)


# --- rerank_safely ----------------------------------------------------------------------------


def test_none_keeps_the_fused_order_unscored(config_override):
    config = config_override(rag_rerank="none")
    candidates = candidates_of(TEXTS)
    outcome = rerank_safely(query=QUERY, candidates=candidates[::-1], config=config)
    assert [item.candidate for item in outcome.ranked] == candidates
    assert [item.score for item in outcome.ranked] == [None] * len(TEXTS)
    assert (outcome.applied, outcome.failure) == (False, None)


def test_a_working_reranker_is_applied_and_explained(remote, stub):
    outcome = rerank_safely(query=QUERY, candidates=candidates_of(TEXTS), config=remote)
    assert outcome.ranked[0].candidate.content == TEXTS[2]
    assert outcome.applied and outcome.failure is None
    explain = outcome.explain()
    assert {key: explain[key] for key in ("provider", "applied", "scored", "unscored",
                                          "truncated", "failure")} == {
        "provider": "openai-compatible", "applied": True, "scored": 4, "unscored": 0,
        "truncated": 0, "failure": None}
    assert explain["seconds"] >= 0


@pytest.mark.parametrize(("behaviour", "code"), [
    ("status:500", "rerank_upstream_error"), ("status:401", "rerank_auth_failed"),
    ("status:429", "rerank_rate_limited"), ("slow", "rerank_timeout"),
    ("malformed_json", "rerank_upstream_error"), ("bad_index", "rerank_upstream_error"),
])
def test_a_failing_reranker_falls_back_to_the_fused_order(remote, stub, caplog, behaviour, code):
    caplog.set_level(logging.WARNING, logger="localrag.rerank")
    stub.behaviour = behaviour
    candidates = candidates_of(TEXTS)
    outcome = rerank_safely(query=QUERY, candidates=candidates[::-1], config=remote)
    assert [item.candidate for item in outcome.ranked] == candidates
    assert all(item.score is None for item in outcome.ranked)
    assert outcome.failure is not None and outcome.failure.code == code
    assert outcome.explain()["failure"]["code"] == code
    assert outcome.explain()["applied"] is False
    assert any(record.levelno == logging.WARNING and code in record.getMessage()
               and "keeping the fused order" in record.getMessage()
               for record in caplog.records)
    assert API_KEY not in caplog.text + repr(outcome.explain())


def test_an_oversized_query_falls_back_without_a_request(remote, stub):
    query = " ".join(["alpha"] * 4001)
    outcome = rerank_safely(query=query, candidates=candidates_of(TEXTS), config=remote)
    assert outcome.failure is not None and outcome.failure.code == "rerank_request_invalid"
    assert [item.candidate.fused_rank for item in outcome.ranked] == [1, 2, 3, 4]
    assert stub.requests == []


def test_candidates_left_out_by_the_limits_are_explained(remote, stub):
    texts = [f"note {number}" for number in range(501)]
    outcome = rerank_safely(query="note 3", candidates=candidates_of(texts), config=remote)
    assert (outcome.explain()["scored"], outcome.explain()["unscored"]) == (500, 1)
    assert outcome.ranked[-1].candidate.fused_rank == 501


def test_no_candidates_make_no_request(remote, stub):
    outcome = rerank_safely(query=QUERY, candidates=[], config=remote)
    assert outcome.ranked == [] and outcome.failure is None and stub.requests == []
