"""The optional API token: with RAG_API_TOKEN set, /search, /ask and /ask/stream need it;
/health, /docs and /openapi.json stay open."""

from __future__ import annotations

import json
import os

import pytest

from ops.serving import host_is_loopback, serve_exposure_check
from tests.api.http import IN_DOMAIN, error_of

TOKEN = "tok-7f3a9c1e5b2d4860"
ENDPOINTS = [("/search", {"query": IN_DOMAIN}), ("/ask", {"question": IN_DOMAIN}),
             ("/ask/stream", {"question": IN_DOMAIN})]


@pytest.fixture
def token(config_override):
    return config_override(rag_api_token=TOKEN)


def send(client, path, body, authorization=None):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    return client.post(path, data=json.dumps(body), content_type="application/json", **headers)


@pytest.mark.parametrize(("path", "body"), ENDPOINTS)
@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer wrong-token",
                                           f"Basic {TOKEN}", f"Bearer {TOKEN}x",
                                           f"Bearer {TOKEN[:-1]}"])
def test_missing_malformed_or_wrong_token_is_401(client, sample_index, token, path, body,
                                                 authorization):
    response = send(client, path, body, authorization)
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthorized"
    assert response["WWW-Authenticate"] == "Bearer"
    assert TOKEN not in response.content.decode()


@pytest.mark.parametrize(("path", "body"), ENDPOINTS)
def test_the_right_token_is_let_through(client, sample_index, token, path, body):
    response = send(client, path, body, f"Bearer {TOKEN}")
    assert response.status_code == 200


def test_health_and_docs_stay_open(client, sample_index, token):
    assert client.get("/health").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/docs").status_code == 200


def test_without_a_token_configured_the_api_is_open(client, sample_index):
    assert send(client, "/search", {"query": IN_DOMAIN}).status_code == 200


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.53", True), ("localhost", True), ("::1", True),
    ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.20", False),
    ("my-laptop", False)])
def test_loopback_hosts(host, loopback):
    assert host_is_loopback(host) is loopback


@pytest.mark.django_db
def test_serving_beyond_loopback_needs_a_token_or_an_explicit_trust(config_override,
                                                                    monkeypatch):
    from django.contrib.auth import get_user_model

    from access.api_tokens import token_create
    from core.config import TRUSTED_NETWORK_VARIABLE

    monkeypatch.setenv(TRUSTED_NETWORK_VARIABLE, "0")  # restored (unset) after the test
    config = config_override(rag_api_token="")
    with pytest.raises(Exception) as refused:
        serve_exposure_check(host="0.0.0.0", config=config, trusted_network=False)
    assert refused.value.exit_code == 2 and "rag token create" in refused.value.message
    serve_exposure_check(host="0.0.0.0", config=config_override(rag_api_token=TOKEN),
                         trusted_network=False)
    serve_exposure_check(host="127.0.0.1", config=config, trusted_network=False)
    # An issued token is enough: callers beyond loopback must then send one.
    get_user_model().objects.create_user("operator")
    token_create(username="operator")
    serve_exposure_check(host="0.0.0.0", config=config, trusted_network=False)
    assert TRUSTED_NETWORK_VARIABLE not in os.environ
    # Trusted: the server's processes are told, so they answer without a token.
    serve_exposure_check(host="0.0.0.0", config=config, trusted_network=True)
    assert os.environ[TRUSTED_NETWORK_VARIABLE] == "1"
