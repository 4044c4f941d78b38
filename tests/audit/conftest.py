"""Shared by the audit tests: the API's test client, callers by name, and reading the log."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from tests.api.conftest import client  # noqa: F401

# Entries committed by earlier tests of the same worker (tests that commit, whose tables
# Django's flush does not empty: audit_logs is unmanaged) are older than this test's.
_mark = {"id": 0}


@pytest.fixture(autouse=True)
def audit_mark(django_db_blocker):
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM audit_logs")
        _mark["id"] = cursor.fetchone()[0]


def entries(**filters: Any) -> list[dict[str, Any]]:
    """Every entry of this test, oldest first, that matches `filters` (column = value)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, actor, actor_kind, username, token_id, source, action, "
                       "object_type, object_id, object_name, changes, request_id, address "
                       "FROM audit_logs WHERE id > %s ORDER BY id", [_mark["id"]])
        columns = [column.name for column in cursor.description]
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    for row in rows:
        if isinstance(row["changes"], str):
            row["changes"] = json.loads(row["changes"])
    return [row for row in rows if all(row[key] == value for key, value in filters.items())]


def actions() -> list[str]:
    return [entry["action"] for entry in entries()]


@pytest.fixture
def team(db, config_override, tmp_path):
    """`field` (mo maintains it, ana reads it), `hidden`, superuser root; tokens by name."""
    from access.api_tokens import token_create
    from tests.api.conftest import team_create

    config_override(project_root=tmp_path)
    team_create()
    secrets = {name: token_create(username=name).secret for name in ("root", "mo", "ana")}
    return lambda name: {"HTTP_AUTHORIZATION": f"Bearer {secrets[name]}"}
