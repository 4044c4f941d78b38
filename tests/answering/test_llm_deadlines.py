"""The LLM client's wall-clock deadline, stream limits and size cap, against a real local stub."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from answering.llm import LLMTimeout, LLMUpstreamError, OpenAICompatibleClient
from answering.prompts import fallback_messages
from core.http_deadlines import Deadline
from tests.answering.stub_openai import DEFAULT_DELTAS, StubOpenAI

MESSAGES = fallback_messages(question="How do I rotate the VPN certificate?")


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI() as server:
        yield server


def client_for(stub: StubOpenAI, *, timeout: float = 1.0, stream_max: float = 300.0,
               max_bytes: int = 2 * 1024 * 1024) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(base_url=stub.base_url, model="m", api_key="k",
                                  timeout_seconds=timeout, stream_max_seconds=stream_max,
                                  max_retries=2, max_response_bytes=max_bytes)


def timed(action) -> tuple[float, BaseException | None, object]:
    started = time.monotonic()
    try:
        result, error = action(), None
    except Exception as exc:  # noqa: BLE001 - the test inspects whatever was raised
        result, error = None, exc
    return time.monotonic() - started, error, result


# --- whole calls: one deadline, whatever the upstream does ------------------------------------


@pytest.mark.parametrize("behaviour", ["drip", "drip_headers"])
def test_dripping_upstream_times_out_at_the_deadline(stub: StubOpenAI, behaviour: str) -> None:
    # One byte every 0.1 s never trips a per-read timeout; only a deadline stops it.
    stub.behaviour, stub.drip_seconds = behaviour, 0.1
    stub.answer = "long answer " * 50
    elapsed, error, _ = timed(lambda: client_for(stub, timeout=1.0).complete(messages=MESSAGES))
    assert isinstance(error, LLMTimeout) and error.http_status == 504
    assert 0.9 < elapsed < 2.0
    assert len(stub.requests) == 1  # a timeout spends the deadline: nothing is retried


def test_stall_before_headers_times_out_at_the_deadline(stub: StubOpenAI) -> None:
    stub.behaviour, stub.hang_seconds = "hang", 10
    elapsed, error, _ = timed(lambda: client_for(stub, timeout=0.8).complete(messages=MESSAGES))
    assert isinstance(error, LLMTimeout)
    assert "LLM_TIMEOUT_SECONDS" in error.message
    assert 0.7 < elapsed < 1.8


def test_answer_within_the_deadline_is_returned(stub: StubOpenAI) -> None:
    stub.behaviour, stub.drip_seconds, stub.answer = "drip", 0.005, "ok [1]"
    assert client_for(stub, timeout=5).complete(messages=MESSAGES) == "ok [1]"


def test_timed_out_call_leaves_no_thread_of_its_own(stub: StubOpenAI) -> None:
    stub.behaviour, stub.drip_seconds = "drip", 0.1
    before = set(threading.enumerate())
    _, error, _ = timed(lambda: client_for(stub, timeout=0.5).complete(messages=MESSAGES))
    assert isinstance(error, LLMTimeout)
    # Only the stub's own request handler may still be running.
    extra = [thread for thread in set(threading.enumerate()) - before
             if "process_request_thread" not in thread.name]
    assert extra == []


# --- streams: an idle limit between deltas and a total cap ------------------------------------


def test_stream_of_comments_and_empty_deltas_hits_the_idle_limit(stub: StubOpenAI) -> None:
    stub.behaviour, stub.drip_seconds = "sse_idle", 0.05
    elapsed, error, _ = timed(
        lambda: list(client_for(stub, timeout=0.6).stream(messages=MESSAGES)))
    assert isinstance(error, LLMTimeout)
    assert "sent no text" in error.message
    assert 0.5 < elapsed < 1.6


def test_stream_idle_limit_restarts_with_each_delta(stub: StubOpenAI) -> None:
    # Three pauses of 0.35 s each: over a second in all, but never 0.6 s without text.
    stub.behaviour, stub.hang_seconds = "sse_hang", 0.35
    deltas = list(client_for(stub, timeout=0.6).stream(messages=MESSAGES))
    assert deltas == DEFAULT_DELTAS


def test_stream_that_never_finishes_ends_at_the_total_cap(stub: StubOpenAI) -> None:
    stub.behaviour, stub.drip_seconds = "sse_slow", 0.05
    received: list[str] = []

    # extend() keeps what arrived before the error.
    client = client_for(stub, timeout=0.5, stream_max=1.0)
    elapsed, error, _ = timed(lambda: received.extend(client.stream(messages=MESSAGES)))
    assert isinstance(error, LLMTimeout)
    assert "LLM_STREAM_MAX_SECONDS" in error.message
    assert len(received) > 5  # text kept coming; only the cap ended it
    assert 0.9 < elapsed < 2.0


def test_deadline_extends_idle_limit_but_not_past_the_cap() -> None:
    deadline = Deadline(seconds=10, cap_seconds=0.2)
    assert deadline.remaining() <= 0.2 and deadline.capped
    time.sleep(0.25)
    deadline.extend()
    assert deadline.remaining() == 0


# --- size cap ---------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["json", "json_unsized"])
def test_answer_over_the_size_cap_is_upstream_error(stub: StubOpenAI, behaviour: str) -> None:
    stub.behaviour, stub.answer = behaviour, "x" * 5000
    with pytest.raises(LLMUpstreamError) as caught:
        client_for(stub, max_bytes=4096).complete(messages=MESSAGES)
    assert caught.value.details["reason"] == "response_too_large"
    assert len(stub.requests) == 1  # not retried


def test_stream_over_the_size_cap_is_upstream_error(stub: StubOpenAI) -> None:
    # Each delta flushed and a moment apart: sent at once, a busy client could read the whole
    # stream in one read and hit the cap before the first delta, which is right but not this test.
    stub.behaviour, stub.deltas, stub.hang_seconds = "sse_hang", ["y" * 100] * 60, 0.01
    received: list[str] = []
    with pytest.raises(LLMUpstreamError) as caught:
        received.extend(client_for(stub, max_bytes=4096).stream(messages=MESSAGES))
    assert caught.value.details["reason"] == "response_too_large"
    assert 0 < len("".join(received)) < 4096


def test_answer_just_under_the_cap_is_accepted(stub: StubOpenAI) -> None:
    stub.behaviour, stub.answer = "json_unsized", "z" * 3000
    assert client_for(stub, max_bytes=4096).complete(messages=MESSAGES) == "z" * 3000
