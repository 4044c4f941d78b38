from __future__ import annotations

import logging
import socket
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from answering.context import context_build
from answering.llm import (
    FAKE_FALLBACK_ANSWER,
    FAKE_NO_CONTEXT_ANSWER,
    FakeLLMClient,
    LLMAuthFailed,
    LLMConfigMissing,
    LLMRateLimited,
    LLMTimeout,
    LLMUpstreamError,
    OpenAICompatibleClient,
    TokenUsage,
    get_llm_client,
    llm_config_check,
)
from answering.prompts import fallback_messages, rag_messages
from core.config import Config, config_load
from retrieval.types import SearchHit
from tests.answering.stub_openai import (
    AFTER_DONE,
    DEFAULT_ANSWER,
    DEFAULT_DELTAS,
    StubOpenAI,
)

API_KEY = "sk-DISTINCTIVE-secret-4f9a27"
QUESTION = "How do I rotate the VPN certificate?"


def make_config(tmp_path: Path, **environ: str) -> Config:
    env_file = tmp_path / "empty.env"
    env_file.write_text("")
    return config_load(environ=environ, start_dir=tmp_path, env_file=env_file)


def openai_config(tmp_path: Path, base_url: str, *, timeout: str = "5", **overrides: str
                  ) -> Config:
    environ = {"LLM_PROVIDER": "openai-compatible", "LLM_BASE_URL": base_url,
               "LLM_MODEL": "stub-model", "LLM_API_KEY": API_KEY,
               "LLM_TIMEOUT_SECONDS": timeout, **overrides}
    return make_config(tmp_path, **environ)


def hit(content: str, *, source: str, score: float, chunk_index: int = 0) -> SearchHit:
    return SearchHit(content=content, source=source, relative_path=source, heading_path=["Guide"],
                     heading="Guide", score=score, chunk_index=chunk_index, document_id=1,
                     content_hash=f"{source}-{chunk_index}")


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI() as server:
        yield server


@pytest.fixture
def rag_prompt() -> list[dict[str, str]]:
    hits = [
        hit("# VPN\nRotate the certificate with `vpnctl rotate`. Then restart.", source="vpn.md",
            score=0.9),
        hit("Certificates expire after 90 days! Plan ahead.", source="certs.md", score=0.8),
        hit("没有换行的中文句子。第二句。", source="zh.md", score=0.7),
        hit("A fourth block that the fake never quotes.", source="z.md", score=0.6),
    ]
    context = context_build(hits=hits, token_budget=2000)
    return rag_messages(question=QUESTION, context_text=context.text)


# --- fake ---------------------------------------------------------------------------------------


def test_fake_is_the_default_provider(tmp_path: Path) -> None:
    assert isinstance(get_llm_client(config=make_config(tmp_path)), FakeLLMClient)


def test_fake_quotes_first_sentence_of_top_three_blocks(rag_prompt: list[dict[str, str]]) -> None:
    answer = FakeLLMClient().complete(messages=rag_prompt)
    assert answer == ("Rotate the certificate with `vpnctl rotate`. [1] "
                      "Certificates expire after 90 days! [2] 没有换行的中文句子。 [3]")


def test_fake_stream_concatenates_to_complete(rag_prompt: list[dict[str, str]]) -> None:
    client = FakeLLMClient()
    deltas = list(client.stream(messages=rag_prompt))
    assert len(deltas) > 5
    assert "".join(deltas) == client.complete(messages=rag_prompt)


def test_fake_fallback_is_fixed_sentence() -> None:
    client = FakeLLMClient()
    messages = fallback_messages(question=QUESTION)
    assert client.complete(messages=messages) == FAKE_FALLBACK_ANSWER
    assert "".join(client.stream(messages=messages)) == FAKE_FALLBACK_ANSWER


def test_fake_with_empty_context_says_knowledge_base_lacks_answer() -> None:
    messages = rag_messages(question=QUESTION, context_text="")
    assert FakeLLMClient().complete(messages=messages) == FAKE_NO_CONTEXT_ANSWER


