"""Database plumbing shared by the apps: the psycopg connection behind Django's, pgvector
registration, translation of driver errors into domain errors, and readiness checks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import DatabaseError, connection
from django.db import OperationalError as DjangoOperationalError
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from knowledge import sql
from localrag_site.config import get_config, mask_url_password
from localrag_site.errors import (DatabaseUnavailable, LocalRagError, SchemaNotInitialized,
                                  first_line)

RAG_TABLES = ("documents", "chunks", "embeddings", "ingest_runs")
SCHEMA_HINT = "run `rag db init`"


class PgvectorUnavailable(LocalRagError):
    code = "pgvector_unavailable"


def _unavailable(exc: Exception) -> DatabaseUnavailable:
    url = mask_url_password(get_config().database_url)
    return DatabaseUnavailable(
        f"database unreachable at {url}: {first_line(exc)}. Start it with `rag pg start` "
        "(or `docker compose up -d postgres`) and check DATABASE_URL.",
        details={"database_url": url})


@contextmanager
def translate_db_errors() -> Iterator[None]:
    """Turn driver errors into database_unavailable / schema_not_initialized."""
    try:
        yield
    except (DjangoOperationalError, psycopg.OperationalError) as exc:
        raise _unavailable(exc) from exc
    except (DatabaseError, psycopg.Error) as exc:
        cause = exc.__cause__ if isinstance(exc, DatabaseError) else exc
        missing = {"database": True, "schema": True, "pgvector": True}
        if isinstance(cause, psycopg.errors.UndefinedTable):
            missing["schema"] = False
        elif isinstance(cause, psycopg.errors.UndefinedObject) and "vector" in str(cause):
            missing["pgvector"] = False
        error = schema_error(missing)
        if error is None:
            raise
        raise error from exc


def raw_connection() -> psycopg.Connection:
    """The psycopg connection under Django's default connection, with pgvector registered.

    Use `psycopg.Cursor(conn)` on it for bulk writes: Django's own cursor factory binds
    parameters client-side as text, which makes every 1024-float vector a long string."""
    with translate_db_errors():
        connection.ensure_connection()
    conn = connection.connection
    if not getattr(conn, "_localrag_vector_registered", False):
        with translate_db_errors():
            # Only the `vector` type: one catalogue query per new connection, not four.
            info = TypeInfo.fetch(conn, "vector")
        if info is None:
            ensure_schema()  # says "schema missing" when that is the cause
            raise PgvectorUnavailable(f"the pgvector extension is not installed; {SCHEMA_HINT}")
        register_vector_info(conn, info)
        conn._localrag_vector_registered = True
    return conn


def _schema_facts() -> tuple[bool, bool]:
    """(all RAG tables exist, pgvector installed); raises DatabaseUnavailable."""
    with translate_db_errors(), connection.cursor() as cursor:
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
        return SchemaNotInitialized(f"the local-rag schema is missing; {SCHEMA_HINT}",
                                    details=details)
    if not state["pgvector"]:
        return PgvectorUnavailable(f"the pgvector extension is not installed; {SCHEMA_HINT}",
                                   details=details)
    return None


def ensure_schema() -> None:
    """Raise the domain error that says what is missing, or return when the schema is usable."""
    tables, has_vector = _schema_facts()  # an unreachable database raises with its cause
    error = schema_error({"database": True, "schema": tables, "pgvector": has_vector})
    if error is not None:
        raise error


def release_connection() -> None:
    """Close Django's connection before slow work (LLM calls) unless a caller's transaction
    holds it (tests run inside one)."""
    if not connection.in_atomic_block:
        connection.close()
