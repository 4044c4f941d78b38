"""The OpenAI-compatible client base (core/http_client.py) on a real socket: what every thin
client built on it (the LLM, the remote reranker) gets without writing it again."""

from __future__ import annotations

import logging

import pytest

from answering.llm import LLMAuthFailed, LLMRateLimited, LLMTimeout, LLMUpstreamError
from core.http_client import OpenAICompatibleHTTP, UpstreamService
from core.http_deadlines import Deadline
from tests.answering.stub_openai import StubOpenAI

KEY = "sk-test-secret-key"
SERVICE = UpstreamService(
    name="echo", url_setting="ECHO_BASE_URL", key_setting="ECHO_API_KEY",
    timeout_setting="ECHO_TIMEOUT_SECONDS", timeout=LLMTimeout, auth_failed=LLMAuthFailed,
    rate_limited=LLMRateLimited, upstream_error=LLMUpstreamError)


class EchoClient(OpenAICompatibleHTTP):
    """The thinnest user of the base: one POST, the raw answer."""

    service = SERVICE

    def __init__(self, stub: StubOpenAI, *, timeout: float = 5.0, max_bytes: int = 1 << 20,
                 max_retries: int = 2) -> None:
        super().__init__(url=f"{stub.base_url}/chat/completions", model="m", api_key=KEY,
                         timeout_seconds=timeout, max_retries=max_retries,
                         max_response_bytes=max_bytes, logger=logging.getLogger("localrag.test"))

    def call(self) -> bytes:
        return self.with_retries(lambda attempt: self.post_read({"model": "m"}, deadline=attempt),
                                 deadline=Deadline(seconds=self.timeout_seconds))


@pytest.fixture
def stub():
    with StubOpenAI() as server:
        yield server


def test_it_sends_the_key_only_as_a_bearer_and_asks_for_an_uncompressed_body(stub):
    assert b"choices" in EchoClient(stub).call()
    headers = {name.lower(): value for name, value in stub.requests[0].headers.items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["accept-encoding"] == "identity"
    assert stub.requests[0].body == {"model": "m"}


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_credentials_fail_at_once_naming_the_key_setting(stub, status):
    stub.behaviour = f"status:{status}"
    with pytest.raises(LLMAuthFailed) as caught:
        EchoClient(stub).call()
    assert "ECHO_API_KEY" in caught.value.message and KEY not in caught.value.message
    assert len(stub.requests) == 1


def test_a_5xx_is_retried_then_given_as_the_upstream_error(stub):
    stub.behaviour = "status:503"
    with pytest.raises(LLMUpstreamError) as caught:
        EchoClient(stub, max_retries=2).call()
    assert caught.value.message == "the echo server answered HTTP 503"
    assert len(stub.requests) == 3


def test_a_429_passes_the_servers_retry_after_on(stub):
    stub.behaviour, stub.retry_after = "status:429", "1"
    with pytest.raises(LLMRateLimited) as caught:
        EchoClient(stub, max_retries=0).call()
    assert caught.value.headers == {"Retry-After": "1"}


def test_an_answer_over_the_size_cap_is_refused(stub):
    stub.answer = "x" * 5000
    with pytest.raises(LLMUpstreamError) as caught:
        EchoClient(stub, max_bytes=1000).call()
    assert caught.value.details == {"reason": "response_too_large", "limit_bytes": 1000}


def test_a_silent_server_times_out_naming_the_services_setting(stub):
    stub.behaviour, stub.hang_seconds = "hang", 3.0
    with pytest.raises(LLMTimeout) as caught:
        EchoClient(stub, timeout=0.3).call()
    assert caught.value.message == ("the echo server did not answer within "
                                    "ECHO_TIMEOUT_SECONDS (0.3s)")


def test_the_repr_names_the_endpoint_never_the_key(stub):
    shown = repr(EchoClient(stub))
    assert shown.startswith("EchoClient(url=") and "api_key=<set>" in shown and KEY not in shown
