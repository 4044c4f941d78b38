"""Database plumbing every app uses: the psycopg connection behind Django's (with pgvector
registered), translation of driver errors into domain errors, and handing the connection back
around slow calls. Which tables the schema holds is the knowledge app's business
(knowledge/schema.py); this module knows only the database and the `vector` extension."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from django.db import DatabaseError, connection
from django.db import OperationalError as DjangoOperationalError
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from core.config import get_config
from core.dburl import url_password_mask
from core.errors import LocalRagError, first_line

SCHEMA_HINT = "run `rag db init`"


class DatabaseUnavailable(LocalRagError):
    code = "database_unavailable"


class SchemaNotInitialized(LocalRagError):
    code = "schema_not_initialized"


class PgvectorUnavailable(LocalRagError):
    code = "pgvector_unavailable"


def schema_missing_error(*, details: dict | None = None) -> SchemaNotInitialized:
    return SchemaNotInitialized(f"the local-rag schema is missing; {SCHEMA_HINT}", details=details)


def pgvector_missing_error(*, details: dict | None = None) -> PgvectorUnavailable:
    return PgvectorUnavailable(f"the pgvector extension is not installed; {SCHEMA_HINT}",
                               details=details)


def _unavailable(exc: Exception) -> DatabaseUnavailable:
    url = url_password_mask(get_config().database_url)
    return DatabaseUnavailable(
        f"database unreachable at {url}: {first_line(exc)}. Start it with `rag pg start` "
        "(or `docker compose up -d postgres`) and check DATABASE_URL.",
        details={"database_url": url})


@contextmanager
def db_errors_translated() -> Iterator[None]:
    """Turn driver errors into database_unavailable, schema_not_initialized (a missing table)
    or pgvector_unavailable (a missing `vector` type); anything else propagates unchanged."""
    try:
        yield
    except (DjangoOperationalError, psycopg.OperationalError) as exc:
        raise _unavailable(exc) from exc
    except (DatabaseError, psycopg.Error) as exc:
        cause = exc.__cause__ if isinstance(exc, DatabaseError) else exc
        if isinstance(cause, psycopg.errors.UndefinedTable):
            raise schema_missing_error() from exc
        if isinstance(cause, psycopg.errors.UndefinedObject) and "vector" in str(cause):
            raise pgvector_missing_error() from exc
        raise


def raw_connection() -> psycopg.Connection:
    """The psycopg connection under Django's default connection, with pgvector registered;
    raises PgvectorUnavailable when the database has no `vector` type.

    Use `psycopg.Cursor(conn)` on it for bulk writes: Django's own cursor factory binds
    parameters client-side as text, which makes every 1024-float vector a long string."""
    with db_errors_translated():
        connection.ensure_connection()
    conn = connection.connection
    if not getattr(conn, "_localrag_vector_registered", False):
        with db_errors_translated():
            # Only the `vector` type: one catalogue query per new connection, not four.
            info = TypeInfo.fetch(conn, "vector")
        if info is None:
            raise pgvector_missing_error()
        register_vector_info(conn, info)
        conn._localrag_vector_registered = True
    return conn


@contextmanager
def connection_released() -> Iterator[None]:
    """Hand Django's connection back before a slow call (an LLM answer), so none is held while
    waiting; the next query opens a fresh one.

    A connection inside a caller's transaction (an atomic block) belongs to that transaction
    and is left open: closing it would silently end the caller's work."""
    if not connection.in_atomic_block:
        connection.close()
    yield