def test_fake_caps_sentence_length() -> None:
    long = "word " * 100
    context = context_build(hits=[hit(long, source="a.md", score=0.9)], token_budget=2000)
    answer = FakeLLMClient().complete(messages=rag_messages(question=QUESTION,
                                                            context_text=context.text))
    assert answer.endswith(" [1]")
    assert len(answer) <= 200 + len(" [1]")


def test_fake_never_touches_the_network(monkeypatch: pytest.MonkeyPatch, config_override,
                                        rag_prompt: list[dict[str, str]]) -> None:
    attempts: list[object] = []
    original = socket.socket.connect

    def record(sock: socket.socket, address: object) -> object:
        attempts.append(address)
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", record)
    client = get_llm_client(config=config_override())
    assert client.complete(messages=rag_prompt).endswith("[3]")
    assert "".join(client.stream(messages=rag_prompt)).endswith("[3]")
    assert attempts == []


# --- openai-compatible: requests and answers ----------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "/"])
def test_complete_posts_to_chat_completions(tmp_path: Path, stub: StubOpenAI, suffix: str) -> None:
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url + suffix))
    messages = fallback_messages(question=QUESTION)
    assert client.complete(messages=messages) == DEFAULT_ANSWER
    [request] = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {"model": "stub-model", "messages": messages, "temperature": 0,
                            "stream": False}


def test_stream_yields_content_deltas_until_done(tmp_path: Path, stub: StubOpenAI) -> None:
    stub.behaviour = "sse"
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    deltas = list(client.stream(messages=fallback_messages(question=QUESTION)))
    assert deltas == DEFAULT_DELTAS
    assert AFTER_DONE not in "".join(deltas)
    [request] = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["stream"] is True
    assert request.body["temperature"] == 0
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


# --- openai-compatible: the provider's token usage ----------------------------------------------

USAGE = {"prompt_tokens": 123, "completion_tokens": 45, "total_tokens": 168}


def test_complete_keeps_the_usage_the_server_reports(tmp_path: Path, stub: StubOpenAI) -> None:
    stub.usage = USAGE
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    assert client.complete(messages=fallback_messages(question=QUESTION)) == DEFAULT_ANSWER
    assert client.last_usage == TokenUsage(prompt_tokens=123, completion_tokens=45)


def test_complete_without_usage_reports_none(tmp_path: Path, stub: StubOpenAI) -> None:
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    client.complete(messages=fallback_messages(question=QUESTION))
    assert client.last_usage is None


@pytest.mark.parametrize("usage", [{"total_tokens": 9}, {"prompt_tokens": 3},
                                   {"prompt_tokens": "3", "completion_tokens": 4},
                                   {"prompt_tokens": -1, "completion_tokens": 4},
                                   {"prompt_tokens": True, "completion_tokens": 4}])
def test_incomplete_or_odd_usage_is_ignored(tmp_path: Path, stub: StubOpenAI,
                                            usage: dict) -> None:
    stub.usage = usage
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    assert client.complete(messages=fallback_messages(question=QUESTION)) == DEFAULT_ANSWER
    assert client.last_usage is None


def test_stream_asks_for_usage_and_reads_the_final_chunk(tmp_path: Path,
                                                         stub: StubOpenAI) -> None:
    stub.behaviour, stub.usage = "sse", USAGE
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    assert list(client.stream(messages=fallback_messages(question=QUESTION))) == DEFAULT_DELTAS
    [request] = stub.requests
    assert request.body["stream_options"] == {"include_usage": True}
    assert client.last_usage == TokenUsage(prompt_tokens=123, completion_tokens=45)


def test_stream_whose_usage_chunk_lacks_the_counts_reports_none(tmp_path: Path,
                                                                stub: StubOpenAI) -> None:
    stub.behaviour = "sse"  # its usage-only chunk carries total_tokens alone
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    assert list(client.stream(messages=fallback_messages(question=QUESTION))) == DEFAULT_DELTAS
    assert client.last_usage is None


