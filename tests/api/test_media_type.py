"""Request bodies must be JSON: anything else is 415 before any work, so a web page cannot make
a browser post questions to a server on 127.0.0.1 with a form or text/plain body."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError

from tests.api.http import IN_DOMAIN, error_of


@pytest.mark.parametrize("content_type", [
    "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x", "application/json; charset=latin-1",
    "application/jsonx", ""])
@pytest.mark.parametrize("path", ["/search", "/ask", "/ask/stream"])
def test_bodies_that_are_not_json_are_415(client, db, path, content_type):
    response = client.generic("POST", path, json.dumps({"query": IN_DOMAIN}).encode(),
                              content_type=content_type)
    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "Application/JSON;charset=\"UTF-8\""])
def test_json_with_or_without_a_utf8_charset_is_accepted(client, sample_index, content_type):
    response = client.generic("POST", "/search", json.dumps({"query": IN_DOMAIN}).encode(),
                              content_type=content_type)
    assert response.status_code == 200


def test_the_admin_login_form_is_not_affected(client, db):
    response = client.post("/admin/login/", {"username": "x", "password": "y"})
    assert response.status_code in (200, 403)  # the form itself, or CSRF without a token
    assert response["Content-Type"].startswith("text/html")


def test_admin_passwords_are_validated():
    with pytest.raises(ValidationError):
        validate_password("admin123")
    validate_password("correct-horse-battery-staple-42")
