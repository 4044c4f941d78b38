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
    from index.vector_index import vector_index_build
    from tests.index.recall_fixtures import measurement_store

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


def test_health_names_the_embedding_servers_by_origin_only(client, db, config_override):
    config_override(EMBEDDING_PROVIDER="openai-compatible", EMBEDDING_MODEL="bge-m3",
                    EMBEDDING_API_KEY="sk-embed-secret-123",
                    EMBEDDING_BASE_URL="http://gpu-1:8080/v1?key=q,https://u:p@gpu-2/v1")
    response = client.get("/health")
    body = json.loads(response.content)
    assert body["checks"]["embedding_config"] == "ok"
    assert body["details"]["embedding_provider"] == "openai-compatible"
    assert body["details"]["embedding_endpoints"] == ["http://gpu-1:8080", "https://gpu-2"]
    assert "sk-embed-secret-123" not in response.content.decode()
    assert "key=q" not in response.content.decode() and "u:p" not in response.content.decode()


def test_a_reader_learns_no_embedding_server_and_an_admin_does(client, db, config_override):
    from access.api_tokens import token_create
    from tests.api.conftest import team_create

    config_override(rag_api_token="env-health-token-5c1d", EMBEDDING_PROVIDER="openai-compatible",
                    EMBEDDING_MODEL="bge-m3", EMBEDDING_BASE_URL="http://gpu-1:8080/v1")
    team_create()

    def details(secret: str) -> dict:
        response = client.get("/health", HTTP_AUTHORIZATION=f"Bearer {secret}")
        return json.loads(response.content)["details"]

    reader = details(token_create(username="ana").secret)
    assert reader["documents"] == 0 and "embedding_endpoints" not in reader
    assert details(token_create(username="root").secret)["embedding_endpoints"] == [
        "http://gpu-1:8080"]
    assert "embedding_endpoints" not in json.loads(client.get("/health").content)["details"]


def test_an_admin_learns_where_uploads_are_kept_and_a_reader_does_not(client, db,
                                                                       config_override):
    from access.api_tokens import token_create
    from tests.api.conftest import team_create

    config_override(rag_api_token="env-health-token-5c1d")
    team_create()

    def details(secret: str) -> dict:
        response = client.get("/health", HTTP_AUTHORIZATION=f"Bearer {secret}")
        assert "s3-secret-health-9" not in response.content.decode()
        return json.loads(response.content)["details"]

    root, ana = token_create(username="root").secret, token_create(username="ana").secret
    assert details(root)["upload_store"] == {"store": "folder"}
    config_override(rag_api_token="env-health-token-5c1d", UPLOAD_STORE="s3",
                    UPLOAD_S3_BUCKET="team-uploads", UPLOAD_S3_REGION="eu-central-1",
                    UPLOAD_S3_ACCESS_KEY_ID="AKIAH",
                    UPLOAD_S3_SECRET_ACCESS_KEY="s3-secret-health-9")
    assert details(root)["upload_store"] == {
        "store": "s3", "bucket": "team-uploads",
        "endpoint": "https://s3.eu-central-1.amazonaws.com"}
    assert "upload_store" not in details(ana)
