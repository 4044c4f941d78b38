"""Failed sign-ins, to the workbench and to the admin, are one `signin.failed` entry each with
the user name tried and never the password; the attempt that locks an account out adds one
`signin.locked_out`, and the attempts refused while it is locked are failures only."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from tests.audit.conftest import actions, entries

PASSWORD = "the right password 42"


def sign_in(path: str, password: str, *, username: str = "sam") -> int:
    response = Client(raise_request_exception=False).post(
        path, {"username": username, "password": password}, REMOTE_ADDR="10.0.0.7")
    return response.status_code


@pytest.fixture
def sam(db):
    return get_user_model().objects.create_user(username="sam", password=PASSWORD)


@pytest.mark.parametrize(("path", "source"), [("/workbench/login/", "workbench"),
                                              ("/admin/login/", "admin")])
def test_a_failed_sign_in_names_the_user_tried_and_never_the_password(sam, path, source):
    assert sign_in(path, "wrong-guess-77", username="saml") == 200
    (entry,) = entries()
    assert (entry["action"], entry["source"], entry["actor"]) == (
        "signin.failed", source, "anonymous")
    assert entry["object_name"] == "saml" and entry["changes"] == {"username": "saml"}
    assert entry["address"] == "10.0.0.7"
    assert "wrong-guess-77" not in json.dumps(entry, default=str)


def test_a_successful_sign_in_is_no_entry(sam):
    assert sign_in("/workbench/login/", PASSWORD) == 302
    assert entries() == []


@override_settings(AXES_FAILURE_LIMIT=3)
def test_the_lock_out_is_one_entry_at_the_attempt_that_causes_it(sam):
    for _ in range(2):
        sign_in("/workbench/login/", "wrong")
    assert sign_in("/workbench/login/", "wrong") == 429
    assert sign_in("/workbench/login/", PASSWORD) == 429  # locked: refused, a failure again
    # The third attempt is a failure and the lock-out (in the order the receivers run); the
    # fourth a failure only.
    recorded = actions()
    assert recorded[:2] == ["signin.failed", "signin.failed"]
    assert sorted(recorded[2:4]) == ["signin.failed", "signin.locked_out"]
    assert recorded[4:] == ["signin.failed"]
    (locked,) = entries(action="signin.locked_out")
    assert locked["object_name"] == "sam"
    assert locked["changes"]["failures"] == 3 and locked["changes"]["minutes"] >= 1


@pytest.mark.parametrize("path", ["/workbench/login/", "/admin/login/"])
def test_a_user_name_of_any_length_is_cut_and_the_form_answers(sam, path):
    assert sign_in(path, "wrong", username="x" * 5000) == 200
    (entry,) = entries()
    assert len(entry["changes"]["username"]) == 150


def test_behind_the_declared_tls_proxy_the_forwarded_address_is_recorded(sam, config_override):
    config_override(rag_tls_proxy=True)
    Client(raise_request_exception=False).post(
        "/workbench/login/", {"username": "sam", "password": "wrong"}, REMOTE_ADDR="127.0.0.1",
        HTTP_X_FORWARDED_FOR="198.51.100.9, 203.0.113.4")
    (entry,) = entries()
    assert entry["address"] == "203.0.113.4"  # the proxy's own addition, not the client's claim
