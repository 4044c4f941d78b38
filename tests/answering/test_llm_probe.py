"""Probing an OpenAI-compatible server (answering/llm_probe.py) against the local stub: its models,
a tiny completion, a tiny stream, and each failure with its code; and which servers may go
without a key (answering/llm.py llm_config_check)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from answering.llm import LLMConfigMissing, llm_config_check
from answering.llm_probe import (
    MODELS_KEPT,
    PROBE_MAX_TOKENS,
    ProbeFailed,
    ProbeTarget,
    llm_completion_try,
    llm_model_check,
    llm_model_choose,
    llm_models_list,
    llm_stream_try,
    url_shown,
)
from core.config import config_load
from tests.answering.stub_openai import DEFAULT_ANSWER, StubOpenAI

KEY = "sk-PROBE-secret-5b1e90"


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(behaviour="auto") as server:
        yield server


def target(url: str, *, key: str = "", label: str = "", timeout: float = 5.0) -> ProbeTarget:
    return ProbeTarget(base_url=url, api_key=key, timeout_seconds=timeout, key_label=label)


def failed(call) -> ProbeFailed:
    with pytest.raises(ProbeFailed) as caught:
        call()
    assert KEY not in caught.value.message
    return caught.value


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_models_list_is_read_with_the_key(stub: StubOpenAI):
    stub.models = ["qwen2.5:0.5b", "llama3.2:1b"]
    stub.required_key = KEY
    listing = llm_models_list(target(stub.base_url, key=KEY))
    assert listing.ids == ("qwen2.5:0.5b", "llama3.2:1b") and listing.total == 2
    assert listing.owners == {"stub-owner"} and listing.latency_ms >= 0
    request = stub.requests[-1]
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_no_key_sends_no_authorization(stub: StubOpenAI):
    llm_models_list(target(stub.base_url))
    assert "authorization" not in stub.requests[-1].headers


def test_a_huge_models_list_is_bounded(stub: StubOpenAI):
    stub.models_behaviour = "huge"
    listing = llm_models_list(target(stub.base_url))
    assert listing.total == stub.huge_models and len(listing.ids) == MODELS_KEPT
    # A model past the kept ids cannot be ruled out, so it is not refused.
    llm_model_check(listing, model="model-49999", target=target(stub.base_url))


def test_a_models_list_over_the_size_cap_is_refused(stub: StubOpenAI):
    stub.models_behaviour = "huge"
    stub.huge_models = 200_000  # about 7 MB
    assert failed(lambda: llm_models_list(target(stub.base_url))).code == "llm_too_large"


@pytest.mark.parametrize(("behaviour", "code", "says"), [
    ("html", "llm_not_json", "not JSON (a web page?)"),
    ("not_list", "llm_bad_response", "no `data` array"),
    ("status:500", "llm_upstream_error", "HTTP 500"),
    ("status:429", "llm_rate_limited", "rate limiting"),
])
def test_a_models_list_that_is_not_one_is_named(stub: StubOpenAI, behaviour: str, code: str,
                                                says: str):
    stub.models_behaviour = behaviour
    failure = failed(lambda: llm_models_list(target(stub.base_url)))
    assert failure.code == code and says in failure.message


def test_404_hints_at_the_v1_base_path(stub: StubOpenAI):
    without_v1 = stub.base_url.removesuffix("/v1")
    failure = failed(lambda: llm_models_list(target(without_v1)))
    assert failure.code == "llm_not_found" and failure.status == 404
    assert f"try {without_v1}/v1" in failure.message
    stub.models_behaviour = "status:404"
    failure = failed(lambda: llm_models_list(target(stub.base_url)))
    assert "try" not in failure.message and "base URL" in failure.message


def test_a_rejected_key_names_where_it_came_from_never_the_key(stub: StubOpenAI):
    stub.required_key = "another-key"
    failure = failed(lambda: llm_models_list(target(stub.base_url, key=KEY,
                                                    label="$OPENAI_API_KEY")))
    assert failure.code == "llm_auth_failed" and failure.status == 401
    assert "rejected the key from $OPENAI_API_KEY" in failure.message
    failure = failed(lambda: llm_models_list(target(stub.base_url)))
    assert "wants a key" in failure.message and "--key-env" in failure.message


def test_nothing_listening_is_unreachable():
    url = f"http://127.0.0.1:{free_port()}/v1"
    failure = failed(lambda: llm_models_list(target(url)))
    assert failure.code == "llm_unreachable" and url in failure.message


def test_a_silent_server_is_a_timeout_within_the_limit(stub: StubOpenAI):
    stub.models_behaviour = "hang"
    started = time.monotonic()
    failure = failed(lambda: llm_models_list(target(stub.base_url, timeout=0.5)))
    assert failure.code == "llm_timeout" and "within 0.5s" in failure.message
    assert time.monotonic() - started < 3


def test_the_only_model_is_chosen_and_several_are_listed_to_choose_from(stub: StubOpenAI):
    probe = target(stub.base_url)
    assert llm_model_choose(llm_models_list(probe), target=probe) == "stub-model"
    stub.models = ["a", "b", "c"]
    failure = failed(lambda: llm_model_choose(llm_models_list(probe), target=probe))
    assert failure.code == "llm_model_choice" and failure.choices == ("a", "b", "c")
    assert "serves 3 models; name one with --model: a, b, c" in failure.message
    stub.models = []
    assert failed(lambda: llm_model_choose(llm_models_list(probe), target=probe)
                  ).code == "llm_no_models"


def test_a_model_not_served_lists_what_is(stub: StubOpenAI):
    stub.models = ["qwen2.5:latest", "llama3.2:1b"]
    probe = target(stub.base_url)
    listing = llm_models_list(probe)
    llm_model_check(listing, model="qwen2.5", target=probe)  # Ollama's implicit :latest
    failure = failed(lambda: llm_model_check(listing, model="gpt-4o", target=probe))
    assert failure.code == "llm_model_not_served"
    assert "does not serve 'gpt-4o'; it serves qwen2.5:latest, llama3.2:1b" in failure.message


def test_a_tiny_completion_and_a_tiny_stream_work(stub: StubOpenAI):
    probe = target(stub.base_url, key=KEY)
    completion = llm_completion_try(probe, model="stub-model")
    assert completion.text == DEFAULT_ANSWER and completion.max_tokens == PROBE_MAX_TOKENS
    stream = llm_stream_try(probe, model="stub-model")
    assert stream.text == "Stub streamed answer [1]." and stream.deltas == 3
    assert stream.first_text_ms is not None and stream.first_text_ms <= stream.latency_ms
    bodies = [request.body for request in stub.requests]
    assert [body["stream"] for body in bodies] == [False, True]
    assert all(body["max_tokens"] == PROBE_MAX_TOKENS for body in bodies)


def test_a_server_refusing_max_tokens_is_tried_without_it(stub: StubOpenAI):
    stub.script = ["status:400"]
    completion = llm_completion_try(target(stub.base_url), model="stub-model")
    assert completion.text == DEFAULT_ANSWER and completion.max_tokens is None
    assert [("max_tokens" in request.body) for request in stub.requests] == [True, False]


@pytest.mark.parametrize(("behaviour", "says"), [
    ("json", "not a server-sent event"),  # a server that ignores `stream: true`
    ("sse_malformed", "not a chat completion chunk"),
    ("status:500", "HTTP 500"),
])
def test_a_broken_stream_is_named(stub: StubOpenAI, behaviour: str, says: str):
    stub.behaviour = behaviour
    failure = failed(lambda: llm_stream_try(target(stub.base_url), model="stub-model"))
    assert failure.code == "llm_stream_broken" and says in failure.message


def test_a_completion_that_is_not_one_is_a_bad_response(stub: StubOpenAI):
    stub.behaviour = "missing_choices"
    failure = failed(lambda: llm_completion_try(target(stub.base_url), model="stub-model"))
    assert failure.code == "llm_bad_response"


def test_shown_urls_carry_no_user_password_or_query():
    assert url_shown("https://user:pw@llm.example:8443/v1/?api-key=QK") == (
        "https://llm.example:8443/v1")
    assert url_shown("http://[::1]:8080/v1") == "http://[::1]:8080/v1"


# --- which servers may go without a key ---------------------------------------------------------


def config_of(tmp_path: Path, **environ: str):
    env_file = tmp_path / "empty.env"
    env_file.write_text("")
    return config_load(environ={"LLM_PROVIDER": "openai-compatible", "LLM_MODEL": "m",
                                **environ}, start_dir=tmp_path, env_file=env_file)


def test_a_local_server_without_a_key_needs_it_said(tmp_path: Path):
    local = "http://127.0.0.1:11434/v1"
    with pytest.raises(LLMConfigMissing) as caught:
        llm_config_check(config=config_of(tmp_path, LLM_BASE_URL=local))
    assert caught.value.details == {"missing": ["LLM_API_KEY"]}  # as before
    assert "LLM_API_KEY_REQUIRED=false" in caught.value.message
    llm_config_check(config=config_of(tmp_path, LLM_BASE_URL=local,
                                      LLM_API_KEY_REQUIRED="false"))


def test_a_server_outside_always_needs_a_key(tmp_path: Path):
    with pytest.raises(LLMConfigMissing) as caught:
        llm_config_check(config=config_of(tmp_path, LLM_BASE_URL="https://api.example/v1",
                                          LLM_API_KEY_REQUIRED="false"))
    assert caught.value.code == "llm_config_missing"
    assert caught.value.details == {"missing": ["LLM_API_KEY"]}
    assert "is for a server on this machine" in caught.value.message


def test_an_unset_key_variable_is_named(tmp_path: Path):
    with pytest.raises(LLMConfigMissing) as caught:
        llm_config_check(config=config_of(tmp_path, LLM_BASE_URL="https://api.example/v1",
                                          LLM_API_KEY_ENV="OPENAI_API_KEY"))
    assert "OPENAI_API_KEY, which LLM_API_KEY_ENV names, is not set" in caught.value.message
