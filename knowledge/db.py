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
from localrag_site.config import get_config
from localrag_site.config import mask_url_password
from localrag_site.errors import DatabaseUnavailable, LocalRagError, SchemaNotInitialized

RAG_TABLES = ("documents", "chunks", "embeddings", "ingest_runs")
SCHEMA_HINT = "run `rag db init`"


class PgvectorUnavailable(LocalRagError):
    code = "pgvector_unavailable"


def _unavailable(exc: Exception) -> DatabaseUnavailable:
    url = mask_url_password(get_config().database_url)
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatabaseUnavailable(
        f"database unreachable at {url}: {first_line}. Start it with `rag pg start` "
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
        if isinstance(cause, psycopg.errors.UndefinedTable):
            raise SchemaNotInitialized(f"the local-rag schema is missing; {SCHEMA_HINT}") from exc
        if isinstance(cause, psycopg.errors.UndefinedObject) and "vector" in str(cause):
            raise PgvectorUnavailable(f"the pgvector extension is missing; {SCHEMA_HINT}") from exc
        raise


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


def schema_state() -> dict[str, bool]:
    """{'database': reachable, 'pgvector': extension present, 'schema': all RAG tables exist}."""
    try:
        with translate_db_errors(), connection.cursor() as cursor:
            cursor.execute(sql.SCHEMA_STATE, [list(RAG_TABLES)])
            tables, has_vector = cursor.fetchone()
    except DatabaseUnavailable:
        return {"database": False, "pgvector": False, "schema": False}
    return {"database": True, "pgvector": bool(has_vector), "schema": tables == len(RAG_TABLES)}


def ensure_schema() -> None:
    """Raise the domain error that says what is missing, or return when the schema is usable."""
    with translate_db_errors(), connection.cursor() as cursor:
        cursor.execute(sql.SCHEMA_STATE, [list(RAG_TABLES)])
        tables, has_vector = cursor.fetchone()
    if tables != len(RAG_TABLES):
        raise SchemaNotInitialized(f"the local-rag schema is missing; {SCHEMA_HINT}")
    if not has_vector:
        raise PgvectorUnavailable(f"the pgvector extension is not installed; {SCHEMA_HINT}")


def release_connection() -> None:
    """Close Django's connection before slow work (LLM calls) unless a caller's transaction
    holds it (tests run inside one)."""
    if not connection.in_atomic_block:
        connection.close()
