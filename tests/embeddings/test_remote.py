"""The openai-compatible embedder against a local stub server that enforces the contract."""

from __future__ import annotations

import logging
import math
import time

import pytest

from core.config import ConfigError, config_with, get_config
from core.text_tokens import get_encoding
from embeddings import ChunkText, get_embedder
from embeddings.base import VectorRefused
from embeddings.local import document_text
from embeddings.remote import (
    RATE_LIMIT_ROUNDS,
    EmbeddingAuthFailed,
    EmbeddingRateLimited,
    EmbeddingUpstreamError,
    OpenAICompatibleEmbedder,
)
from tests.knowledge.stub_embeddings import StubEmbeddings, stub_vector

KEY = "sk-embed-test-0123456789"


def remote_config(*urls: str, **settings: str):
    return config_with(get_config(), EMBEDDING_PROVIDER="openai-compatible",
                       EMBEDDING_MODEL="stub-embed", EMBEDDING_BASE_URL=",".join(urls),
                       EMBEDDING_API_KEY=KEY, **settings)


def embedder_for(*stubs: StubEmbeddings, **settings: str) -> OpenAICompatibleEmbedder:
    embedder = get_embedder(config=remote_config(*(stub.base_url for stub in stubs), **settings))
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    return embedder


def expected(text: str, dimensions: int = 1024) -> list[float]:
    """The stored form of the stub's vector: unit length, padded to 1024."""
    vector = stub_vector(text, dimensions)
    norm = math.sqrt(math.fsum(value * value for value in vector))
    return [value / norm for value in vector] + [0.0] * (1024 - dimensions)


def chunks(count: int) -> list[ChunkText]:
    return [ChunkText(content=f"passage {number} about greisen tin number{number}",
                      heading_path=["Geology", f"Part {number}"], relative_path=f"n{number}.md")
            for number in range(count)]


def test_batches_are_capped_and_vectors_follow_their_index_not_their_position():
    with StubEmbeddings(api_key=KEY) as stub:
        texts = chunks(25)
        vectors = embedder_for(stub).embed_documents(texts)
    assert stub.violations == []
    assert sorted(len(body["input"]) for body in stub.requests) == [5, 10, 10]
    assert all(body["dimensions"] == 1024 and body["encoding_format"] == "float"
               for body in stub.requests)
    # The stub shuffled every answer: a client that took positions would misplace them.
    assert vectors == [pytest.approx(expected(document_text(chunk)), abs=1e-12) for chunk in texts]
    assert sorted(stub.texts) == sorted(document_text(chunk) for chunk in texts)


def test_a_shorter_model_gets_its_dimensions_and_vectors_are_padded():
    with StubEmbeddings(dimensions=256, max_batch=32) as stub:
        [vector] = embedder_for(stub, EMBEDDING_DIMENSIONS="256",
                                EMBEDDING_REMOTE_BATCH_SIZE="32").embed_documents(chunks(1))
    assert stub.violations == [] and stub.requests[0]["dimensions"] == 256
    assert len(vector) == 1024 and vector[256:] == [0.0] * 768
    assert math.isclose(sum(value * value for value in vector), 1.0)


def test_dimensions_are_left_out_for_a_server_that_refuses_them():
    with StubEmbeddings(refuse_dimensions=True, require_dimensions=False) as stub:
        embedder_for(stub, EMBEDDING_SEND_DIMENSIONS="false").embed_documents(chunks(3))
    assert stub.violations == [] and "dimensions" not in stub.requests[0]
    with StubEmbeddings(refuse_dimensions=True, require_dimensions=False) as stub, \
            pytest.raises(EmbeddingUpstreamError, match="HTTP 400"):
        embedder_for(stub).embed_documents(chunks(3))


@pytest.mark.parametrize(("behaviour", "position", "message"), [
    ("nan", 1, "the vector of input 1 holds a value that is not a finite number"),
    ("text", 0, "the vector of input 0 holds a value that is not a finite number"),
    ("short", 3, "the vector of input 3 has 1023 dimensions, not the 1024 of "
               "EMBEDDING_DIMENSIONS"),
    ("zero", 0, "the vector of input 0 is all zeros"),
])
def test_a_bad_vector_stands_for_its_input_alone(behaviour: str, position: int, message: str):
    with StubEmbeddings(behaviour=behaviour) as stub:
        vectors = embedder_for(stub).embed_documents(chunks(4))
    assert vectors[position] == VectorRefused(message)
    for index, text in enumerate(chunks(4)):
        if index != position:
            assert vectors[index] == pytest.approx(expected(document_text(text)), abs=1e-12)
    assert len(stub.requests) == 1  # a wrong answer is not retried


def test_an_answer_of_no_usable_vector_at_all_is_an_error():
    with StubEmbeddings(behaviour="zero", script=["zero"]) as stub, \
            pytest.raises(EmbeddingUpstreamError, match="all zeros") as refused:
        embedder_for(stub).embed_query("VPN")
    assert refused.value.details["reason"] == "vector_invalid"
    with StubEmbeddings(behaviour="repeated_index") as stub, \
            pytest.raises(EmbeddingUpstreamError, match="twice"):
        embedder_for(stub).embed_documents(chunks(4))


def test_a_429_burst_is_waited_out_with_retry_after(caplog):
    with StubEmbeddings(script=["status:429", "status:429"], retry_after="1") as stub:
        started = time.monotonic()
        [vector] = embedder_for(stub).embed_documents(chunks(1))
        waited = time.monotonic() - started
    assert vector == pytest.approx(expected(document_text(chunks(1)[0])), abs=1e-12)
    assert len(stub.requests) == 3 and waited >= 2.0  # two waits of the server's one second


