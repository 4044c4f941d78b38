"""`GET /providers/health`: one live call to each configured model server (ops/provider_health.py),
for admins only, cached a minute per process; in-process providers are `local` and not called."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from access.api_tokens import token_create
from answering.llm_health import llm_health_cache_clear
from ops.provider_health import providers_health_cache_clear
from tests.answering.stub_openai import StubOpenAI
from tests.api.conftest import team_create
from tests.api.http import error_of
from tests.knowledge.stub_embeddings import StubEmbeddings
from tests.retrieval.stub_rerank import StubRerank

LLM_KEY = "sk-providers-llm-4b1e"
EMBED_KEY = "sk-providers-embed-93aa"
RERANK_KEY = "sk-providers-rerank-0c7d"


@pytest.fixture(autouse=True)
def caches_cleared() -> Iterator[None]:
    llm_health_cache_clear()
    providers_health_cache_clear()
    yield
    llm_health_cache_clear()
    providers_health_cache_clear()


@pytest.fixture
def servers(config_override) -> Iterator[tuple[StubOpenAI, StubEmbeddings, StubRerank]]:
    with StubOpenAI(behaviour="auto") as llm, StubEmbeddings(api_key=EMBED_KEY) as embed, \
            StubRerank() as rerank:
        config_override(LLM_PROVIDER="openai-compatible", LLM_BASE_URL=llm.base_url,
                        LLM_MODEL="stub-model", LLM_API_KEY=LLM_KEY,
                        EMBEDDING_PROVIDER="openai-compatible", EMBEDDING_MODEL="stub-embed",
                        EMBEDDING_BASE_URL=embed.base_url, EMBEDDING_API_KEY=EMBED_KEY,
                        RAG_RERANK="openai-compatible", RERANK_BASE_URL=rerank.base_url,
                        RERANK_MODEL="stub-reranker", RERANK_API_KEY=RERANK_KEY)
        yield llm, embed, rerank


def providers_of(client, **headers: str) -> dict[str, dict]:
    response = client.get("/providers/health", **headers)
    assert response.status_code == 200, response.content
    text = response.content.decode()
    assert LLM_KEY not in text and EMBED_KEY not in text and RERANK_KEY not in text
    return {entry["kind"]: entry for entry in json.loads(text)["providers"]}


def test_in_process_providers_are_local_and_not_called(client, db):
    entries = providers_of(client)
    assert entries["llm"] == {"kind": "llm", "provider": "fake", "model": "fake-local",
                              "status": "local", "latency_ms": None, "error_code": None,
                              "checked_at": None}
    assert entries["embedding"]["provider"] == "fake"
    assert entries["embedding"]["status"] == "local"
    assert entries["rerank"]["status"] == "local" and entries["rerank"]["checked_at"] is None


def test_servers_that_answer_are_up_with_one_minimal_call_each(client, db, servers):
    llm, embed, rerank = servers
    entries = providers_of(client)
    for kind, provider, model in (("llm", "openai-compatible", "stub-model"),
                                  ("embedding", "openai-compatible", "stub-embed"),
                                  ("rerank", "openai-compatible", "stub-reranker")):
        entry = entries[kind]
        assert (entry["provider"], entry["model"], entry["status"]) == (provider, model, "up")
        assert entry["error_code"] is None and entry["latency_ms"] >= 0
        assert datetime.fromisoformat(entry["checked_at"]).tzinfo is not None
    assert [request.path for request in llm.requests] == ["/v1/models"]
    assert [body["input"] for body in embed.requests] == [["health check"]]
    assert len(rerank.requests) == 1 and len(rerank.requests[0].body["documents"]) == 2
    assert embed.violations == []


def test_a_second_call_within_the_minute_is_answered_from_the_cache(client, db, servers):
    llm, embed, rerank = servers
    first = providers_of(client)
    assert providers_of(client) == first
    assert (len(llm.requests), len(embed.requests), len(rerank.requests)) == (1, 1, 1)


def test_servers_that_fail_are_down_with_their_error_code(client, db, servers):
    llm, embed, rerank = servers
    llm.models_behaviour = "status:503"
    embed.behaviour = "status:500"
    rerank.behaviour = "status:401"
    entries = providers_of(client)
    assert {kind: (entry["status"], entry["error_code"]) for kind, entry in entries.items()} == {
        "llm": ("down", "llm_upstream_error"),
        "embedding": ("down", "embedding_upstream_error"),
        "rerank": ("down", "rerank_auth_failed")}
    assert entries["embedding"]["latency_ms"] is None


def test_a_server_that_stalls_is_down_within_the_bound(client, db, servers):
    llm, embed, rerank = servers
    rerank.behaviour = "slow"  # nothing for 5 s
    started = time.monotonic()
    entries = providers_of(client)
    assert time.monotonic() - started < 3.5
    assert (entries["rerank"]["status"], entries["rerank"]["error_code"]) == (
        "down", "rerank_timeout")
    assert entries["llm"]["status"] == entries["embedding"]["status"] == "up"


def test_a_probe_meets_the_circuit_breaker_of_real_traffic(client, db, servers,
                                                          config_override):
    llm, embed, rerank = servers
    config_override(RAG_BREAKER_FAILURES="1", LLM_PROVIDER="openai-compatible",
                    LLM_BASE_URL=llm.base_url, LLM_MODEL="stub-model", LLM_API_KEY=LLM_KEY,
                    EMBEDDING_PROVIDER="openai-compatible", EMBEDDING_MODEL="stub-embed",
                    EMBEDDING_BASE_URL=embed.base_url, EMBEDDING_API_KEY=EMBED_KEY)
    embed.behaviour = "status:502"
    assert providers_of(client)["embedding"]["error_code"] == "embedding_upstream_error"
    providers_health_cache_clear()  # a minute later
    assert providers_of(client)["embedding"]["error_code"] == "embedding_unavailable"
    assert len(embed.requests) == 1  # the open breaker sent nothing


def test_a_server_that_is_not_running_is_down(client, db, config_override):
    config_override(RAG_RERANK="openai-compatible", RERANK_BASE_URL="http://127.0.0.1:9/v1",
                    RERANK_MODEL="gone", RERANK_API_KEY=RERANK_KEY)
    entry = providers_of(client)["rerank"]
    assert (entry["status"], entry["error_code"]) == ("down", "rerank_upstream_error")


@pytest.fixture
def bearer(db, config_override):
    config_override(rag_api_token="env-providers-token-8e2a")
    team_create()
    secrets = {"root": token_create(username="root").secret,
               "root_read_only": token_create(username="root", read_only=True).secret,
               "mo": token_create(username="mo").secret,
               "env": "env-providers-token-8e2a"}
    return lambda name: {"HTTP_AUTHORIZATION": f"Bearer {secrets[name]}"}


def test_without_a_token_it_is_401_once_access_control_is_on(client, bearer):
    response = client.get("/providers/health")
    assert response.status_code == 401 and error_of(response)["code"] == "unauthorized"


@pytest.mark.parametrize("caller", ["mo", "root_read_only"])
def test_a_caller_who_is_no_admin_is_403(client, bearer, caller):
    response = client.get("/providers/health", **bearer(caller))
    assert response.status_code == 403 and error_of(response)["code"] == "forbidden"


@pytest.mark.parametrize("caller", ["root", "env"])
def test_an_admin_token_reads_it(client, bearer, caller):
    assert providers_of(client, **bearer(caller))["llm"]["status"] == "local"


def test_health_live_calls_no_server(client, db, servers):
    llm, embed, rerank = servers
    assert client.get("/health/live").status_code == 200
    assert (llm.requests, embed.requests, rerank.requests) == ([], [], [])
