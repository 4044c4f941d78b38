"""The checks that say what an unready database lacks — first the database, then the tables,
then pgvector — for /health, ingest and search alike, and the connection the index is read and
written through. The schema itself is made by `rag db init` (ops/db_init.py)."""

from __future__ import annotations

import psycopg
from django.db import connection

from core.db import (
    DatabaseUnavailable,
    PgvectorUnavailable,
    db_errors_translated,
    pgvector_missing_error,
    raw_connection,
    schema_missing_error,
)
from core.errors import LocalRagError
from knowledge import sql

# Each table came with a feature (lexical_stats with the lexical channel, the knowledge-base and
# job tables with knowledge bases, vector_index_tuning with the HNSW recall measurement, the
# lexical_*_stats tables with impact-ordered BM25, job_workers with the readiness probe,
# token_failures with token throttling): a database initialised before one is reported as
# needing `rag db init`.
RAG_TABLES = ("documents", "chunks", "embeddings", "ingest_runs", "lexical_stats",
              "knowledge_bases", "knowledge_base_sources", "document_versions", "background_jobs",
              "traces", "vector_index_tuning", "lexical_scope_stats", "lexical_length_stats",
              "lexical_term_stats", "job_workers", "token_failures")
# The newest column of chunks: retrieval reads it, so a database from before it (impact cells,
# knowledge bases, page spans) is reported as needing `rag db init` too.
NEWEST_CHUNK_COLUMN = "lexical_cells"


def _schema_facts() -> tuple[bool, bool]:
    """(all RAG tables exist, pgvector installed); raises DatabaseUnavailable."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.SCHEMA_STATE, [list(RAG_TABLES), NEWEST_CHUNK_COLUMN])
        found, has_vector = cursor.fetchone()
    return found == len(RAG_TABLES) + 1, bool(has_vector)


def schema_state() -> dict[str, bool]:
    """{'database': reachable, 'pgvector': extension present, 'schema': all RAG tables exist}."""
    try:
        tables, has_vector = _schema_facts()
    except DatabaseUnavailable:
        return {"database": False, "pgvector": False, "schema": False}
    return {"database": True, "pgvector": has_vector, "schema": tables}


def schema_error(state: dict[str, bool], *, details: dict | None = None) -> LocalRagError | None:
    """The domain error for what `state` lacks (database, then tables, then pgvector), or None."""
    if not state["database"]:
        return DatabaseUnavailable("database unreachable; start it with `rag pg start` and "
                                   "check DATABASE_URL", details=details)
    if not state["schema"]:
        return schema_missing_error(details=details)
    if not state["pgvector"]:
        return pgvector_missing_error(details=details)
    return None


def schema_ensure() -> None:
    """Raise the domain error that says what is missing, or return when the schema is usable."""
    tables, has_vector = _schema_facts()  # an unreachable database raises with its cause
    error = schema_error({"database": True, "schema": tables, "pgvector": has_vector})
    if error is not None:
        raise error


def index_connection() -> psycopg.Connection:
    """core.db.raw_connection for reading or writing the index. A database without pgvector
    has usually never been initialised at all: then the error says the schema is missing."""
    try:
        return raw_connection()
    except PgvectorUnavailable:
        schema_ensure()
        raise
