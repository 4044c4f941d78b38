"""The researcher role on the API: explain only for a caller that researches every base it
searches, the contract's `score` and `confidence` for every reader, each role named on /me and
/knowledge-bases, and no upload, reindex or delete for a researcher.

The bases and people of tests/api/leaks_fixtures.py: rita only reads alpha; rae researches alpha
and only reads beta; ana researches alpha; mo maintains beta. Built once per class inside a
transaction that is rolled back afterwards.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from tests.api.http import error_of
from tests.api.leaks_fixtures import (
    QUERY,
    explain_check,
    hits_check,
    raw_check,
    send,
    slugs_seen,
    world_build,
)

ENV_TOKEN = "env-operator-token-7c2d"


@pytest.fixture(scope="class")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    with django_db_blocker.unblock(), transaction.atomic():
        yield world_build(tmp_path_factory.mktemp("role-leaks"), beta_scale=2)
        transaction.set_rollback(True)


@pytest.fixture
def search(client, world, config_override):
    """search(token, **body) -> the /search response, access control on."""
    config_override(rag_api_token=ENV_TOKEN)

    def post(token: str, **body):
        return send(client, "/search", {"query": QUERY, "top_k": 20, **body},
                    world.bearer(token))

    return post


@pytest.mark.usefixtures("db")
class TestResearcherRole:
    @pytest.mark.parametrize("token, narrowed", [
        ("rita", None), ("rita", ["alpha"]), ("rae", None), ("rae", ["beta"]),
        ("rae", ["alpha", "beta"]),
    ])
    def test_explain_over_a_base_only_read_is_forbidden(self, world, search, token, narrowed):
        body = {"explain": True} | ({"knowledge_bases": narrowed} if narrowed else {})
        response = search(token, **body)
        assert response.status_code == 403
        error = error_of(response)
        assert error["code"] == "forbidden" and error["details"]["field"] == "explain"
        # It names the bases only read, all of which the caller reads: nothing else.
        read_only = {"rita": {"alpha"}, "rae": {"beta"}}[token]
        assert set(error["details"]["knowledge_bases"]) == read_only
        raw_check(response.content.decode(), {"alpha"} if token == "rita" else {"alpha", "beta"})
        assert "results" not in json.loads(response.content)

    def test_a_researcher_explains_a_search_of_the_bases_it_studies(self, world, search):
        response = search("rae", explain=True, knowledge_bases=["alpha"])
        assert response.status_code == 200
        body = json.loads(response.content)
        assert body["results"]
        explain_check(world, body["explain"], {"alpha"})
        raw_check(response.content.decode(), {"alpha"})

    @pytest.mark.parametrize("token, readable", [("rita", {"alpha"}), ("rae", {"alpha", "beta"})])
    def test_readers_keep_the_contracts_score_and_confidence(self, world, search, token,
                                                              readable):
        response = search(token)
        assert response.status_code == 200
        body = json.loads(response.content)
        assert isinstance(body["confidence"], float) and "explain" not in body
        assert body["results"] and all(isinstance(hit["score"], float)
                                       for hit in body["results"])
        hits_check(world, body["results"], readable)
        assert slugs_seen(response.content.decode()) == readable

    @pytest.mark.parametrize("token, roles", [
        ("rita", {"alpha": "reader"}),
        ("rae", {"alpha": "researcher", "beta": "reader"}),
        ("ana", {"alpha": "researcher"}),
        # A read-only token keeps what only reads: researching.
        ("ana_read_only", {"alpha": "researcher"}),
        ("mo", {"beta": "maintainer"}),
        ("cy_alpha", {"alpha": "researcher"}),
    ])
    def test_me_and_the_base_list_name_each_role(self, client, world, search, token, roles):
        me = json.loads(client.get("/me", HTTP_AUTHORIZATION=world.bearer(token)).content)
        assert {base["slug"]: base["role"] for base in me["knowledge_bases"]} == roles
        listed = json.loads(client.get("/knowledge-bases",
                                       HTTP_AUTHORIZATION=world.bearer(token)).content)
        assert {base["slug"]: base["role"] for base in listed} == roles

    def test_a_researcher_may_not_upload_reindex_or_delete(self, client, world, search,
                                                           config_override, tmp_path):
        config_override(rag_api_token=ENV_TOKEN, project_root=tmp_path)
        bearer = world.bearer("rae")
        document_id = min(world.document_ids["alpha"])
        refused = [
            client.post("/knowledge-bases/alpha/documents",
                        {"file": SimpleUploadedFile("a.md", b"# A\n\nText.\n")},
                        HTTP_AUTHORIZATION=bearer),
            client.post(f"/documents/{document_id}/reindex", data=b"", content_type="",
                        HTTP_AUTHORIZATION=bearer),
            client.delete(f"/documents/{document_id}", HTTP_AUTHORIZATION=bearer),
        ]
        for response in refused:
            assert response.status_code == 403, response.content
            assert error_of(response)["code"] == "forbidden"
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM documents WHERE status = 'active'")
            assert cursor.fetchone()[0] == sum(len(ids) for ids in world.document_ids.values())
        # The maintainer of beta may: the same request is not refused for the role.
        beta_document = min(world.document_ids["beta"])
        assert client.post(f"/documents/{beta_document}/reindex", data=b"", content_type="",
                           HTTP_AUTHORIZATION=world.bearer("mo")).status_code == 202
