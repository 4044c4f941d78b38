"""`rag db init`: the only thing that creates tables or extensions. It refuses a database whose
character type is not UTF-8, has the embedded server's superuser create pgvector, migrates every
app floor first (core/schema.py), then names the uploads stored before source names."""

from __future__ import annotations

import psycopg
from django.db import DatabaseError, connection

from core.config import get_config
from core.db import PgvectorUnavailable, SchemaNotInitialized, db_errors_translated
from core.errors import LocalRagError, first_line
from core.schema import schema_migrate
from knowledge.upload_names import upload_names_backfill
from ops import sql
from ops.pg_services import embedded_vector_extension_ensure


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
