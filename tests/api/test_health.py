"""`GET /health`: readiness checks and counts."""

from __future__ import annotations

import json

from tests.api.http import error_of, post


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
                              "embedding_config": "ok", "retrieval_ready": "ok"}
    details = body["details"]
    assert details["embedding_provider"] == "fake" and details["documents"] == 9
    assert details["chunks"] == details["embeddings_current_config"] == sample_index.chunks_written


def test_health_says_which_vector_path_searches_take_and_why(client, sample_index,
                                                             config_override):
    from core.config import get_config
    from knowledge.vector_index import vector_index_build
    from tests.knowledge.recall_fixtures import measurement_store

    config_override(rag_vector_index="auto", rag_hnsw_min_chunks=0)
    search = json.loads(client.get("/health").content)["details"]["vector_search"]
    assert (search["setting"], search["path"], search["recall_at_10"]) == ("auto", "exact", None)
    assert search["reason"] == "no HNSW index for the current embedding model"
    vector_index_build(config=get_config())
    measurement_store(ef_searches=[100, 1000], recalls=[0.7, 0.8])
    body = json.loads(client.get("/health").content)
    search = body["details"]["vector_search"]
    assert (search["path"], search["ef_search"], search["recall_at_10"]) == ("exact", None, 0.8)
    assert (search["recall_ef_search"], search["target_recall"], search["stale"]) == (
        1000, 0.98, False)
    assert search["reason"] == "HNSW recall@10 0.800 < target 0.98 at ef_search 1000"
    assert body["status"] == "ok"  # slower, not wrong: the exact scan is the reference
    config_override(rag_vector_index="auto", rag_hnsw_min_chunks=0, rag_hnsw_target_recall=0.75)
    search = json.loads(client.get("/health").content)["details"]["vector_search"]
    assert (search["path"], search["ef_search"], search["recall_at_10"]) == ("hnsw", 1000, 0.8)
