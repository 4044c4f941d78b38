"""POST /knowledge-bases, PATCH and DELETE /knowledge-bases/{slug}: admins create, change and
delete bases through the services of `rag kb`; everyone else is refused (403 where it reads the
base, 404 where it does not, like a missing one)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from access.api_tokens import token_create
from access.models import Grant
from knowledge.bases import kb_list
from tests.api.conftest import team_create
from tests.api.http import error_of

ENV_TOKEN = "env-admin-token-71c2"


@pytest.fixture
def bearer(db, config_override, tmp_path):
    """The Authorization header of each kind of caller; `field` is a base of `mo` (maintainer)
    and `ana` (reader), `hidden` a base neither may read."""
    config_override(rag_api_token=ENV_TOKEN, project_root=tmp_path)  # uploads go there
    team_create()
    secrets = {"root": token_create(username="root").secret,
               "root_narrowed": token_create(username="root", slugs=["field"]).secret,
               "root_read_only": token_create(username="root", read_only=True).secret,
               "mo": token_create(username="mo").secret,
               "ana": token_create(username="ana").secret}
    secrets["env"] = ENV_TOKEN
    return lambda name: {"HTTP_AUTHORIZATION": f"Bearer {secrets[name]}"}


def create(client, body, headers):
    return client.post("/knowledge-bases", json.dumps(body), content_type="application/json",
                       **headers)


def patch(client, slug, body, headers):
    return client.patch(f"/knowledge-bases/{slug}", json.dumps(body),
                        content_type="application/json", **headers)


def slugs() -> set[str]:
    return {base.slug for base in kb_list()}


@pytest.mark.parametrize("admin", ["root", "env"])
def test_an_admin_creates_an_empty_base_that_it_maintains(client, bearer, admin):
    response = create(client, {"slug": "survey-2024", "name": "Survey 2024",
                               "description": "Field survey notes"}, bearer(admin))
    assert response.status_code == 201, response.content
    assert json.loads(response.content) == {
        "slug": "survey-2024", "name": "Survey 2024", "description": "Field survey notes",
        "outbound": "local-only", "documents": 0, "chunks": 0, "role": "maintainer"}
    listed = json.loads(client.get("/knowledge-bases", **bearer(admin)).content)
    assert "survey-2024" in {base["slug"] for base in listed}


def test_the_local_operator_creates_a_base_while_access_control_is_off(client, db):
    response = create(client, {"slug": "notes"}, {})
    assert response.status_code == 201
    assert json.loads(response.content)["name"] == "notes"  # the slug, as `rag kb create`


@pytest.mark.parametrize("caller", ["mo", "ana", "root_narrowed", "root_read_only"])
def test_only_an_admin_may_create_a_base(client, bearer, caller):
    for slug in ("survey", "hidden"):  # a taken slug is refused alike: nothing learnt of it
        response = create(client, {"slug": slug}, bearer(caller))
        assert response.status_code == 403
        assert error_of(response)["code"] == "forbidden"
        assert slug not in error_of(response)["message"]
    assert "survey" not in slugs()


def test_a_taken_slug_is_409_conflict(client, bearer):
    response = create(client, {"slug": "field"}, bearer("root"))
    assert response.status_code == 409
    assert error_of(response) == {"code": "conflict",
                                  "message": "knowledge base 'field' exists already",
                                  "details": {"slug": "field"}}


@pytest.mark.parametrize("slug", ["Field", "-field", "a" * 64, "field\n", "", "a b", "ü"])
def test_a_slug_rag_kb_create_refuses_is_422(client, bearer, slug):
    response = create(client, {"slug": slug}, bearer("root"))
    assert response.status_code == 422
    assert error_of(response)["details"] == {"field": "slug"}
    assert slugs() == {"default", "field", "hidden"}


@pytest.mark.parametrize("body", [{"slug": "x", "name": ""}, {"slug": "x", "name": " "},
                                  {"slug": "x", "name": "a\x07b"},
                                  {"slug": "x", "description": "d\x00"},
                                  {"slug": "x", "sources": ["/etc"]}, {"name": "no slug"}])
def test_a_bad_body_is_422_invalid_request(client, bearer, body):
    response = create(client, body, bearer("root"))
    assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"
    assert "x" not in slugs()


def test_an_admin_renames_a_base_and_changes_its_description(client, bearer):
    response = patch(client, "field", {"name": "Field reports 2024"}, bearer("root"))
    assert response.status_code == 200
    body = json.loads(response.content)
    assert (body["slug"], body["name"], body["description"]) == (
        "field", "Field reports 2024", "")
    body = json.loads(patch(client, "field", {"description": "From the ridge"},
                            bearer("env")).content)
    assert (body["name"], body["description"]) == ("Field reports 2024", "From the ridge")
    assert json.loads(patch(client, "field", {}, bearer("root")).content) == body


@pytest.mark.parametrize("body", [{"slug": "renamed"}, {"name": ""}, {"name": "x\x00"},
                                  {"description": "x" * 2001}])
def test_a_change_of_the_slug_or_a_bad_value_is_422(client, bearer, body):
    response = patch(client, "field", body, bearer("root"))
    assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"
    assert "field" in slugs()


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_a_reader_or_maintainer_is_403_and_a_base_it_cannot_see_is_404(client, bearer,
                                                                       method):
    def call(slug: str, caller: str):
        if method == "patch":
            return patch(client, slug, {"name": "Taken over"}, bearer(caller))
        return client.delete(f"/knowledge-bases/{slug}", **bearer(caller))

    for caller in ("mo", "ana", "root_narrowed", "root_read_only"):
        refused = call("field", caller)
        assert refused.status_code == 403 and error_of(refused)["code"] == "forbidden"
    hidden, unknown = call("hidden", "mo"), call("nowhere", "mo")
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.content.replace(b"hidden", b"nowhere") == unknown.content
    assert call("nowhere", "root").status_code == 404
    assert [base.name for base in kb_list(slugs=["field", "hidden"])] == ["Field reports",
                                                                           "Hidden"]


def test_an_admin_deletes_an_empty_base_with_its_grants(client, bearer):
    response = client.delete("/knowledge-bases/field", **bearer("root"))
    assert response.status_code == 204 and response.content == b""
    assert "field" not in slugs()
    assert not Grant.objects.exists()
    assert client.delete("/knowledge-bases/field", **bearer("root")).status_code == 404


def test_a_base_that_holds_documents_or_default_is_not_deleted(client, bearer, sample_index):
    uploaded = client.post("/knowledge-bases/hidden/documents",
                           {"file": SimpleUploadedFile("note.txt", b"A note about the ridge.")},
                           **bearer("root"))
    assert uploaded.status_code == 202  # queued: a document of the base all the same
    for slug in ("default", "hidden"):
        response = client.delete(f"/knowledge-bases/{slug}", **bearer("root"))
        assert response.status_code == 409
        assert error_of(response)["details"] == {"knowledge_base": slug}
    assert {"default", "hidden"} <= slugs()

