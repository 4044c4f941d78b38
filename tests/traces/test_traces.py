"""Traces: every /search, /ask, /ask/stream, CLI and MCP call is recorded with its id, caller,
scope, parameters, stage times, models, tokens and cited chunks; text only when asked for."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from tests.answering.stub_openai import StubOpenAI
from tests.api.http import IN_DOMAIN, OUT_OF_DOMAIN, post, sse_events
from traces.recording import traced


@pytest.fixture(autouse=True)
def no_earlier_traces(db):
    """Traces committed by other tests' servers and commands are not this test's (the delete
    is rolled back with the test)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM traces")


def traces() -> list[dict]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM traces ORDER BY created_at")
        columns = [column.name for column in cursor.description]
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    for row in rows:
        row["id"] = str(row["id"])
        for name in ("parameters", "timings_ms", "citations"):
            if isinstance(row[name], str):
                row[name] = json.loads(row[name])
    return rows


def test_a_search_is_traced_with_its_scope_parameters_and_stage_times(client, sample_index,
                                                                      config_override):
    config_override(rag_rerank="features")  # every stage, the rerank too
    response = post(client, "/search", {"query": IN_DOMAIN, "top_k": 3})
    (trace,) = traces()
    assert trace["id"] == response["X-Request-ID"] == json.loads(response.content)["trace_id"]
    assert (trace["operation"], trace["channel"], trace["status"]) == ("search", "api", "ok")
    assert trace["caller"] == "open access (no token issued)"
    assert trace["knowledge_base_ids"] and trace["mode"] == "hybrid"
    assert trace["parameters"]["top_k"] == 3 and trace["parameters"]["rerank"] == "features"
    assert {"embed", "vector", "lexical", "fuse", "rerank", "total"} <= set(trace["timings_ms"])
    assert trace["embedding_model"] == "fake/fake-lexical-v1"
    assert trace["question"] is None and trace["answer"] is None


