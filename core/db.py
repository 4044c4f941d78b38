"""Database plumbing every app uses: the psycopg connection behind Django's (with pgvector
registered), translation of driver errors into domain errors, and handing the connection back
around slow calls. Which tables the schema holds is the knowledge app's business
(knowledge/db_schema.py); this module knows only the database and the `vector` extension."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from django.db import DatabaseError, InterfaceError, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from core.config import get_config
from core.dburl import url_password_mask
from core.errors import InvalidRequest, LocalRagError, first_line
from core.replicas import read_alias

SCHEMA_HINT = "run `rag db init`"
# SQLSTATEs that mean the connection itself is gone: class 08 (connection exception) and the
# server shutting down or restarting (57P01..57P05). Every other error is about the statement.
_CONNECTION_STATES = ("08", "57P0")
_QUERY_CANCELED = "57014"

logger = logging.getLogger("localrag.db")

Row = TypeVar("Row")


class DatabaseUnavailable(LocalRagError):
    code = "database_unavailable"


class DatabaseTimeout(LocalRagError):
    code = "database_timeout"


class DatabaseRefused(LocalRagError):
    """A statement the database refused for a reason other than a lost connection."""

    code = "database_error"


class SchemaNotInitialized(LocalRagError):
    code = "schema_not_initialized"


class PgvectorUnavailable(LocalRagError):
    code = "pgvector_unavailable"


def schema_missing_error(*, details: dict | None = None) -> SchemaNotInitialized:
    return SchemaNotInitialized(f"the local-rag schema is missing; {SCHEMA_HINT}", details=details)


def pgvector_missing_error(*, details: dict | None = None) -> PgvectorUnavailable:
    return PgvectorUnavailable(f"the pgvector extension is not installed; {SCHEMA_HINT}",
                               details=details)


def database_error(exc: Exception) -> LocalRagError | None:
    """The domain error for a driver error, or None when `exc` is not one.

    The messages name no host, port, user or database (they reach HTTP clients); the server log
    gets the details."""
    cause = exc.__cause__ if isinstance(exc, (DatabaseError, InterfaceError)) else exc
    if not isinstance(cause, psycopg.Error) and not isinstance(exc, InterfaceError):
        return None
    state = getattr(cause, "sqlstate", None) or ""
    if isinstance(exc, InterfaceError) or (not state and isinstance(
            cause, (psycopg.OperationalError, psycopg.InterfaceError))) or state.startswith(
            _CONNECTION_STATES):
        logger.warning("database unreachable at %s: %s",
                       url_password_mask(get_config().database_url), first_line(cause))
        return DatabaseUnavailable(
            "the database is unreachable; start it with `rag pg start` (or `docker compose up "
            "-d postgres`) and check DATABASE_URL")
    if isinstance(cause, psycopg.errors.UndefinedTable):
        return schema_missing_error()
    if isinstance(cause, psycopg.errors.UndefinedObject) and "vector" in str(cause):
        return pgvector_missing_error()
    if state == _QUERY_CANCELED:
        return DatabaseTimeout("a database statement ran longer than "
                               "RAG_STATEMENT_TIMEOUT_SECONDS and was cancelled",
                               details={"sqlstate": state})
    if not state and isinstance(cause, psycopg.DataError) and "NUL" in str(cause):
        # Refused by the driver before it reached the server: the caller's text is at fault.
        return InvalidRequest("a text value holds a NUL character (\\x00), which can be neither "
                              "stored nor searched", details={"reason": "nul_character"})
    logger.warning("database refused a statement: SQLSTATE %s: %s", state, first_line(cause))
    return DatabaseRefused(f"the database refused the request ({type(cause).__name__}, "
                           f"SQLSTATE {state}); see the server log",
                           details={"sqlstate": state, "condition": type(cause).__name__})


@contextmanager
def db_errors_translated() -> Iterator[None]:
    """Turn driver errors into domain errors: database_unavailable only for a lost connection
    (SQLSTATE class 08, server shutdown 57P0x, no connection at all), schema_not_initialized
    for a missing table, pgvector_unavailable for a missing `vector` type, database_timeout for
    a cancelled statement, database_error for anything else the database refused."""
    try:
        yield
    except (DatabaseError, InterfaceError, psycopg.Error) as exc:
        error = database_error(exc)
        if error is None:
            raise
        raise error from exc


def raw_connection() -> psycopg.Connection:
    """The psycopg connection under Django's connection (the default one, or the replica a
    search reads from), with pgvector registered;
    raises PgvectorUnavailable when the database has no `vector` type.

    Use `psycopg.Cursor(conn)` on it for bulk writes: Django's own cursor factory binds
    parameters client-side as text, which makes every 1024-float vector a long string."""
    # Inside a search on a replica (core/replicas.py), that replica's connection.
    wrapper = connections[read_alias()]
    with db_errors_translated():
        wrapper.ensure_connection()
    conn = wrapper.connection
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
def snapshot_connection(settings: dict[str, Any], *,
                        application_name: str) -> Iterator[psycopg.Connection]:
    """A connection of its own to the database of Django `settings` (a DATABASES entry), in a
    read-only REPEATABLE READ transaction rolled back at the end: every statement in the block
    reads one state of the database (a backup's dump, a search index's build)."""
    options = settings.get("OPTIONS") or {}
    with psycopg.connect(host=settings["HOST"] or None, port=settings["PORT"] or None,
                         user=settings["USER"] or None, password=settings["PASSWORD"] or None,
                         dbname=settings["NAME"], application_name=application_name,
                         **{key: value for key, value in options.items()
                            if key in ("sslmode", "connect_timeout")}) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        yield conn
        conn.rollback()


def statement_timeout_apply(*, seconds: float) -> None:
    """Give every new database connection of this process a statement_timeout (the API server
    calls this once, so a runaway query cannot hold a request thread for long)."""
    milliseconds = max(1, round(seconds * 1000))

    def apply(sender: type[BaseDatabaseWrapper], connection: BaseDatabaseWrapper,
              **kwargs: Any) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"SET statement_timeout = {milliseconds:d}")

    # A strong reference and a fixed uid: calling this again replaces the handler.
    connection_created.connect(apply, weak=False, dispatch_uid="localrag.statement_timeout")


@contextmanager
def connection_released() -> Iterator[None]:
    """Hand Django's connection back before a slow call (an LLM answer), so none is held while
    waiting; the next query opens a fresh one.

    A connection inside a caller's transaction (an atomic block) belongs to that transaction
    and is left open: closing it would silently end the caller's work."""
    if not connection.in_atomic_block:
        connection.close()
    yield


def rows_as(cursor: Any, make: Callable[..., Row]) -> list[Row]:
    """The rows of the statement `cursor` ran, each read by column name (`make(**columns)`):
    what psycopg's class_row does, for Django's cursors, which take no row factory."""
    names = [column.name for column in cursor.description]
    return [make(**dict(zip(names, row, strict=True))) for row in cursor.fetchall()]


def row_as(cursor: Any, make: Callable[..., Row]) -> Row | None:
    """The first row of the statement `cursor` ran, read by column name; None without one."""
    row = cursor.fetchone()
    if row is None:
        return None
    return make(**dict(zip([column.name for column in cursor.description], row, strict=True)))
