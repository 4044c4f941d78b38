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
