"""The HTTP contract in-process: shapes, validation, every error code, SSE framing."""

from __future__ import annotations

import json
import logging

import pytest
from django.db import connection
from django.test import Client

from tests.answering.stub_openai import StubOpenAI

IN_DOMAIN = "客户 P1 工单应该怎么升级？"
OUT_OF_DOMAIN = "明天巴黎天气如何？"
SECRET = "sk-test-SECRET-never-shown-4242"


@pytest.fixture
def client() -> Client:
    return Client(raise_request_exception=False)


def post(client: Client, path: str, body, *, raw: bool = False):
    data = body if raw else json.dumps(body)
    return client.post(path, data=data, content_type="application/json")


def error_of(response) -> dict:
    body = json.loads(response.content)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def sse_events(response) -> list[tuple[str, dict]]:
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.endswith("\n\n")
    events = []
    for frame in text.split("\n\n")[:-1]:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        events.append((event_line[7:], json.loads(data_line[6:])))
    return events


def test_search_shape(client, sample_index):
    response = post(client, "/search", {"query": "Atlas CRM 导出限制", "top_k": 3})
    assert response.status_code == 200
    body = json.loads(response.content)
    assert set(body) == {"confidence", "results"} and len(body["results"]) == 3
    assert set(body["results"][0]) == {"content", "source", "relative_path", "heading_path",
                                       "heading", "score", "chunk_index", "document_id"}
    assert body["confidence"] == body["results"][0]["score"]
    assert "导出" in response.content.decode("utf-8")  # UTF-8, not \\u escapes


def test_ask_shape(client, sample_index):
    response = post(client, "/ask", {"question": IN_DOMAIN})
    body = json.loads(response.content)
    assert response.status_code == 200
    assert set(body) == {"mode", "confidence", "answer", "citations", "invalid_citations_removed"}
    assert body["mode"] == "rag" and body["citations"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"query": "x", "top_k": 21}, "top_k"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": "5"}, "top_k"),
        ({"query": 5}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   \n\t"}, "query"),
        ({"query": "x" * 4001}, "query"),
        ({"query": "x", "unknown": True}, "unknown"),
        ({}, "query"),
        ([], "body"),
    ],
)
def test_invalid_search_requests_are_422_invalid_request(client, db, body, fragment):
    response = post(client, "/search", body)
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "invalid_request" and fragment in error["message"]


@pytest.mark.parametrize("body", [{"question": "x", "fallback": "yes"},
                                  {"question": "x", "fallback": 1},
                                  {"question": "  "}, {"query": "x"}])
def test_invalid_ask_requests_are_422(client, db, body):
    for path in ("/ask", "/ask/stream"):
        response = post(client, path, body)
        assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"


def test_body_that_is_not_json_is_422(client, db):
    response = post(client, "/search", "{not json", raw=True)
    assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"


def test_body_over_one_megabyte_is_413(client, db):
    response = post(client, "/ask", json.dumps({"question": "x" * (1024 * 1024 + 10)}), raw=True)
    assert response.status_code == 413 and error_of(response)["code"] == "payload_too_large"


def test_no_embeddings_is_503_retrieval_not_ready_and_health_says_not_ready(client, db):
    response = post(client, "/search", {"query": "Atlas"})
    assert response.status_code == 503 and error_of(response)["code"] == "retrieval_not_ready"
    health = client.get("/health")
    body = json.loads(health.content)
    assert health.status_code == 200 and body["checks"]["retrieval_ready"] == "not_ready"
    assert body["status"] == "degraded"


def test_health_reports_counts_for_the_current_config(client, sample_index):
    body = json.loads(client.get("/health").content)
    assert body["status"] == "ok"
    assert body["checks"] == {"app": "ok", "database": "ok", "schema": "ok", "pgvector": "ok",
                              "embedding_config": "ok", "retrieval_ready": "ready"}
    details = body["details"]
    assert details["embedding_provider"] == "fake" and details["documents"] == 9
    assert details["chunks"] == details["embeddings_current_config"] == sample_index.chunks_written


@pytest.mark.parametrize(("method", "path", "body"), [
    ("get", "/health", None), ("post", "/search", {"query": "x"}),
    ("post", "/ask", {"question": "x"}), ("post", "/ask/stream", {"question": "x"})])
def test_missing_schema_is_503_schema_not_initialized(client, db, method, path, body):
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP TABLE ingest_runs, embeddings, chunks, documents CASCADE")
    response = client.get(path) if method == "get" else post(client, path, body)
    assert response.status_code == 503
    assert error_of(response)["code"] == "schema_not_initialized"


def test_unhandled_error_is_500_without_a_stack_trace(client, db, monkeypatch):
    import retrieval.api

    def broken(**kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(retrieval.api, "search", broken)
    response = post(client, "/search", {"query": "x"})
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "internal_error"
    assert "secret internals" not in response.content.decode() and "Traceback" not in error["message"]


def test_stream_framing_and_event_order(client, sample_index):
    response = post(client, "/ask/stream", {"question": IN_DOMAIN})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-2:] == ["citations", "done"]
    answer = json.loads(post(client, "/ask", {"question": IN_DOMAIN}).content)["answer"]
    assert "".join(data["text"] for name, data in events if name == "delta") == answer


