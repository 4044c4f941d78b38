"""Driver errors become domain errors by SQLSTATE: only a lost connection is
`database_unavailable`; no message names the database's host, port, user or name."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from django.db import connection, transaction
from django.db.backends.signals import connection_created

from core.db import (
    DatabaseRefused,
    DatabaseTimeout,
    DatabaseUnavailable,
    connection_released,
    db_errors_translated,
    statement_timeout_apply,
)

pytestmark = pytest.mark.django_db


def run_translated(sql: str, params=()) -> None:
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def assert_names_no_database(error: Exception) -> None:
    settings = connection.settings_dict
    for secret in (settings["NAME"], settings["USER"], settings["HOST"]):
        if secret:
            assert secret not in error.message and secret not in str(error.details)


def test_statement_over_the_timeout_is_database_timeout():
    with pytest.raises(DatabaseTimeout) as raised:
        with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 50")
            cursor.execute("SELECT pg_sleep(2)")
    assert (raised.value.code, raised.value.http_status) == ("database_timeout", 503)


def test_refused_statement_is_database_error_naming_the_condition():
    with pytest.raises(DatabaseRefused) as raised:
        run_translated("SELECT 1 / 0")
    assert raised.value.details == {"sqlstate": "22012", "condition": "DivisionByZero"}
    assert_names_no_database(raised.value)


def test_row_over_the_index_limit_is_not_reported_as_unreachable():
    # Random text does not compress, so the unique btree on (vault_path, relative_path) must
    # refuse it: a program-limit error (class 54), which psycopg files under OperationalError.
    long_path = secrets.token_hex(2000)
    with pytest.raises(DatabaseRefused) as raised:
        run_translated("INSERT INTO documents (vault_path, file_path, relative_path, content_hash) "
                       "VALUES ('/v', '/v/x', %s, 'h')", [long_path])
    assert raised.value.details["condition"] == "ProgramLimitExceeded"


def test_server_ending_the_connection_is_database_unavailable():
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as own:
        with pytest.raises(DatabaseUnavailable) as raised, db_errors_translated():
            own.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    assert raised.value.code == "database_unavailable"
    assert_names_no_database(raised.value)


def test_statement_timeout_applies_to_new_connections():
    statement_timeout_apply(seconds=1.5)
    try:
        with connection.cursor() as cursor:
            # The test's connection exists already: run the handler as a new one would.
            connection_created.send(sender=type(connection), connection=connection)
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "1500ms"
    finally:
        connection_created.disconnect(dispatch_uid="localrag.statement_timeout")
        with connection.cursor() as cursor:
            cursor.execute("RESET statement_timeout")


@pytest.mark.django_db(transaction=True)
def test_connection_released_closes_an_idle_connection():
    connection.ensure_connection()
    with connection_released():
        assert connection.connection is None
    with connection.cursor() as cursor:  # the next query reconnects
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_connection_released_leaves_a_callers_transaction_alone():
    with transaction.atomic():
        connection.ensure_connection()
        with connection_released():
            assert connection.connection is not None
