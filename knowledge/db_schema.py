"""The index schema: `rag db init` (the only thing that creates tables or extensions, and that
refuses a database whose character type is not UTF-8) and the checks that say what an unready
database lacks — first the database, then the tables, then pgvector — for /health, ingest and
search alike."""

from __future__ import annotations

import psycopg
from django.db import DatabaseError, connection

from core.config import get_config
from core.db import (
    DatabaseUnavailable,
    PgvectorUnavailable,
    SchemaNotInitialized,
    db_errors_translated,
    pgvector_missing_error,
    raw_connection,
    schema_missing_error,
)
from core.errors import LocalRagError, first_line
from core.pg_services import embedded_vector_extension_ensure
from core.schema import schema_migrate
from knowledge import sql
from knowledge.upload_names import upload_names_backfill

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


class DatabaseNotUtf8(LocalRagError):
    code = "database_not_utf8"


def database_utf8_check(*, conn: psycopg.Connection) -> None:
    """Raise DatabaseNotUtf8 unless the database's encoding and character type are UTF-8.

    With a C (or other non-UTF-8) character type pg_trgm takes no trigram from Chinese or any
    other non-ASCII text (show_trgm('数据导出') is empty, so the index cannot narrow such a
    search), and ILIKE, lower() and upper() fold only ASCII letters (É, Я stay as they are)."""
    row = conn.execute(sql.DATABASE_CTYPE).fetchone()
    assert row is not None  # the current database's own pg_database row
    ctype, encoding = row
    if encoding == "UTF8" and _is_utf8_locale(ctype):
        return
    name = conn.info.dbname
    raise DatabaseNotUtf8(
        f"database {name} has encoding {encoding} and character type {ctype}; local-rag needs "
        "UTF-8 for both, or Chinese text cannot be searched. Create it again as UTF-8: "
        f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' "
        "LC_CTYPE 'C.UTF-8' (or `rag pg start`, which does this), then run `rag db init` and "
        "`rag ingest` again", details={"database": name, "encoding": encoding, "ctype": ctype})


def _is_utf8_locale(ctype: str) -> bool:
    # C.UTF-8, C.utf8, en_US.UTF-8, zh_CN.utf8: glibc accepts either spelling of the codeset.
    return ctype.lower().replace("-", "").endswith(".utf8")


def db_init(*, verbosity: int = 0) -> None:
    """Apply every app's migrations, floor first (core/schema.py), then name the uploads stored
    before source names."""
    target = connection.settings_dict
    with db_errors_translated():
        connection.ensure_connection()
        database_utf8_check(conn=connection.connection)
    # pgvector is not a trusted extension: on the project's embedded server the bootstrap
    # superuser creates it, and the knowledge migration's CREATE EXTENSION IF NOT EXISTS is then
    # a no-op for the application's role. On any other server it runs as the configured user.
    embedded_vector_extension_ensure(config=get_config(), host=target["HOST"],
                                     port=target["PORT"], dbname=target["NAME"])
    with db_errors_translated():
        try:
            schema_migrate(verbosity=verbosity)
        except DatabaseError as exc:
            cause = exc.__cause__
            denied = isinstance(cause, psycopg.errors.InsufficientPrivilege)
            if denied and "pg_trgm" in str(cause):
                raise SchemaNotInitialized(
                    f"{target['USER']} may not create the pg_trgm extension "
                    f"({first_line(cause)}); on PostgreSQL 13 or later the database's owner may. "
                    f"Ask a superuser to run `CREATE EXTENSION pg_trgm;` in {target['NAME']}, "
                    "then run `rag db init` again") from exc
            if denied and "extension" in str(cause):
                raise PgvectorUnavailable(
                    f"{target['USER']} may not create the pgvector extension "
                    f"({first_line(cause)}); ask a superuser to run `CREATE EXTENSION vector;` "
                    f"in {target['NAME']}, then run `rag db init` again") from exc
            raise
        upload_names_backfill()


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