def test_a_server_refusing_stream_options_still_streams(tmp_path: Path, stub: StubOpenAI,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    stub.behaviour, stub.refuse_stream_options = "sse", True
    config = openai_config(tmp_path, stub.base_url)
    with caplog.at_level(logging.INFO, logger="localrag.llm"):
        deltas = list(get_llm_client(config=config).stream(
            messages=fallback_messages(question=QUESTION)))
    assert deltas == DEFAULT_DELTAS
    assert ["stream_options" in request.body for request in stub.requests] == [True, False]
    assert "refused stream_options" in caplog.text
    # Remembered: the next stream to this endpoint does not ask again.
    client = get_llm_client(config=config)
    assert list(client.stream(messages=fallback_messages(question=QUESTION))) == DEFAULT_DELTAS
    assert "stream_options" not in stub.requests[-1].body and len(stub.requests) == 3
    assert client.last_usage is None


def test_a_plain_400_to_a_stream_is_not_sent_again(tmp_path: Path, stub: StubOpenAI) -> None:
    stub.behaviour = "status:400"  # its body does not name stream_options
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    with pytest.raises(LLMUpstreamError):
        list(client.stream(messages=fallback_messages(question=QUESTION)))
    assert len(stub.requests) == 1


def test_complete_never_sends_stream_options(tmp_path: Path, stub: StubOpenAI) -> None:
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    client.complete(messages=fallback_messages(question=QUESTION))
    assert "stream_options" not in stub.requests[0].body


def test_the_fake_reports_no_usage(rag_prompt: list[dict[str, str]]) -> None:
    client = FakeLLMClient()
    client.complete(messages=rag_prompt)
    assert client.last_usage is None


# --- openai-compatible: error mapping -----------------------------------------------------------

ERROR_CASES = [
    ("status:401", LLMAuthFailed, 502),
    ("status:403", LLMAuthFailed, 502),
    ("status:429", LLMRateLimited, 503),
    ("status:500", LLMUpstreamError, 502),
    ("malformed_json", LLMUpstreamError, 502),
    ("missing_choices", LLMUpstreamError, 502),
]


def call(client: OpenAICompatibleClient, *, streaming: bool) -> str:
    messages = fallback_messages(question=QUESTION)
    if streaming:
        return "".join(client.stream(messages=messages))
    return client.complete(messages=messages)


@pytest.mark.parametrize(("behaviour", "error", "status"), ERROR_CASES)
def test_complete_maps_upstream_failures(tmp_path: Path, stub: StubOpenAI, behaviour: str,
                                         error: type[Exception], status: int) -> None:
    stub.behaviour = behaviour
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    with pytest.raises(error) as caught:
        call(client, streaming=False)
    assert caught.value.http_status == status


@pytest.mark.parametrize(("behaviour", "error"), [
    ("status:401", LLMAuthFailed), ("status:403", LLMAuthFailed),
    ("status:429", LLMRateLimited), ("status:500", LLMUpstreamError),
    ("sse_malformed", LLMUpstreamError), ("malformed_json", LLMUpstreamError),
])
def test_stream_maps_upstream_failures(tmp_path: Path, stub: StubOpenAI, behaviour: str,
                                       error: type[Exception]) -> None:
    stub.behaviour = behaviour
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    with pytest.raises(error):
        call(client, streaming=True)


def test_status_error_names_the_status_and_logs_but_never_returns_the_url(
        tmp_path: Path, stub: StubOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="localrag.llm")
    stub.behaviour = "status:500"
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url))
    with pytest.raises(LLMUpstreamError) as caught:
        call(client, streaming=False)
    assert caught.value.code == "llm_upstream_error"
    assert caught.value.details == {"status": 500}
    assert stub.base_url not in str(caught.value.as_body())
    # The operator still finds the URL, under the project's logger.
    assert any(record.name == "localrag.llm" and stub.base_url in record.getMessage()
               for record in caplog.records)


def test_client_takes_its_limits_from_the_config(tmp_path: Path) -> None:
    config = openai_config(tmp_path, "http://127.0.0.1:9/v1", timeout="7",
                           LLM_STREAM_MAX_SECONDS="70", LLM_MAX_RETRIES="5",
                           LLM_MAX_RESPONSE_BYTES="4096")
    client = get_llm_client(config=config)
    assert isinstance(client, OpenAICompatibleClient)
    assert (client.timeout_seconds, client.stream_max_seconds, client.max_retries,
            client.max_response_bytes) == (7.0, 70.0, 5, 4096)


