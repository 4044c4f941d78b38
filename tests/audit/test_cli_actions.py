"""Every change made through the `rag` commands leaves exactly one audit entry, by `cli:<os
user>` from `cli`; a command that changes nothing leaves none, and a refused one none either."""

from __future__ import annotations

import getpass
import json

import pytest

from tests.audit.conftest import actions, entries
from tests.commands.support import rag, rag_ok

CLI_ACTOR = f"cli:{getpass.getuser()}"


@pytest.fixture
def people(db, config_override, tmp_path):
    config_override(project_root=tmp_path)
    rag_ok("kb", "create", "field", "--name", "Field reports")
    rag_ok("user", "create", "ana", "--email", "ana@example.org")
    return entries()


def test_creating_a_base_and_a_user_are_one_entry_each(people):
    base, user = people
    assert (base["action"], base["object_type"], base["object_id"], base["object_name"]) == (
        "knowledge_base.create", "knowledge_base", "field", "Field reports")
    assert base["changes"]["outbound"] == "local-only"
    assert (user["action"], user["object_name"]) == ("user.create", "ana")
    assert user["changes"] == {"email": "ana@example.org", "staff": False,
                               "password": "generated"}
    for entry in people:
        assert (entry["actor"], entry["actor_kind"], entry["source"]) == (CLI_ACTOR, "cli", "cli")
        assert entry["request_id"].startswith("cli-")


def test_the_outbound_policy_change_is_recorded_before_and_after(people):
    rag_ok("kb", "update", "field", "--outbound", "allowed")
    (entry,) = entries(action="knowledge_base.update")
    assert entry["changes"] == {"outbound": {"before": "local-only", "after": "allowed"}}
    rag_ok("kb", "update", "field", "--outbound", "allowed")
    assert len(entries(action="knowledge_base.update")) == 1  # nothing changed: no entry


def test_a_grant_its_change_and_its_removal(people):
    rag_ok("grant", "ana", "field", "reader")
    rag_ok("grant", "ana", "field", "reader")  # the same again: nothing changes
    rag_ok("grant", "ana", "field", "maintainer")
    rag_ok("revoke", "ana", "field")
    assert actions()[2:] == ["grant.create", "grant.update", "grant.delete"]
    created, updated, deleted = entries()[2:]
    assert created["object_name"] == "ana on field"
    assert updated["changes"]["role"] == {"before": "reader", "after": "maintainer"}
    assert deleted["changes"]["role"] == {"before": "maintainer", "after": None}


def test_a_token_is_recorded_without_its_secret_and_its_revocation_too(people):
    out, _ = rag_ok("token", "create", "--user", "ana", "--kb", "field", "--name", "laptop",
                    "--json")
    issued = json.loads(out)
    rag_ok("token", "revoke", str(issued["id"]))
    created, revoked = entries()[2:]
    assert (created["action"], created["object_id"], created["object_name"]) == (
        "token.create", str(issued["id"]), "laptop")
    assert created["changes"]["user"] == "ana"
    assert created["changes"]["knowledge_bases"] == ["field"]
    assert (revoked["action"], revoked["object_id"]) == ("token.revoke", str(issued["id"]))
    assert issued["token"] not in json.dumps(entries(), default=str)
    assert rag("token", "revoke", str(issued["id"]))[0] != 0  # revoked already: refused
    assert len(entries()) == 4


def test_a_refused_command_leaves_no_entry(people):
    assert rag("grant", "nobody", "field", "reader")[0] != 0
    assert rag("kb", "create", "field")[0] != 0  # exists already
    assert len(entries()) == 2


def test_the_first_admin_account_is_one_entry(db):
    rag_ok("ensure_admin")
    rag_ok("ensure_admin")  # there is one already: nothing happens
    (entry,) = entries()
    assert (entry["action"], entry["object_name"]) == ("user.create", "admin")
    assert entry["changes"] == {"superuser": True, "password": "generated"}


def test_an_index_rebuild_of_every_base_is_one_entry(people):
    listed = {base["knowledge_base"] for base in json.loads(rag_ok("index", "status", "--json")[0])}
    out, _ = rag_ok("index", "rebuild")
    (entry,) = entries(action="index.rebuild")
    assert entry["object_name"] == "all knowledge bases"
    assert set(entry["changes"]["generations"]) == listed
    assert out.count("rebuilt at generation") == len(listed) >= 1
    assert entry["changes"]["failed"] is False


def test_djangos_password_and_superuser_commands_are_audited_too(db, monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a long admin password 7")
    rag_ok("createsuperuser", "--noinput", "--username", "chief", "--email", "c@example.org")
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "another long password 8")
    rag_ok("changepassword", "chief")
    created, changed = entries()
    assert (created["action"], created["object_name"]) == ("user.create", "chief")
    assert (changed["action"], changed["object_name"], changed["changes"]) == (
        "user.update", "chief", {"password": "changed"})
    assert "long" not in json.dumps(entries(), default=str)
