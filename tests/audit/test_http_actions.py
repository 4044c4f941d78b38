"""Changes made through the API, the workbench and Django's admin leave exactly one audit entry
each, by the token or the signed-in person, with the request's id; refused ones leave none."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from access.api_tokens import token_create
from access.models import ApiToken, Grant
from jobs.worker import Worker
from knowledge.bases import kb_create, kb_get
from tests.audit.conftest import actions, entries
from tests.parsing.formats.files import pdf_bytes
from tests.workbench.conftest import person  # noqa: F401

MARKER = "Cassiterite greisen veins carry tin at 0.6 percent Sn near the ridge camp."


def work() -> None:
    Worker(poll_seconds=0.01).run(until_idle=True)


def upload(client: Client, headers: dict, *, name: str = "Greisen.pdf", slug: str = "field",
           data: bytes | None = None):
    return client.post(f"/knowledge-bases/{slug}/documents",
                       {"file": SimpleUploadedFile(name, data or pdf_bytes([MARKER * 4]))},
                       **headers)


def test_an_admin_token_creates_changes_and_deletes_a_base(client, team):
    root = team("root")
    token_id = ApiToken.objects.get(user__username="root").pk
    mark = len(entries())
    created = client.post("/knowledge-bases", json.dumps({"slug": "tin", "name": "Tin"}),
                          content_type="application/json", **root)
    assert created.status_code == 201
    changed = client.patch("/knowledge-bases/tin", json.dumps({"outbound": "allowed"}),
                           content_type="application/json", **root)
    assert changed.status_code == 200
    assert client.delete("/knowledge-bases/tin", **root).status_code == 204
    made, updated, deleted = entries()[mark:]
    assert [made["action"], updated["action"], deleted["action"]] == [
        "knowledge_base.create", "knowledge_base.update", "knowledge_base.delete"]
    for entry, response in ((made, created), (updated, changed)):
        assert (entry["actor"], entry["actor_kind"], entry["token_id"], entry["username"]) == (
            f"token:{token_id} (root)", "token", token_id, "root")
        assert entry["source"] == "api"
        assert entry["request_id"] == response["X-Request-ID"]
    assert updated["changes"] == {"outbound": {"before": "local-only", "after": "allowed"}}


def test_refused_changes_leave_no_entry(client, team):
    mark = len(entries())
    assert client.post("/knowledge-bases", json.dumps({"slug": "tin"}),
                       content_type="application/json", **team("mo")).status_code == 403
    assert upload(client, team("ana")).status_code == 403
    assert upload(client, team("mo"), slug="hidden").status_code == 404
    assert len(entries()) == mark


@pytest.fixture
def uploads(clean_tables, config_override, tmp_path):
    """Committed rows (the worker's jobs need them): `field`, maintained by mo's token."""
    config_override(project_root=tmp_path)
    field = kb_create(slug="field", name="Field reports")
    mo = get_user_model().objects.create_user(username="mo", password="pw")
    Grant.objects.create(user=mo, knowledge_base_id=field.id, role=Grant.MAINTAINER)
    secret = token_create(username="mo").secret
    yield {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    get_user_model().objects.all().delete()


def test_an_upload_its_reindex_and_its_delete_are_one_entry_each(client, uploads):
    mark = len(entries())
    data = pdf_bytes([MARKER * 4])
    first = json.loads(upload(client, uploads, data=data).content)
    again = json.loads(upload(client, uploads, name="Copy.pdf", data=data).content)
    assert again["document_id"] == first["document_id"] and again["created"] is False
    work()
    document_id = first["document_id"]
    assert client.post(f"/documents/{document_id}/reindex", data=b"", content_type="",
                       **uploads).status_code == 202
    work()
    assert client.delete(f"/documents/{document_id}", **uploads).status_code == 202
    work()  # the delete job removes the file and the rows: no entry of its own
    log = entries()[mark:]
    assert [entry["action"] for entry in log] == [
        "document.upload", "document.upload", "document.reindex", "document.delete"]
    assert [entry["changes"]["created"] for entry in log[:2]] == [True, False]
    for entry in log:
        assert (entry["object_type"], entry["object_id"]) == ("document", str(document_id))
        assert entry["object_name"] == "Greisen.pdf"
        assert entry["changes"]["knowledge_base"] == "field"
        assert (entry["source"], entry["username"]) == ("api", "mo")


def test_a_workbench_upload_is_the_signed_in_persons(uploads, person):  # noqa: F811
    maintainer = person("mae", grants={"field": Grant.MAINTAINER})
    mark = len(entries())
    response = maintainer.post("/workbench/knowledge/field/upload/",
                               {"file": SimpleUploadedFile("Ridge.pdf", pdf_bytes([MARKER]))})
    assert response.status_code in (200, 202)
    (entry,) = entries()[mark:]
    assert (entry["action"], entry["source"], entry["actor"], entry["actor_kind"]) == (
        "document.upload", "workbench", "user:mae", "user")
    get_user_model().objects.filter(username="mae").delete()


@pytest.fixture
def admin_browser(db):
    user = get_user_model().objects.create_superuser(username="boss", password="pw-boss-1x")
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    return browser


def test_a_grant_changed_in_the_admin_says_what_it_was(admin_browser):
    base = kb_create(slug="field")
    ana = get_user_model().objects.create_user(username="ana", password="pw")
    grant = Grant.objects.create(user=ana, knowledge_base_id=base.id, role=Grant.READER)
    response = admin_browser.post(f"/admin/access/grant/{grant.pk}/change/", {
        "user": ana.pk, "knowledge_base": base.id, "role": "maintainer"})
    assert response.status_code == 302, response.content.decode()[:2000]
    (entry,) = entries(action="grant.update")
    assert (entry["source"], entry["actor"]) == ("admin", "user:boss")
    assert entry["changes"]["role"] == {"before": "reader", "after": "maintainer"}
    assert len(entries()) == 2  # the base (by the service) and the grant's change


def test_users_added_and_deleted_in_the_admin_never_show_a_password(admin_browser):
    response = admin_browser.post("/admin/auth/user/add/", {
        "username": "newbie", "password1": "a long passphrase 9x", "password2":
        "a long passphrase 9x", "usable_password": "true"})
    assert response.status_code == 302, response.content.decode()[:3000]
    newbie = get_user_model().objects.get(username="newbie")
    response = admin_browser.post(f"/admin/auth/user/{newbie.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert actions() == ["user.create", "user.delete"]
    text = json.dumps(entries(), default=str)
    assert "passphrase" not in text and "pbkdf2" not in text


def test_tokens_revoked_together_in_the_admin_are_one_entry(admin_browser):
    get_user_model().objects.create_user(username="ana", password="pw")
    ids = [token_create(username="ana").id for _ in range(3)]
    mark = len(entries())
    response = admin_browser.post("/admin/access/apitoken/", {
        "action": "revoke_tokens", "_selected_action": ids})
    assert response.status_code == 302
    (entry,) = entries()[mark:]
    assert (entry["action"], entry["object_name"], entry["source"]) == (
        "token.revoke", "3 tokens", "admin")
    assert entry["changes"]["ids"] == sorted(ids)


def test_a_base_renamed_in_the_admin_is_one_entry(admin_browser):
    base = kb_create(slug="field", name="Field")
    mark = len(entries())
    response = admin_browser.post(f"/admin/knowledge/knowledgebase/{base.id}/change/", {
        "slug": "field", "name": "Field reports", "description": "", "outbound": "local-only",
        "sources-TOTAL_FORMS": "0", "sources-INITIAL_FORMS": "0",
        "grants-TOTAL_FORMS": "0", "grants-INITIAL_FORMS": "0"})
    assert response.status_code == 302, response.content.decode()[:3000]
    (entry,) = entries()[mark:]
    assert entry["action"] == "knowledge_base.update"
    assert entry["changes"]["name"] == {"before": "Field", "after": "Field reports"}
    assert kb_get("field").name == "Field reports"