def test_a_429_that_does_not_end_is_an_error_within_the_retries():
    # A question does not wait past its retries.
    with StubEmbeddings(behaviour="status:429", retry_after="0") as stub, \
            pytest.raises(EmbeddingRateLimited):
        embedder_for(stub, EMBEDDING_MAX_RETRIES="2").embed_query("VPN")
    assert len(stub.requests) == 3
    # A document batch is sent again as the server asks, RATE_LIMIT_ROUNDS times at most.
    with StubEmbeddings(behaviour="status:429", retry_after="0") as stub, \
            pytest.raises(EmbeddingRateLimited):
        embedder_for(stub, EMBEDDING_MAX_RETRIES="2").embed_documents(chunks(2))
    assert len(stub.requests) == 3 * (1 + RATE_LIMIT_ROUNDS)
    # Without a Retry-After, the server has not asked for a wait: an error within the retries.
    with StubEmbeddings(behaviour="status:429") as stub, pytest.raises(EmbeddingRateLimited):
        embedder_for(stub, EMBEDDING_MAX_RETRIES="1").embed_documents(chunks(2))
    assert len(stub.requests) == 2


def test_a_429_burst_longer_than_the_retries_is_waited_out_by_a_document_batch():
    with StubEmbeddings(script=["status:429"] * 5, retry_after="0") as stub:
        vectors = embedder_for(stub, EMBEDDING_MAX_RETRIES="1").embed_documents(chunks(2))
    assert len(stub.requests) == 6 and all(isinstance(vector, list) for vector in vectors)


def test_server_errors_are_retried_a_bounded_number_of_times():
    with StubEmbeddings(behaviour="status:503", retry_after="0") as stub, \
            pytest.raises(EmbeddingUpstreamError, match="HTTP 503"):
        embedder_for(stub, EMBEDDING_MAX_RETRIES="1").embed_documents(chunks(1))
    assert len(stub.requests) == 2


def test_a_rejected_key_fails_at_once_and_the_key_is_never_told(caplog):
    caplog.set_level(logging.DEBUG)
    with StubEmbeddings(behaviour="status:401") as stub, \
            pytest.raises(EmbeddingAuthFailed, match="EMBEDDING_API_KEY") as refused:
        embedder = embedder_for(stub)
        embedder.embed_documents(chunks(30))
    assert len(stub.requests) <= embedder.servers[0].max_concurrency  # no retry, no more batches
    shown = f"{refused.value.message} {refused.value.details} {embedder!r} {caplog.text}"
    assert KEY not in shown


def test_every_server_is_kept_busy_up_to_its_cap():
    with StubEmbeddings(delay_seconds=0.1) as one, StubEmbeddings(delay_seconds=0.1) as two:
        embedder = embedder_for(one, two, EMBEDDING_MAX_CONCURRENCY="2")
        started = time.monotonic()
        vectors = embedder.embed_documents(chunks(80))  # 8 batches
        elapsed = time.monotonic() - started
    assert one.in_flight_max == 2 and two.in_flight_max == 2
    assert len(one.requests) + len(two.requests) == 8 and one.requests and two.requests
    # 4 in flight: two rounds of 0.1 s, where one request at a time would take 0.8 s.
    assert elapsed < 0.6
    assert vectors == [pytest.approx(expected(document_text(chunk)), abs=1e-12)
                       for chunk in chunks(80)]


def test_a_question_gets_the_query_instruction_and_documents_do_not():
    with StubEmbeddings() as stub:
        embedder = embedder_for(stub, EMBEDDING_QUERY_INSTRUCTION="Instruct: find notes\\nQuery: ")
        vector = embedder.embed_query("greisen tin")
        embedder.embed_documents(chunks(1))
    assert stub.requests[0]["input"] == ["Instruct: find notes\nQuery: greisen tin"]
    assert vector == pytest.approx(expected("Instruct: find notes\nQuery: greisen tin"), abs=1e-12)
    assert not stub.requests[1]["input"][0].startswith("Instruct")


def test_long_texts_are_cut_to_the_token_limit():
    long = ChunkText(content="greisen " * 5000)
    with StubEmbeddings() as stub:
        embedder_for(stub, EMBEDDING_MAX_INPUT_TOKENS="100").embed_documents([long])
    [sent] = stub.texts
    assert len(get_encoding().encode(sent)) <= 100 and document_text(long).startswith(sent)


@pytest.mark.parametrize(("settings", "variable", "message"), [
    ({"EMBEDDING_BASE_URL": ""}, "EMBEDDING_BASE_URL", "must name the embedding server"),
    ({"EMBEDDING_BASE_URL": "ftp://host/v1"}, "EMBEDDING_BASE_URL", "not an http"),
    ({"EMBEDDING_MODEL": ""}, "EMBEDDING_MODEL", "server's model"),
    ({"EMBEDDING_DIMENSIONS": "2048"}, "EMBEDDING_DIMENSIONS", "outside 1..1024"),
    ({"EMBEDDING_API_KEY": "sk-é"}, "EMBEDDING_API_KEY", "HTTP header"),
])
def test_settings_are_checked_when_the_configuration_loads(settings, variable, message):
    values = {"EMBEDDING_PROVIDER": "openai-compatible", "EMBEDDING_MODEL": "m",
              "EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1", **settings}
    with pytest.raises(ConfigError, match=message) as refused:
        config_with(get_config(), **values)
    assert refused.value.variable == variable


def test_the_key_is_masked_wherever_settings_are_shown():
    config = remote_config("http://user:pw@127.0.0.1:9/v1")
    shown = dict((name, value) for name, value, _ in config.display_items())
    assert shown["EMBEDDING_API_KEY"] == "<set>" and KEY not in repr(config)
    assert KEY not in repr(get_embedder(config=config))
