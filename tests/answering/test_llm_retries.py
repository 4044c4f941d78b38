"""Which LLM failures are retried, after how long, and never past the call's deadline."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from answering.llm import (
    LLMAuthFailed,
    LLMRateLimited,
    LLMUpstreamError,
    OpenAICompatibleClient,
)
from answering.prompts import fallback_messages
from core.http_retries import retry_after_seconds
from tests.answering.stub_openai import DEFAULT_ANSWER, DEFAULT_DELTAS, StubOpenAI

MESSAGES = fallback_messages(question="How do I rotate the VPN certificate?")


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI() as server:
        yield server


def client_for(stub: StubOpenAI, *, timeout: float = 5.0, retries: int = 2
               ) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(base_url=stub.base_url, model="m", api_key="k",
                                  timeout_seconds=timeout, max_retries=retries)


def gaps(stub: StubOpenAI) -> list[float]:
    times = [request.received_at for request in stub.requests]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


# --- retried ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 408])
def test_throttled_request_waits_for_retry_after_then_succeeds(stub: StubOpenAI,
                                                               status: int) -> None:
    stub.script, stub.retry_after = [f"status:{status}"], "1"
    assert client_for(stub).complete(messages=MESSAGES) == DEFAULT_ANSWER
    assert len(stub.requests) == 2
    assert 0.95 <= gaps(stub)[0] < 1.6


def test_retry_after_as_http_date_is_followed(stub: StubOpenAI) -> None:
    later = datetime.now(UTC) + timedelta(seconds=2)
    stub.script, stub.retry_after = ["status:429"], format_datetime(later, usegmt=True)
    assert client_for(stub).complete(messages=MESSAGES) == DEFAULT_ANSWER
    # HTTP dates have whole seconds: the wait is between one and two seconds.
    assert len(stub.requests) == 2 and 0.9 <= gaps(stub)[0] < 2.3


@pytest.mark.parametrize("streaming", [False, True])
def test_server_errors_twice_then_success(stub: StubOpenAI, streaming: bool) -> None:
    stub.script = ["status:503", "status:502"]
    stub.behaviour = "sse" if streaming else "json"
    client = client_for(stub)
    if streaming:
        assert list(client.stream(messages=MESSAGES)) == DEFAULT_DELTAS
    else:
        assert client.complete(messages=MESSAGES) == DEFAULT_ANSWER
    assert len(stub.requests) == 3


@pytest.mark.parametrize(("retries", "requests"), [(0, 1), (1, 2), (2, 3)])
def test_server_errors_are_retried_up_to_max_retries(stub: StubOpenAI, retries: int,
                                                     requests: int) -> None:
    stub.behaviour = "status:500"
    with pytest.raises(LLMUpstreamError) as caught:
        client_for(stub, retries=retries).complete(messages=MESSAGES)
    assert caught.value.details == {"status": 500}
    assert len(stub.requests) == requests


@pytest.mark.parametrize("streaming", [False, True])
def test_dropped_connection_is_retried(stub: StubOpenAI, streaming: bool) -> None:
    stub.script, stub.behaviour = ["close"], "sse" if streaming else "json"
    client = client_for(stub)
    if streaming:
        assert list(client.stream(messages=MESSAGES)) == DEFAULT_DELTAS
    else:
        assert client.complete(messages=MESSAGES) == DEFAULT_ANSWER
    assert len(stub.requests) == 2


def test_backoff_without_retry_after_grows_with_jitter(stub: StubOpenAI) -> None:
    stub.script, stub.retry_after = ["status:503", "status:503"], None
    assert client_for(stub).complete(messages=MESSAGES) == DEFAULT_ANSWER
    first, second = gaps(stub)
    # 0.5 s then 1 s, each shortened by up to a quarter of jitter.
    assert 0.37 <= first < 0.65 and 0.74 <= second < 1.2


# --- not retried ------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "error"), [(400, LLMUpstreamError), (401, LLMAuthFailed),
                                               (403, LLMAuthFailed), (404, LLMUpstreamError)])
@pytest.mark.parametrize("streaming", [False, True])
def test_client_errors_are_never_retried(stub: StubOpenAI, status: int, error: type[Exception],
                                         streaming: bool) -> None:
    stub.behaviour = f"status:{status}"
    client = client_for(stub)
    with pytest.raises(error):
        if streaming:
            list(client.stream(messages=MESSAGES))
        else:
            client.complete(messages=MESSAGES)
    assert len(stub.requests) == 1


def test_stream_is_not_retried_once_a_delta_was_yielded(stub: StubOpenAI) -> None:
    stub.behaviour = "sse_cut"
    received: list[str] = []
    with pytest.raises(LLMUpstreamError) as caught:
        received.extend(client_for(stub).stream(messages=MESSAGES))
    assert received == DEFAULT_DELTAS[:1]
    assert caught.value.details["error"] == "RemoteProtocolError"
    assert len(stub.requests) == 1


def test_retry_after_beyond_the_deadline_ends_at_once(stub: StubOpenAI) -> None:
    stub.behaviour, stub.retry_after = "status:429", "30"
    started = time.monotonic()
    with pytest.raises(LLMRateLimited) as caught:
        client_for(stub, timeout=2).complete(messages=MESSAGES)
    assert time.monotonic() - started < 0.5
    assert len(stub.requests) == 1
    # The upstream's wait is passed on to our own client.
    assert caught.value.headers == {"Retry-After": "30"}


def test_retries_stop_when_the_backoff_no_longer_fits(stub: StubOpenAI) -> None:
    stub.behaviour, stub.retry_after = "status:503", None
    started = time.monotonic()
    with pytest.raises(LLMUpstreamError):
        client_for(stub, timeout=0.9, retries=5).complete(messages=MESSAGES)
    # The first backoff (at most 0.5 s) fits, the second (at least 0.75 s) does not.
    assert len(stub.requests) == 2
    assert time.monotonic() - started < 0.9


# --- Retry-After parsing ----------------------------------------------------------------------

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "1.5"}, 1.5),
    ({"retry-after": "Wed, 01 Jan 2025 12:00:07 GMT"}, 7.0),
    ({"retry-after": "Wed, 01 Jan 2025 11:59:00 GMT"}, 0.0),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "-4"}, None),
    ({}, None),
])
def test_retry_after_is_read_as_seconds_or_http_date(headers: dict[str, str],
                                                     seconds: float | None) -> None:
    assert retry_after_seconds(headers=headers, now=NOW) == seconds
