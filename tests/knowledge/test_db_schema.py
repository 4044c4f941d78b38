"""The schema on the real database: `rag db init` is idempotent, and the constraints hold."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from knowledge.db_schema import NEWEST_CHUNK_COLUMN, schema_state
from ops.db_init import db_init

VECTOR = "[" + ",".join(["0.5"] * 1024) + "]"


def _count(sql: str, params=()) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def _document(relative_path: str = "a.md", vault: str = "/v") -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO documents (vault_path, file_path, relative_path, content_hash) "
            "VALUES (%s, %s, %s, 'h') RETURNING id",
            [vault, f"{vault}/{relative_path}", relative_path])
        return cursor.fetchone()[0]


def _chunk(document_id: int, index: int = 0) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path, "
            "content_hash) VALUES (%s, %s, 'text', '/v/a.md', 'a.md', 'c') RETURNING id",
            [document_id, index])
        return cursor.fetchone()[0]


def _embedding(chunk_id: int, dim: int = 1024, vector: str = VECTOR) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim, "
            "embedding) VALUES (%s, 'fake', 'fake-lexical-v1', %s, %s::vector)",
            [chunk_id, dim, vector])


@pytest.mark.django_db
def test_db_init_twice_changes_nothing():
    def snapshot():
        with connection.cursor() as cursor:
            cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
            tables = [r[0] for r in cursor.fetchall()]
            cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
                           "ORDER BY 1")
            return tables, [r[0] for r in cursor.fetchall()]

    _document()
    before = snapshot()
    db_init()
    db_init()
    assert snapshot() == before
    assert _count("SELECT count(*) FROM documents") == 1
    assert {"documents", "chunks", "embeddings", "ingest_runs", "auth_user"} <= set(before[0])
    assert {"idx_documents_content_hash", "idx_chunks_document_id", "idx_chunks_relative_path",
            "idx_chunks_content_hash", "idx_embeddings_config"} <= set(before[1])


@pytest.mark.django_db
def test_schema_state_reports_everything_present():
    assert schema_state() == {"database": True, "pgvector": True, "schema": True}


@pytest.mark.django_db
def test_deleting_a_document_cascades_to_chunks_and_embeddings():
    document = _document()
    _embedding(_chunk(document, 0))
    _embedding(_chunk(document, 1))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM documents WHERE id = %s", [document])
    assert _count("SELECT count(*) FROM chunks") == 0
    assert _count("SELECT count(*) FROM embeddings") == 0


@pytest.mark.django_db
def test_same_relative_path_in_two_vaults_is_allowed_but_not_twice_in_one():
    _document("a.md", "/v1")
    _document("a.md", "/v2")
    with pytest.raises(IntegrityError), transaction.atomic():
        _document("a.md", "/v1")


@pytest.mark.django_db
def test_chunk_index_is_unique_per_document_but_content_hash_is_not():
    document = _document()
    _chunk(document, 0)
    with connection.cursor() as cursor:  # same content_hash 'c' again: allowed
        cursor.execute("INSERT INTO chunks (document_id, chunk_index, content, file_path, "
                       "relative_path, content_hash) VALUES (%s, 1, 't', 'f', 'a.md', 'c')",
                       [document])
    with pytest.raises(IntegrityError), transaction.atomic():
        _chunk(document, 0)


@pytest.mark.django_db
def test_one_embedding_per_chunk_and_config():
    chunk = _chunk(_document())
    _embedding(chunk)
    with pytest.raises(IntegrityError), transaction.atomic():
        _embedding(chunk)


@pytest.mark.django_db
def test_embedding_dim_other_than_1024_is_rejected():
    chunk = _chunk(_document())
    with pytest.raises(IntegrityError), transaction.atomic():
        _embedding(chunk, dim=768)
    short = "[" + ",".join(["0.5"] * 768) + "]"
    with pytest.raises(Exception) as err, transaction.atomic():
        _embedding(chunk, vector=short)
    assert "expected 1024 dimensions" in str(err.value)


@pytest.mark.django_db
def test_ingest_run_status_is_constrained():
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO ingest_runs (vault_path, embedding_provider, embedding_model, "
                       "embedding_dim, status) VALUES ('/v', 'fake', 'm', 1024, 'done')")



@pytest.mark.django_db
def test_first_release_inserts_still_work_and_get_the_document_defaults():
    """Inserts naming only the first release's columns keep working: a note's row gets the
    format `markdown`, no title or pages, no OCR."""
    chunk = _chunk(_document())
    with connection.cursor() as cursor:
        cursor.execute("SELECT d.format, d.title, d.page_count, d.ocr_page_count, "
                       "d.metadata::text, c.page_start, c.page_end FROM chunks c "
                       "JOIN documents d ON d.id = c.document_id WHERE c.id = %s", [chunk])
        assert cursor.fetchone() == ("markdown", None, None, 0, "{}", None, None)


@pytest.mark.django_db
def test_a_database_without_the_newest_chunk_column_needs_db_init():
    with connection.cursor() as cursor:  # as a database initialised before it (rolled back)
        # CASCADE: the fill triggers' WHEN clauses depend on the column.
        cursor.execute(f"ALTER TABLE chunks DROP COLUMN {NEWEST_CHUNK_COLUMN} CASCADE")
    assert schema_state() == {"database": True, "pgvector": True, "schema": False}
