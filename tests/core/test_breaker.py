"""The circuit breaker (core/breaker.py) as the shared client (core/http_client.py) applies it,
on a real socket: the stub's request count shows which calls reached the server."""

from __future__ import annotations

import logging
import time

import pytest

from answering.llm import LLM_SERVICE, LLMAuthFailed, LLMUnavailable, LLMUpstreamError
from core.breaker import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    BreakerLimits,
    CircuitBreaker,
    breaker_states,
)
from core.http_client import OpenAICompatibleHTTP
from core.http_deadlines import Deadline
from tests.answering.stub_openai import StubOpenAI


class ChatClient(OpenAICompatibleHTTP):
    """One POST per call, no retries: each call is one request the breaker counts."""

    service = LLM_SERVICE

    def __init__(self, stub: StubOpenAI, *, model: str = "m") -> None:
        super().__init__(url=f"{stub.base_url}/chat/completions", model=model, api_key="sk-x",
                         timeout_seconds=5.0, max_retries=0, max_response_bytes=1 << 20,
                         logger=logging.getLogger("localrag.test"))

    def call(self) -> bytes:
        return self.with_retries(lambda attempt: self.post_read({"model": "m"}, deadline=attempt),
                                 deadline=Deadline(seconds=self.timeout_seconds))


@pytest.fixture
def stub():
    with StubOpenAI() as server:
        yield server


@pytest.fixture
def limits(config_override):
    config_override(RAG_BREAKER_FAILURES="3", RAG_BREAKER_COOLOFF_SECONDS="0.4")


def fail_times(client: ChatClient, times: int) -> None:
    for _ in range(times):
        with pytest.raises(LLMUpstreamError):
            client.call()


def test_it_opens_after_the_set_failures_and_then_fails_fast_without_a_request(stub, limits):
    stub.behaviour = "status:500"
    client = ChatClient(stub)
    fail_times(client, 3)
    assert len(stub.requests) == 3
    with pytest.raises(LLMUnavailable) as caught:
        client.call()
    assert caught.value.code == "llm_unavailable"
    assert caught.value.http_status == 503
    assert caught.value.details == {"reason": "circuit_open"}
    assert caught.value.headers == {"Retry-After": "1"}
    assert len(stub.requests) == 3  # the server was not asked
    [state] = breaker_states()
    assert (state.service, state.model, state.state, state.failures) == ("LLM", "m", OPEN, 3)
    assert state.reopens_at is not None


def test_fewer_failures_than_the_limit_keep_it_closed_and_a_success_starts_the_count_again(
        stub, limits):
    client = ChatClient(stub)
    stub.script = ["status:502", "status:502", "json", "status:502", "status:502"]
    fail_times(client, 2)
    assert b"choices" in client.call()
    fail_times(client, 2)
    stub.behaviour = "json"
    assert b"choices" in client.call()
    assert len(stub.requests) == 6
    assert [(s.state, s.failures) for s in breaker_states()] == [(CLOSED, 0)]


def test_connection_errors_count_as_failures(stub, limits):
    stub.behaviour = "close"
    client = ChatClient(stub)
    fail_times(client, 3)
    with pytest.raises(LLMUnavailable):
        client.call()
    assert len(stub.requests) == 3


def test_a_4xx_is_an_answer_and_never_opens_it(stub, limits):
    stub.behaviour = "status:401"
    client = ChatClient(stub)
    for _ in range(5):
        with pytest.raises(LLMAuthFailed):
            client.call()
    assert len(stub.requests) == 5
    assert [s.state for s in breaker_states()] == [CLOSED]


def test_after_the_cooloff_one_trial_goes_out_and_its_success_closes_it(stub, limits):
    stub.behaviour = "status:503"
    client = ChatClient(stub)
    fail_times(client, 3)
    time.sleep(0.45)
    assert [s.state for s in breaker_states()] == [HALF_OPEN]
    stub.behaviour = "json"
    assert b"choices" in client.call()
    assert len(stub.requests) == 4
    assert [(s.state, s.failures) for s in breaker_states()] == [(CLOSED, 0)]
    assert b"choices" in client.call()


def test_a_failed_trial_opens_it_again_for_another_cooloff(stub, limits):
    stub.behaviour = "status:500"
    client = ChatClient(stub)
    fail_times(client, 3)
    time.sleep(0.45)
    fail_times(client, 1)  # the trial reaches the server and fails
    assert len(stub.requests) == 4
    with pytest.raises(LLMUnavailable):
        client.call()
    assert len(stub.requests) == 4
    assert [s.state for s in breaker_states()] == [OPEN]


def test_each_model_of_a_server_has_a_breaker_of_its_own(stub, limits):
    stub.behaviour = "status:500"
    fail_times(ChatClient(stub, model="a"), 3)
    stub.behaviour = "json"
    assert b"choices" in ChatClient(stub, model="b").call()
    with pytest.raises(LLMUnavailable):
        ChatClient(stub, model="a").call()
    assert {s.model: s.state for s in breaker_states()} == {"a": OPEN, "b": CLOSED}


def test_the_url_it_shows_has_no_password_or_query(limits):
    class Dead(ChatClient):
        def __init__(self) -> None:
            OpenAICompatibleHTTP.__init__(
                self, url="http://user:hunter2@127.0.0.1:9/v1/chat/completions?key=q7", model="m",
                api_key="", timeout_seconds=1.0, max_retries=0, max_response_bytes=1024,
                logger=logging.getLogger("localrag.test"))

    with pytest.raises(LLMUpstreamError):
        Dead().call()
    [state] = breaker_states()
    assert state.url == "http://127.0.0.1:9/v1/chat/completions" and state.failures == 1


def test_half_open_lets_one_trial_through_at_a_time():
    limits = BreakerLimits(failures=1, cooloff_seconds=0.2)
    breaker = CircuitBreaker(service="rerank", url="http://r.test/v1/reranks", model="m")
    breaker.record_failure(limits)
    assert breaker.before_call(limits) is not None
    time.sleep(0.25)
    assert breaker.before_call(limits) is None  # the trial
    wait = breaker.before_call(limits)  # a second caller while the trial is out
    assert wait is not None and 0 < wait <= 0.2
    breaker.record_success()
    assert breaker.before_call(limits) is None
    assert breaker.state(limits).state == CLOSED
