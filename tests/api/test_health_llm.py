"""`GET /health` details say how the LLM's server answered its last probe: cached per process
(answering/llm_health.py), bounded by a short timeout, never made by `/health/live`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from answering.llm_health import (
    HEALTH_PROBE_TIMEOUT_SECONDS,
    llm_health,
    llm_health_cache_clear,
)
from core.config import get_config
from tests.answering.stub_openai import StubOpenAI

KEY = "sk-HEALTH-llm-key-2e7f"


@pytest.fixture(autouse=True)
def cache_cleared() -> Iterator[None]:
    llm_health_cache_clear()
    yield
    llm_health_cache_clear()


@pytest.fixture
def stub(config_override) -> Iterator[StubOpenAI]:
    with StubOpenAI(behaviour="auto") as server:
        server.required_key = KEY
        config_override(LLM_PROVIDER="openai-compatible", LLM_BASE_URL=server.base_url,
                        LLM_MODEL="stub-model", LLM_API_KEY=KEY)
        yield server


def llm_of(client, **headers: str) -> dict:
    response = client.get("/health", **headers)
    assert response.status_code == 200
    assert KEY not in response.content.decode()
    return json.loads(response.content)["details"]["llm"]


def model_lists(stub: StubOpenAI) -> int:
    return sum(request.path == "/v1/models" for request in stub.requests)


def test_the_fake_is_local_and_not_probed(client, db):
    assert llm_of(client) == {"provider": "fake", "model": "fake-local", "status": "local",
                              "latency_ms": None, "error": None, "checked_at": None}


def test_a_server_that_answers_is_up_and_probed_once_a_minute(client, db, stub: StubOpenAI):
    first = llm_of(client)
    assert first["provider"] == "openai-compatible" and first["model"] == "stub-model"
    assert first["status"] == "up" and first["error"] is None
    assert isinstance(first["latency_ms"], int) and first["latency_ms"] >= 0
    assert datetime.fromisoformat(first["checked_at"]).tzinfo is not None
    # The cached probe answers the next calls: the server was asked once.
    assert llm_of(client) == first and llm_of(client) == first
    assert model_lists(stub) == 1
    assert all(request.method == "GET" for request in stub.requests)  # no tokens spent


def test_the_cache_expires(db, stub: StubOpenAI):
    config = get_config()
    llm_health(config=config)
    assert llm_health(config=config).status == "up" and model_lists(stub) == 1
    assert llm_health(config=config, ttl_seconds=0).status == "up"
    assert model_lists(stub) == 2


def test_live_never_probes(client, db, stub: StubOpenAI):
    assert client.get("/health/live").status_code == 200
    assert stub.requests == []


def test_a_server_that_fails_is_down_with_its_code_and_health_keeps_its_status(
        client, db, stub: StubOpenAI):
    healthy = json.loads(client.get("/health").content)
    llm_health_cache_clear()
    stub.models = ["another-model"]
    body = json.loads(client.get("/health").content)
    assert body["details"]["llm"]["status"] == "down"
    assert body["details"]["llm"]["error"] == "llm_model_not_served"
    assert body["details"]["llm"]["latency_ms"] is None
    # What /health's status means is unchanged: the LLM is a detail, not a check.
    assert body["status"] == healthy["status"] and body["checks"] == healthy["checks"]


def test_a_silent_server_keeps_health_fast(client, db, stub: StubOpenAI):
    stub.models_behaviour = "hang"
    stub.hang_seconds = 10
    started = time.monotonic()
    llm = llm_of(client)
    assert time.monotonic() - started < HEALTH_PROBE_TIMEOUT_SECONDS + 2
    assert llm["status"] == "down" and llm["error"] == "llm_timeout"


def test_an_admin_learns_the_servers_origin(client, db, stub: StubOpenAI, config_override):
    from access.api_tokens import token_create
    from tests.api.conftest import team_create

    config_override(LLM_PROVIDER="openai-compatible", LLM_BASE_URL=stub.base_url,
                    LLM_MODEL="stub-model", LLM_API_KEY=KEY,
                    RAG_API_TOKEN="env-health-token-7a2b")
    team_create()
    root = token_create(username="root").secret
    ana = token_create(username="ana").secret
    origin = stub.base_url.removesuffix("/v1")
    assert llm_of(client, HTTP_AUTHORIZATION=f"Bearer {root}")["endpoint"] == origin
    assert "endpoint" not in llm_of(client, HTTP_AUTHORIZATION=f"Bearer {ana}")
