"""audit_logs is append-only: its trigger refuses UPDATE and DELETE for every role, the owner
and the bootstrap superuser included; only audit_logs_prune() removes rows, and only those past
the retention it is given. Entries are bounded whatever an action hands in."""

from __future__ import annotations

import json

import pytest
from django.db import DatabaseError, connection, transaction

from audit.records import CHANGES_MAX, TEXT_MAX, AuditEvent, audit_prune, audit_record
from core.errors import InvalidRequest
from tests.audit.conftest import entries
from tests.harness import bootstrap_credentials


def insert_aged(days: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO audit_logs (actor, actor_kind, source, action, created_at) "
                       "VALUES ('cli:old', 'cli', 'cli', 'grant.create', "
                       "now() - make_interval(days => %s)) RETURNING id", [days])
        return cursor.fetchone()[0]


@pytest.mark.parametrize("statement", [
    "UPDATE audit_logs SET actor = 'someone else'",
    "UPDATE audit_logs SET changes = '{}'::jsonb WHERE id = %s",
    "DELETE FROM audit_logs",
    "DELETE FROM audit_logs WHERE id = %s",
    "TRUNCATE audit_logs",
])
def test_the_application_role_can_neither_change_nor_delete_an_entry(db, statement):
    entry_id = audit_record(AuditEvent(action="grant.create", object_type="grant"))
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute(statement, [entry_id] if "%s" in statement else None)
    (entry,) = entries()
    assert entry["actor"].startswith("cli:") and entry["changes"] == {}


def test_not_even_the_database_superuser_can_change_an_entry(superuser_db):
    entry_id = audit_record(AuditEvent(action="token.revoke", object_type="token", object_id=7))
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone()[0] is (bootstrap_credentials() is not None)
    for statement in ("UPDATE audit_logs SET object_id = '8' WHERE id = %s",
                      "DELETE FROM audit_logs WHERE id = %s", "TRUNCATE audit_logs"):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), \
                connection.cursor() as cursor:
            cursor.execute(statement, [entry_id] if "%s" in statement else None)
    assert [entry["object_id"] for entry in entries()] == ["7"]


def test_prune_removes_only_the_entries_past_the_retention(db):
    old = insert_aged(400)
    recent = insert_aged(30)
    audit_record(AuditEvent(action="backup.run"))
    assert audit_prune(days=365) == 1
    remaining = [entry["id"] for entry in entries()]
    assert old not in remaining and recent in remaining and len(remaining) == 2


def test_prune_refuses_a_retention_under_a_day(db):
    with pytest.raises(InvalidRequest, match="at least 1 day"):
        audit_prune(days=0)
    with pytest.raises(DatabaseError, match="at least 1"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute("SELECT audit_logs_prune(0)")


def test_a_cut_off_set_by_hand_deletes_nothing_newer_than_a_day(db):
    recent = insert_aged(0)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute("SELECT set_config('localrag.audit_prune_before', "
                       "(now() + interval '1 day')::text, true)")
        cursor.execute("DELETE FROM audit_logs WHERE id = %s", [recent])
    assert [entry["id"] for entry in entries()] == [recent]


def test_rag_audit_prune_uses_the_retention_setting(db, config_override):
    from tests.commands.support import rag_ok

    config_override(rag_audit_retention_days=100)
    insert_aged(150)
    insert_aged(50)
    out, _ = rag_ok("audit", "--prune")
    assert out.strip() == "removed 1 audit entries older than 100 days"


def test_an_entry_is_bounded_whatever_the_action_hands_in(db):
    audit_record(AuditEvent(action="document.upload", object_type="document",
                            object_name="n" * 5000 + "\ud800",
                            changes={"name": "x\ud800y" * 2000, "deep": {"a": {"b": {"c": {
                                "d": {"e": 1}}}}}, "many": list(range(1000))}))
    (entry,) = entries()
    assert len(entry["object_name"]) == TEXT_MAX
    assert entry["changes"]["name"].startswith("x\ufffdy") and len(entry["changes"]["name"]) == 500
    assert entry["changes"]["deep"] == {"a": {"b": {"c": "…"}}}
    assert entry["changes"]["many"] == list(range(100))
    assert len(json.dumps(entry["changes"], ensure_ascii=False).encode()) <= CHANGES_MAX


def test_changes_too_large_keep_only_their_keys(db):
    audit_record(AuditEvent(action="settings.update",
                            changes={f"key{i}": "v" * 499 for i in range(60)}))
    (entry,) = entries()
    assert entry["changes"]["truncated"] is True
    assert entry["changes"]["keys"][:2] == ["key0", "key1"]


def test_an_action_that_is_not_dotted_is_refused(db):
    with pytest.raises(ValueError, match="dotted"):
        audit_record(AuditEvent(action="DROP TABLE"))
    with pytest.raises(DatabaseError, match="audit_logs_action_check"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute("INSERT INTO audit_logs (actor, actor_kind, source, action) "
                       "VALUES ('x', 'cli', 'cli', 'Grant')")
