"""Guessing is limited: failed sign-ins per account and per address (django-axes, in
PostgreSQL), bad bearer tokens per address and minute (access/throttling.py)."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from access.api_tokens import token_create
from tests.api.http import error_of

PASSWORD = "the right password 42"


@pytest.fixture
def sam(db):
    return get_user_model().objects.create_superuser(username="sam", password=PASSWORD)


def sign_in(client: Client, path: str, password: str, *, username: str = "sam",
            address: str = "10.0.0.7"):
    return client.post(path, {"username": username, "password": password},
                       REMOTE_ADDR=address)


@pytest.mark.parametrize("path", ["/workbench/login/", "/admin/login/"])
@override_settings(AXES_FAILURE_LIMIT=3)
def test_after_the_limit_even_the_right_password_is_refused(client, sam, path):
    for _ in range(2):
        assert sign_in(client, path, "wrong").status_code == 200  # the form again, with errors
    assert sign_in(client, path, "wrong").status_code == 429  # the third locks
    locked = sign_in(client, path, PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "_auth_user_id" not in client.session


@override_settings(AXES_FAILURE_LIMIT=3)
def test_the_lock_holds_per_account_from_any_address_and_per_address_for_any_account(client,
                                                                                      sam):
    for address in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        sign_in(client, "/workbench/login/", "wrong", address=address)
    assert sign_in(client, "/workbench/login/", PASSWORD, address="10.0.0.9").status_code == 429
    get_user_model().objects.create_user(username="ann", password=PASSWORD)
    for name in ("x1", "x2", "x3"):
        sign_in(client, "/workbench/login/", "wrong", username=name, address="10.0.0.50")
    refused = sign_in(client, "/workbench/login/", PASSWORD, username="ann", address="10.0.0.50")
    assert refused.status_code == 429
    ok = sign_in(client, "/workbench/login/", PASSWORD, username="ann", address="10.0.0.51")
    assert ok.status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3)
def test_a_successful_sign_in_starts_the_count_again(client, sam):
    for _ in range(2):
        sign_in(client, "/workbench/login/", "wrong")
    assert sign_in(client, "/workbench/login/", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        sign_in(client, "/workbench/login/", "wrong")
    assert sign_in(client, "/workbench/login/", PASSWORD).status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3)
def test_an_administrator_sees_the_lock_and_can_clear_it(client, admin_client, sam):
    for _ in range(3):
        sign_in(client, "/workbench/login/", "wrong")
    assert AccessAttempt.objects.filter(username="sam", failures_since_start=3).exists()
    listing = admin_client.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and "10.0.0.7" in listing.content.decode()
    AccessAttempt.objects.all().delete()  # what the admin's delete action does
    assert sign_in(client, "/workbench/login/", PASSWORD).status_code == 302


def search(client: Client, token: str, *, address: str):
    return client.post("/search", {"query": "export limits"}, content_type="application/json",
                       headers={"Authorization": f"Bearer {token}"}, REMOTE_ADDR=address)


def test_bad_tokens_past_the_limit_get_429_for_the_rest_of_the_minute(client, sample_index,
                                                                       config_override):
    config_override(rag_token_failure_limit=3)
    get_user_model().objects.create_superuser(username="agent")
    good = token_create(username="agent").secret
    for attempt in range(3):
        assert search(client, f"lr_wrong{attempt}", address="10.0.0.8").status_code == 401
    refused = search(client, good, address="10.0.0.8")  # not even looked at
    assert refused.status_code == 429
    error = error_of(refused)
    assert error["code"] == "too_many_requests" and "RAG_TOKEN_FAILURE_LIMIT" in error["message"]
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert search(client, good, address="10.0.0.9").status_code == 200  # another address


def test_good_tokens_are_never_counted(client, sample_index, config_override):
    config_override(rag_token_failure_limit=2)
    get_user_model().objects.create_superuser(username="agent")
    good = token_create(username="agent").secret
    for _ in range(5):
        assert search(client, good, address="10.0.0.8").status_code == 200
