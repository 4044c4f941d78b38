"""GET /me: who the caller's credentials act for (operator, token, user), whether it is an admin,
and the bases it reads with its role in each."""

from __future__ import annotations

import json

import pytest

from access.api_tokens import token_create
from tests.api.conftest import team_create
from tests.api.http import error_of

ENV_TOKEN = "env-me-token-93aa"


@pytest.fixture
def tokens(db, config_override):
    """`field` (mo maintains it, ana reads it) and `hidden`; the secrets of their tokens."""
    config_override(rag_api_token=ENV_TOKEN)
    team_create()
    issued = {"mo": token_create(username="mo"), "ana": token_create(username="ana"),
              "mo_read_only": token_create(username="mo", read_only=True),
              "root": token_create(username="root"),
              "root_narrowed": token_create(username="root", slugs=["field"])}
    return issued


def me(client, secret: str | None) -> dict:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}
    response = client.get("/me", **headers)
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def test_a_maintainers_token_names_its_user_and_its_bases(client, tokens):
    token = tokens["mo"]
    assert me(client, token.secret) == {
        "kind": "token", "label": f"token {token.id} of mo", "username": "mo",
        "token_id": token.id, "read_only": False, "admin": False,
        "every_knowledge_base": False,
        "knowledge_bases": [{"slug": "field", "name": "Field reports", "role": "maintainer"}]}


# A maintainer's read-only token may no longer write, but studying only reads: it keeps it.
@pytest.mark.parametrize(("name", "role", "read_only"), [("ana", "reader", False),
                                                          ("mo_read_only", "researcher", True)])
def test_a_reader_reads_and_a_maintainers_read_only_token_researches(client, tokens, name, role,
                                                                      read_only):
    body = me(client, tokens[name].secret)
    assert body["knowledge_bases"] == [{"slug": "field", "name": "Field reports", "role": role}]
    assert (body["read_only"], body["admin"]) == (read_only, False)


def test_a_superusers_token_is_an_admin_unless_narrowed(client, tokens):
    root = me(client, tokens["root"].secret)
    assert (root["admin"], root["every_knowledge_base"], root["username"]) == (True, True,
                                                                               "root")
    assert [(base["slug"], base["role"]) for base in root["knowledge_bases"]] == [
        ("default", "maintainer"), ("field", "maintainer"), ("hidden", "maintainer")]
    narrowed = me(client, tokens["root_narrowed"].secret)
    assert (narrowed["admin"], narrowed["every_knowledge_base"]) == (False, False)
    assert [base["slug"] for base in narrowed["knowledge_bases"]] == ["field"]


def test_rag_api_token_is_an_admin_token_of_no_user(client, tokens):
    body = me(client, ENV_TOKEN)
    assert (body["kind"], body["label"], body["username"], body["token_id"], body["admin"]) == (
        "token", "RAG_API_TOKEN", None, None, True)


def test_the_local_operator_while_access_control_is_off(client, db):
    body = me(client, None)
    assert (body["kind"], body["username"], body["admin"], body["every_knowledge_base"]) == (
        "operator", None, True, True)
    assert [base["slug"] for base in body["knowledge_bases"]] == ["default"]


@pytest.mark.parametrize("authorization", [None, "Bearer lr_unknown", "Basic x"])
def test_without_a_valid_token_it_is_401(client, tokens, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = client.get("/me", **headers)
    assert response.status_code == 401 and error_of(response)["code"] == "unauthorized"