@pytest.mark.parametrize("streaming", [False, True])
def test_hang_past_timeout_is_llm_timeout(tmp_path: Path, stub: StubOpenAI,
                                          streaming: bool) -> None:
    stub.behaviour = "sse_hang" if streaming else "hang"
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url, timeout="0.5"))
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as caught:
        call(client, streaming=streaming)
    assert time.monotonic() - started < 3
    assert caught.value.code == "llm_timeout"
    assert caught.value.http_status == 504


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("streaming", [False, True])
def test_nothing_listening_is_upstream_error(tmp_path: Path, streaming: bool) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    client = get_llm_client(config=openai_config(tmp_path, base_url))
    with pytest.raises(LLMUpstreamError) as caught:
        call(client, streaming=streaming)
    assert caught.value.details["error"] == "ConnectError"


# --- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL"])
def test_missing_variable_is_named(tmp_path: Path, variable: str) -> None:
    config = openai_config(tmp_path, "http://127.0.0.1:9/v1", **{variable: ""})
    with pytest.raises(LLMConfigMissing) as caught:
        get_llm_client(config=config)
    assert caught.value.code == "llm_config_missing"
    assert caught.value.details == {"missing": [variable]}
    assert variable in str(caught.value)
    assert API_KEY not in str(caught.value)
    assert "stub-model" not in str(caught.value)


def test_all_missing_variables_are_named(tmp_path: Path) -> None:
    config = make_config(tmp_path, LLM_PROVIDER="openai-compatible")
    with pytest.raises(LLMConfigMissing) as caught:
        llm_config_check(config=config)
    assert caught.value.details == {"missing": ["LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL"]}
    assert caught.value.http_status == 503


# --- the key never leaks ------------------------------------------------------------------------


def assert_key_absent(*texts: str) -> None:
    for text in texts:
        assert API_KEY not in text


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("behaviour", [
    "status:401", "status:403", "status:429", "status:500", "malformed_json", "missing_choices",
    "sse_malformed", "hang",
])
def test_api_key_never_in_errors_or_logs(tmp_path: Path, stub: StubOpenAI,
                                         caplog: pytest.LogCaptureFixture, behaviour: str,
                                         streaming: bool) -> None:
    caplog.set_level(logging.DEBUG)
    stub.behaviour = behaviour
    client = get_llm_client(config=openai_config(tmp_path, stub.base_url, timeout="0.5"))
    with pytest.raises((LLMAuthFailed, LLMRateLimited, LLMTimeout, LLMUpstreamError)) as caught:
        call(client, streaming=streaming)
    exc = caught.value
    assert_key_absent(str(exc), repr(exc), repr(exc.details), str(exc.as_body()), repr(client),
                      caplog.text, "".join(traceback.format_exception(exc)))
    assert caplog.records, "the failure should be logged"


def test_api_key_never_in_network_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = get_llm_client(config=openai_config(tmp_path, f"http://127.0.0.1:{free_port()}/v1"))
    with pytest.raises(LLMUpstreamError) as caught:
        call(client, streaming=False)
    assert_key_absent(str(caught.value), repr(caught.value.details), repr(client), caplog.text,
                      "".join(traceback.format_exception(caught.value)))


def test_api_key_scrubbed_when_library_quotes_the_header(tmp_path: Path,
                                                         stub: StubOpenAI) -> None:
    # A newline makes the header illegal; the HTTP library's error may quote the value.
    key = f"{API_KEY}\nX-Evil: 1"
    client = OpenAICompatibleClient(base_url=stub.base_url, model="m", api_key=key,
                                    timeout_seconds=2)
    with pytest.raises(LLMUpstreamError) as caught:
        call(client, streaming=False)
    assert_key_absent(str(caught.value), repr(caught.value.details),
                      "".join(traceback.format_exception(caught.value)))
    assert stub.requests == []
