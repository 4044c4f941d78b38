"""`POST /search`: the response shape and request validation."""

from __future__ import annotations

import json

import pytest

from tests.api.http import IN_DOMAIN, error_of, post
from tests.conftest import PAGED_SOURCE


def test_search_shape(client, sample_index):
    response = post(client, "/search", {"query": "Atlas CRM 导出限制", "top_k": 3})
    assert response.status_code == 200
    body = json.loads(response.content)
    assert set(body) == {"confidence", "results", "trace_id"} and len(body["results"]) == 3
    assert response["X-Request-ID"] == body["trace_id"]
    assert set(body["results"][0]) == {"content", "source", "relative_path", "heading_path",
                                       "heading", "score", "chunk_index", "chunk_id",
                                       "document_id", "page_start", "page_end",
                                       "knowledge_base"}
    assert {result["knowledge_base"] for result in body["results"]} == {"default"}
    # hybrid: the best cosine among the results (the query names no identifier)
    assert body["confidence"] == max(result["score"] for result in body["results"])
    assert "导出" in response.content.decode("utf-8")  # UTF-8, not \\u escapes


def test_search_results_carry_the_chunk_id_of_their_chunk(client, sample_index):
    from django.db import connection

    response = post(client, "/search", {"query": IN_DOMAIN, "top_k": 5})
    assert response.status_code == 200
    results = json.loads(response.content)["results"]
    assert results and all(type(result["chunk_id"]) is int for result in results)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, document_id, chunk_index, content FROM chunks "
                       "WHERE id = ANY(%s)", [[result["chunk_id"] for result in results]])
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    assert [rows.get(result["chunk_id"]) for result in results] == [
        (result["document_id"], result["chunk_index"], result["content"]) for result in results]


def test_search_results_carry_page_spans_and_null_for_notes(client, paged_index):
    response = post(client, "/search", {"query": IN_DOMAIN, "top_k": 10})
    assert response.status_code == 200
    results = json.loads(response.content)["results"]
    paged = [r for r in results if r["source"] == PAGED_SOURCE]
    notes = [r for r in results if r["source"] != PAGED_SOURCE]
    assert paged and notes
    assert [(r["page_start"], r["page_end"]) for r in paged] == [
        paged_index[r["chunk_index"]] for r in paged]
    assert {(r["page_start"], r["page_end"]) for r in paged} == {(3, 3), (3, 4)}
    # Present and null, not left out, for a chunk without pages.
    assert [(r["page_start"], r["page_end"]) for r in notes] == [(None, None)] * len(notes)


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


def test_body_that_is_not_json_is_422(client, db):
    response = post(client, "/search", "{not json", raw=True)
    assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"


def test_explain_is_added_only_when_asked(client, sample_index):
    plain = json.loads(post(client, "/search", {"query": IN_DOMAIN}).content)
    assert set(plain) == {"confidence", "results", "trace_id"}
    explained = json.loads(post(client, "/search", {"query": IN_DOMAIN, "explain": True}).content)
    assert explained["results"] == plain["results"]
    explain = explained["explain"]
    # The default retrieval is hybrid: both channels, fused.
    assert explain["mode"] == "hybrid" and len(explain["results"]) == len(plain["results"])
    first = explain["results"][0]
    assert first["fused_rank"] == 1 and first["cosine"] == plain["results"][0]["score"]
    assert first["vector_rank"] >= 1 and first["lexical_rank"] >= 1
    assert {"embed", "vector", "lexical", "fuse"} <= set(explain["timings_ms"])
    # What the refusal rule reads of these results.
    assert set(explain["signals"]) == {"top", "gap", "support", "coverage", "cjk_share"}
    assert explain["signals"]["top"] == round(plain["confidence"], 6)


def test_filters_over_http_narrow_the_results_and_refuse_what_is_malformed(client, sample_index):
    response = post(client, "/search", {"query": IN_DOMAIN, "top_k": 5,
                                        "filters": {"folder": "runbooks", "format": ["markdown"],
                                                    "title": "runbook"}})
    assert response.status_code == 200
    results = json.loads(response.content)["results"]
    assert len(results) == 5 and {r["source"] for r in results} <= {
        "runbooks/API Latency Runbook.md", "runbooks/Postgres Incident Runbook.md"}
    for filters, field in (({"format": ["pptx"]}, "format"),
                           ({"frontmatter": {"year": {"between": 1}}}, "between"),
                           ({"frontmatter": {"year": {"gte": 1, "lt": "x"}}},
                            "filters.frontmatter.year"),
                           ({"folders": "x"}, "folders")):
        response = post(client, "/search", {"query": IN_DOMAIN, "filters": filters})
        assert response.status_code == 422, filters
        assert field in response.content.decode(), filters
    # An empty filter is no filter.
    response = post(client, "/search", {"query": IN_DOMAIN, "top_k": 3, "filters": {}})
    assert response.status_code == 200 and len(json.loads(response.content)["results"]) == 3