def test_an_answer_records_model_tokens_prompt_version_and_cited_chunks(client, sample_index):
    body = json.loads(post(client, "/ask", {"question": IN_DOMAIN}).content)
    (trace,) = traces()
    assert trace["id"] == body["trace_id"] and trace["mode"] == "rag"
    assert trace["llm_model"].startswith("fake") and trace["prompt_version"]
    assert trace["prompt_tokens"] > 0 and trace["completion_tokens"] > 0
    assert "llm_total" in trace["timings_ms"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, content_hash FROM chunks")
        hashes = dict(cursor.fetchall())
    cited = trace["citations"]
    assert len(cited) == len(body["citations"])
    assert all(hashes[entry["chunk_id"]] == entry["content_hash"] for entry in cited)


def test_question_and_answer_text_only_with_rag_trace_text(client, sample_index,
                                                           config_override):
    config_override(rag_trace_text=True)
    body = json.loads(post(client, "/ask", {"question": OUT_OF_DOMAIN}).content)
    (trace,) = traces()
    assert (trace["question"], trace["answer"], trace["mode"]) == (
        OUT_OF_DOMAIN, body["answer"], "no_answer")


def test_a_stream_is_traced_when_it_ends(client, sample_index):
    response = post(client, "/ask/stream", {"question": IN_DOMAIN})
    events = sse_events(response)
    done = dict(events)["done"]
    (trace,) = traces()
    assert trace["operation"] == "ask_stream" and trace["id"] == response["X-Request-ID"]
    assert done["trace_id"] == trace["id"]
    assert {"llm_first_token", "llm_total"} <= set(trace["timings_ms"])


def test_a_refused_request_is_traced_as_an_error(client, sample_index):
    response = post(client, "/search", {"query": IN_DOMAIN, "knowledge_bases": ["nope"]})
    assert response.status_code == 404
    (trace,) = traces()
    assert (trace["status"], trace["error_code"]) == ("error", "not_found")
    assert trace["id"] == response["X-Request-ID"]


def test_text_holding_a_nul_is_traced_with_the_nul_replaced(config_override):
    config_override(rag_trace_text=True)
    with traced(operation="ask", channel="cli") as trace:
        trace.parameters["query"] = "export\x00limits"
        trace.question = "export limits\x00?"
    (row,) = traces()
    assert (row["parameters"]["query"], row["question"]) == ("export\ufffdlimits",
                                                             "export limits\ufffd?")


def test_a_trace_that_cannot_be_written_leaves_the_callers_transaction_usable():
    with transaction.atomic():
        with traced(operation="ask", channel="cli") as trace:
            trace.knowledge_base_ids = ["not a base id"]
        assert traces() == []  # refused, and the transaction still answers


def test_cli_calls_are_traced_and_stats_summarise_them(sample_index, capsys):
    call_command("search", IN_DOMAIN, "--json")
    call_command("ask", IN_DOMAIN, "--json")
    # Sorted: written in the test's one transaction, both traces have its now() as created_at.
    channels = sorted((trace["operation"], trace["channel"], trace["caller"])
                      for trace in traces())
    assert channels == [("ask", "cli", "local operator"), ("search", "cli", "local operator")]
    capsys.readouterr()
    call_command("traces", "stats", "--json")
    stats = json.loads(capsys.readouterr().out)
    stages = {(row["operation"], row["stage"]): row for row in stats["stages"]}
    assert stages[("ask", "llm_total")]["calls"] == 1
    assert stages[("search", "total")]["p50_ms"] > 0
    assert stats["tokens_per_day"][0]["calls"] == 2


@pytest.mark.parametrize("days, left", [(30, 1), (1, 0)])
def test_prune_deletes_traces_past_the_retention(sample_index, client, days, left):
    post(client, "/search", {"query": IN_DOMAIN})
    with connection.cursor() as cursor:
        cursor.execute("UPDATE traces SET created_at = now() - interval '2 days'")
    call_command("traces", "prune", "--days", str(days))
    assert len(traces()) == left


def test_a_token_is_never_in_a_trace(client, sample_index):
    from django.contrib.auth import get_user_model

    from access.api_tokens import token_create

    get_user_model().objects.create_superuser("tracer")
    secret = token_create(username="tracer").secret
    client.post("/search", json.dumps({"query": IN_DOMAIN}), content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {secret}")
    (trace,) = traces()
    assert trace["caller"].startswith("token ") and trace["token_id"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(t)::text FROM traces t")
        assert secret not in cursor.fetchone()[0]


def test_log_lines_are_json_with_the_trace_id(client, sample_index, config_override):
    """A log line written while a request runs carries its trace id (core/logs.py)."""
    import logging

    from core.logs import JsonFormatter
    from traces.recording import trace_begin, trace_finish

    trace = trace_begin(operation="search", channel="cli")
    record = logging.LogRecord("localrag.test", logging.WARNING, __file__, 1, "slow: %s ms",
                               (812,), None)
    line = json.loads(JsonFormatter().format(record))
    trace_finish(trace)
    assert line["trace_id"] == trace.id and line["message"] == "slow: 812 ms"
    assert (line["level"], line["logger"]) == ("WARNING", "localrag.test")
    after = json.loads(JsonFormatter().format(record))
    assert "trace_id" not in after


# --- tokens: the provider's usage when it reports one, else counted ----------------------------

USAGE = {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}


@pytest.fixture
def stub_llm(config_override):
    """The stub OpenAI-compatible server as the configured LLM."""
    with StubOpenAI() as stub:
        config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                        llm_model="stub-model", llm_api_key="sk-stub")
        yield stub


def test_an_answer_records_the_providers_usage(client, sample_index, stub_llm):
    stub_llm.usage = USAGE
    post(client, "/ask", {"question": IN_DOMAIN})
    (trace,) = traces()
    assert trace["mode"] == "rag" and trace["llm_model"] == "openai-compatible/stub-model"
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (321, 12)
    assert trace["token_source"] == "provider"


def test_a_stream_records_the_usage_of_its_final_chunk(client, sample_index, stub_llm):
    stub_llm.behaviour, stub_llm.usage = "sse", USAGE
    response = post(client, "/ask/stream", {"question": IN_DOMAIN})
    assert dict(sse_events(response))["done"]
    (trace,) = traces()
    assert stub_llm.requests[0].body["stream_options"] == {"include_usage": True}
    assert (trace["prompt_tokens"], trace["completion_tokens"]) == (321, 12)
    assert trace["token_source"] == "provider"


@pytest.mark.parametrize("path, behaviour", [("/ask", "json"), ("/ask/stream", "sse")])
def test_without_usage_the_tokens_are_counted(client, sample_index, stub_llm, path, behaviour):
    stub_llm.behaviour = behaviour  # "sse" sends a usage chunk with total_tokens alone
    response = post(client, path, {"question": IN_DOMAIN})
    if path == "/ask/stream":
        sse_events(response)
    (trace,) = traces()
    assert trace["prompt_tokens"] > 0 and trace["prompt_tokens"] != 321
    assert trace["completion_tokens"] > 0 and trace["token_source"] == "counted"


def test_the_fake_llms_tokens_are_counted_and_no_answer_has_none(client, sample_index):
    post(client, "/ask", {"question": IN_DOMAIN})
    post(client, "/ask", {"question": OUT_OF_DOMAIN})
    # By mode, not by time: both traces may carry one transaction's now().
    by_mode = {trace["mode"]: trace for trace in traces()}
    assert sorted(by_mode) == ["no_answer", "rag"]
    answered, refused = by_mode["rag"], by_mode["no_answer"]
    assert answered["token_source"] == "counted" and answered["completion_tokens"] > 0
    assert refused["token_source"] is None
    assert refused["prompt_tokens"] is None


def test_db_init_adds_token_source_to_a_traces_table_from_before_it(client, sample_index,
                                                                    schema_from_before):
    from ops.db_init import db_init

    with connection.cursor() as cursor:  # as a database initialised before it (rolled back)
        cursor.execute("ALTER TABLE traces DROP COLUMN token_source")
    schema_from_before("traces", "0003_trace_token_source")
    db_init()
    post(client, "/ask", {"question": IN_DOMAIN})
    (trace,) = traces()
    assert trace["token_source"] == "counted"
