"""The audit log is read through `rag audit`, `GET /audit` (admins only) and the admin's page,
and none of them can change an entry: the API has no route that writes, the admin neither adds,
changes nor deletes, and the CLI has no option that edits."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from audit.context import Actor, AuditContext, audit_scope
from audit.records import AuditEvent, audit_record
from tests.audit.conftest import entries
from tests.commands.support import rag, rag_ok


@pytest.fixture
def log(db):
    """Five entries from four surfaces now, and one two days back; `since` is this test's
    transaction's start, which every entry it makes carries (tests that committed entries
    before it are older)."""
    ana = Actor(kind="user", label="user:ana", username="ana", user_id=5)
    with audit_scope(AuditContext(source="api", request_id="req-1", actor=ana)):
        audit_record(AuditEvent(action="grant.create", object_type="grant",
                                object_name="bob on field", changes={"role": "reader"}))
    with audit_scope(AuditContext(source="workbench", request_id="req-2", actor=ana)):
        audit_record(AuditEvent(action="document.upload", object_type="document",
                                object_id=9, object_name="Ridge.pdf"))
    audit_record(AuditEvent(action="grant.delete", object_type="grant"))  # the CLI's
    with audit_scope(AuditContext(source="admin", request_id="req-4")):
        audit_record(AuditEvent(action="signin.failed", object_name="mallory"))
    audit_record(AuditEvent(action="backup.run"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id), now() FROM audit_logs WHERE action = 'grant.create' "
                       "AND request_id = 'req-1'")
        first, since = cursor.fetchone()
        # (INSERT is the only statement allowed: an old entry is made as a restore would.)
        cursor.execute("INSERT INTO audit_logs (actor, actor_kind, source, action, created_at) "
                       "VALUES ('cli:old', 'cli', 'cli', 'restore.run', now() - interval "
                       "'2 days')")
    return {"first": first, "since": since.isoformat()}


def test_rag_audit_lists_newest_first_and_filters(log):
    since = ["--since", log["since"]]
    rows = json.loads(rag_ok("audit", *since, "--json")[0])
    assert [row["action"] for row in rows] == ["backup.run", "signin.failed", "grant.delete",
                                               "document.upload", "grant.create"]
    by_ana = json.loads(rag_ok("audit", *since, "--actor", "ana", "--json")[0])
    assert [row["action"] for row in by_ana] == ["document.upload", "grant.create"]
    grants = json.loads(rag_ok("audit", *since, "--action", "grant", "--json")[0])
    assert [row["action"] for row in grants] == ["grant.delete", "grant.create"]
    exact = json.loads(rag_ok("audit", *since, "--action", "grant.create", "--json")[0])
    assert len(exact) == 1 and exact[0]["changes"] == {"role": "reader"}
    assert len(json.loads(rag_ok("audit", *since, "--source", "workbench", "--json")[0])) == 1
    old = json.loads(rag_ok("audit", "--actor", "cli:old", "--json")[0])
    assert [row["action"] for row in old] == ["restore.run"]
    assert json.loads(rag_ok("audit", "--actor", "cli:old", "--since", "1d", "--json")[0]) == []
    assert len(json.loads(rag_ok("audit", "--actor", "cli:old", "--until", "1d",
                                 "--json")[0])) == 1


def test_rag_audit_prints_one_line_per_entry(log):
    out, _ = rag_ok("audit", "--since", log["since"], "--actor", "user:ana")
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert "workbench" in lines[0] and "document.upload" in lines[0] and "«Ridge.pdf»" in lines[0]
    assert rag_ok("audit", "--since", log["since"], "--action", "token")[0].strip() == (
        "no audit entries match")


@pytest.mark.parametrize("bad", [["--since", "yesterday"], ["--source", "email"]])
def test_rag_audit_refuses_an_argument_it_cannot_read(db, bad):
    with pytest.raises(CommandError, match=bad[0]):
        rag("audit", *bad)


def test_rag_audit_refuses_a_limit_out_of_bounds(db):
    code, _, err = rag("audit", "--limit", "0")
    assert code == 2 and "limit must be between 1 and 1000" in err


@pytest.fixture
def callers(log, config_override):
    from access.api_tokens import token_create

    users = get_user_model().objects
    users.create_superuser(username="root", password="pw")
    users.create_user(username="staffer", password="pw", is_staff=True)
    config_override(rag_api_token="")
    secrets = {name: token_create(username=name).secret for name in ("root", "staffer")}
    secrets["narrowed"] = token_create(username="root", read_only=True).secret
    return lambda name: {"HTTP_AUTHORIZATION": f"Bearer {secrets[name]}"}


def test_get_audit_is_for_admins_and_pages_backwards(client, callers, log):
    for name in ("staffer", "narrowed"):
        response = client.get("/audit", **callers(name))
        assert response.status_code == 403
        assert json.loads(response.content)["error"]["code"] == "forbidden"
    assert client.get("/audit").status_code == 401
    since = {"since": log["since"]}
    first = json.loads(client.get("/audit", {**since, "limit": 2}, **callers("root")).content)
    assert len(first["entries"]) == 2 and first["next_before_id"] == first["entries"][-1]["id"]
    second = json.loads(client.get("/audit", {**since, "limit": 2,
                                              "before_id": first["next_before_id"]},
                                   **callers("root")).content)
    assert second["entries"][0]["id"] < first["entries"][-1]["id"]
    ana = json.loads(client.get("/audit", {**since, "actor": "ana", "action": "document"},
                                **callers("root")).content)
    assert [entry["object_name"] for entry in ana["entries"]] == ["Ridge.pdf"]
    assert ana["entries"][0]["source"] == "workbench" and ana["next_before_id"] is None


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_no_route_writes_to_the_log(client, callers, method):
    before = entries()
    response = getattr(client, method)("/audit", json.dumps({"action": "grant.create"}),
                                       content_type="application/json", **callers("root"))
    assert response.status_code == 405
    assert getattr(client, method)(f"/audit/{before[0]['id']}", json.dumps({}),
                                   content_type="application/json",
                                   **callers("root")).status_code == 404
    assert entries() == before


def test_the_admin_page_shows_entries_to_superusers_and_changes_none(log):
    users = get_user_model().objects
    boss = users.create_superuser(username="boss", password="pw")
    browser = Client(raise_request_exception=False)
    browser.force_login(boss)
    listing = browser.get("/admin/audit/auditentry/")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert "document.upload" in html and "user:ana" in html and "Ridge.pdf" in html
    detail = browser.get(f"/admin/audit/auditentry/{log['first']}/change/")
    assert detail.status_code == 200 and "bob on field" in detail.content.decode()
    before = entries()
    assert browser.post(f"/admin/audit/auditentry/{log['first']}/change/",
                        {"actor": "someone"}).status_code == 403
    assert browser.post(f"/admin/audit/auditentry/{log['first']}/delete/",
                        {"post": "yes"}).status_code == 403
    assert browser.get("/admin/audit/auditentry/add/").status_code == 403
    assert entries() == before
    staffer = users.create_user(username="staffer", password="pw", is_staff=True)
    staffer_browser = Client(raise_request_exception=False)
    staffer_browser.force_login(staffer)
    assert staffer_browser.get("/admin/audit/auditentry/").status_code == 403
