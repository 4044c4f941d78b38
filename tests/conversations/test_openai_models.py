"""`GET /v1/models` and `GET /v1/models/{model}` in process: the bases a token may read as
models, the 401 of a bad token in OpenAI's shape, and the /v1/ schema apart from the main one."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from access.api_tokens import token_create
from knowledge.bases import kb_create
from knowledge.models import KnowledgeBase


@pytest.fixture
def tokens(db):
    """A superuser's token, and one of the same person narrowed to `hr`."""
    for slug in ("hr", "ops"):
        kb_create(slug=slug, name=f"{slug.upper()} handbook")
    get_user_model().objects.create_superuser("ana", "", "unused-pw-1")
    return {"full": token_create(username="ana").secret,
            "hr": token_create(username="ana", slugs=["hr"]).secret}


def get(client, path: str, token: str):
    return client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_it_lists_every_readable_base_and_the_all_model(client, tokens):
    response = get(client, "/v1/models", tokens["full"])
    assert response.status_code == 200
    body = json.loads(response.content)
    assert body["object"] == "list"
    # The all model first, then the bases by slug.
    assert [model["id"] for model in body["data"]] == ["local-rag", "kb:default", "kb:hr",
                                                       "kb:ops"]
    hr = next(model for model in body["data"] if model["id"] == "kb:hr")
    created = KnowledgeBase.objects.get(slug="hr").created_at
    assert hr == {"id": "kb:hr", "object": "model", "created": int(created.timestamp()),
                  "owned_by": "local-rag", "name": "HR handbook"}
    oldest = min(base.created_at for base in KnowledgeBase.objects.all())
    assert body["data"][0]["created"] == int(oldest.timestamp())


def test_a_narrowed_token_sees_only_its_bases(client, tokens):
    body = json.loads(get(client, "/v1/models", tokens["hr"]).content)
    assert [model["id"] for model in body["data"]] == ["local-rag", "kb:hr"]
    assert json.loads(get(client, "/v1/models/kb:hr", tokens["hr"]).content)["id"] == "kb:hr"
    hidden = get(client, "/v1/models/kb:ops", tokens["hr"])
    assert hidden.status_code == 404
    error = json.loads(hidden.content)["error"]
    assert (error["type"], error["param"], error["code"]) == ("not_found_error", "model",
                                                              "not_found")
    assert "kb:ops" in error["message"]


def test_a_bad_token_is_401_in_openai_shape(client, tokens):
    response = get(client, "/v1/models", "lr_not-a-token")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"
    error = json.loads(response.content)["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "authentication_error", "unauthorized", None)


def test_the_v1_schema_is_apart_from_the_main_one(client, db):
    main = json.loads(client.get("/openapi.json").content)
    assert not [path for path in main["paths"] if path.startswith("/v1")]
    assert "ChatCompletion" not in main["components"]["schemas"]
    v1 = json.loads(client.get("/v1/openapi.json").content)
    assert set(v1["paths"]) == {"/v1/models", "/v1/models/{model}", "/v1/chat/completions"}
