"""The index schema: `rag db init` (the only thing that creates tables or extensions) and the
checks that say what an unready database lacks — first the database, then the tables, then
pgvector — for /health, ingest and search alike."""

from __future__ import annotations

from pathlib import Path

import psycopg
from django.core.management import call_command
from django.db import DatabaseError, connection

from core.config import get_config
from core.db import (
    DatabaseUnavailable,
    PgvectorUnavailable,
    db_errors_translated,
    pgvector_missing_error,
    raw_connection,
    schema_missing_error,
)
from core.errors import LocalRagError, first_line
from core.pg_services import embedded_vector_extension_ensure
from knowledge import sql

SCHEMA_FILE = Path(__file__).resolve().parent / "schema.sql"
RAG_TABLES = ("documents", "chunks", "embeddings", "ingest_runs")


def db_init(*, verbosity: int = 0) -> None:
    """Apply schema.sql (idempotent) and then Django's own migrations."""
    schema = SCHEMA_FILE.read_text(encoding="utf-8")
    target = connection.settings_dict
    # pgvector is not a trusted extension: on the project's embedded server the bootstrap
    # superuser creates it, and schema.sql's CREATE EXTENSION IF NOT EXISTS is then a no-op for
    # the application's role. On any other server schema.sql runs as configured, as before.
    embedded_vector_extension_ensure(config=get_config(), host=target["HOST"],
                                     port=target["PORT"], dbname=target["NAME"])
    with db_errors_translated():
        try:
            with connection.cursor() as cursor:
                cursor.execute(schema)
        except DatabaseError as exc:
            cause = exc.__cause__
            denied = isinstance(cause, psycopg.errors.InsufficientPrivilege)
            if denied and "extension" in str(cause):
                raise PgvectorUnavailable(
                    f"{target['USER']} may not create the pgvector extension "
                    f"({first_line(cause)}); ask a superuser to run `CREATE EXTENSION vector;` "
                    f"in {target['NAME']}, then run `rag db init` again") from exc
            raise
        call_command("migrate", interactive=False, verbosity=verbosity)


def _schema_facts() -> tuple[bool, bool]:
    """(all RAG tables exist, pgvector installed); raises DatabaseUnavailable."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.SCHEMA_STATE, [list(RAG_TABLES)])
        tables, has_vector = cursor.fetchone()
    return tables == len(RAG_TABLES), bool(has_vector)


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