def openai(config_override, stub: StubOpenAI, **changes):
    values = {"llm_provider": "openai-compatible", "llm_base_url": stub.base_url,
              "llm_model": "stub-model", "llm_api_key": SECRET, "llm_timeout_seconds": 0.5}
    values.update(changes)
    return config_override(**values)


def test_missing_llm_settings_is_503_before_streaming(client, sample_index, config_override):
    config_override(llm_provider="openai-compatible", llm_base_url="", llm_model="",
                    llm_api_key="")
    for path in ("/ask", "/ask/stream"):
        response = post(client, path, {"question": IN_DOMAIN})
        assert response.status_code == 503 and not getattr(response, "streaming", False)
        error = error_of(response)
        assert error["code"] == "llm_config_missing"
        assert set(error["details"]["missing"]) == {"LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL"}


@pytest.mark.parametrize(
    ("behaviour", "status", "code"),
    [
        ("status:401", 502, "llm_auth_failed"),
        ("status:403", 502, "llm_auth_failed"),
        ("status:429", 503, "llm_rate_limited"),
        ("status:500", 502, "llm_upstream_error"),
        ("malformed_json", 502, "llm_upstream_error"),
        ("missing_choices", 502, "llm_upstream_error"),
        ("hang", 504, "llm_timeout"),
    ],
)
def test_llm_failures_map_to_status_and_code(client, sample_index, config_override, caplog,
                                             behaviour, status, code):
    caplog.set_level(logging.DEBUG)
    with StubOpenAI(behaviour=behaviour, hang_seconds=3) as stub:
        openai(config_override, stub)
        response = post(client, "/ask", {"question": IN_DOMAIN})
        assert response.status_code == status and error_of(response)["code"] == code
        assert stub.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in response.content.decode()
    assert SECRET not in caplog.text


def test_llm_network_error_is_502(client, sample_index, config_override):
    config_override(llm_provider="openai-compatible", llm_base_url="http://127.0.0.1:9/v1",
                    llm_model="m", llm_api_key=SECRET)
    response = post(client, "/ask", {"question": IN_DOMAIN})
    assert response.status_code == 502 and error_of(response)["code"] == "llm_upstream_error"
    assert SECRET not in response.content.decode()


def test_openai_compatible_stream_relays_deltas(client, sample_index, config_override):
    with StubOpenAI(behaviour="sse", deltas=["P1 ", "goes to ", "on-call [1] [7]."]) as stub:
        openai(config_override, stub)
        events = sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN}))
        assert stub.requests[0].body["stream"] is True
    text = "".join(data["text"] for name, data in events if name == "delta")
    assert text == "P1 goes to on-call [1] ."
    citations = dict(events)["citations"]
    assert citations["invalid_citations_removed"] == 1


@pytest.mark.parametrize(("behaviour", "code"), [("status:500", "llm_upstream_error"),
                                                 ("sse_hang", "llm_timeout"),
                                                 ("sse_malformed", "llm_upstream_error")])
def test_failure_after_stream_start_is_an_error_event(client, sample_index, config_override,
                                                      behaviour, code):
    with StubOpenAI(behaviour=behaviour, hang_seconds=3) as stub:
        openai(config_override, stub)
        response = post(client, "/ask/stream", {"question": IN_DOMAIN})
        assert response.status_code == 200
        events = sse_events(response)
    assert events[0][0] == "retrieval"
    name, data = events[-1]
    assert name == "error" and data["error"]["code"] == code
    assert SECRET not in json.dumps(data)


def test_openapi_and_docs_are_served(client, db):
    schema = json.loads(client.get("/openapi.json").content)
    assert {"/search", "/ask", "/ask/stream", "/health"} <= set(schema["paths"])
    assert "/ingest" not in schema["paths"]
    assert client.get("/docs").status_code == 200


def test_unknown_path_and_wrong_method_use_the_unified_error(client, db):
    missing = client.get("/nope")
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    wrong = client.get("/search")
    assert wrong.status_code == 405 and error_of(wrong)["code"] == "method_not_allowed"
    assert wrong["Allow"] == "POST"


def test_docs_work_without_internet(client, db):
    page = client.get("/docs").content.decode()
    assert "cdn." not in page and "/static/ninja/" in page
    asset = page.split('/static/ninja/', 1)[1].split('"', 1)[0]
    assert client.get(f"/static/ninja/{asset}").status_code == 200


def test_requests_for_other_host_names_are_refused(db):
    response = Client(raise_request_exception=False, HTTP_HOST="evil.example").get("/health")
    assert response.status_code == 400


@pytest.mark.parametrize("path", ["/health", "/search"])
def test_database_never_initialised_is_schema_not_initialized(client, db, path):
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP TABLE ingest_runs, embeddings, chunks, documents CASCADE")
        cursor.execute("DROP EXTENSION vector")
    response = client.get(path) if path == "/health" else post(client, path, {"query": "x"})
    assert response.status_code == 503
    assert error_of(response)["code"] == "schema_not_initialized"
