"""The API root: unified errors on every endpoint (missing schema, 404/405, 500), docs and host
names."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client

from tests.api.http import error_of, post


@pytest.mark.parametrize(("method", "path", "body"), [
    ("get", "/health", None), ("post", "/search", {"query": "x"}),
    ("post", "/ask", {"question": "x"}), ("post", "/ask/stream", {"question": "x"})])
def test_missing_schema_is_503_schema_not_initialized(client, db, method, path, body):
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP TABLE ingest_runs, embeddings, chunks, documents CASCADE")
    response = client.get(path) if method == "get" else post(client, path, body)
    assert response.status_code == 503
    assert error_of(response)["code"] == "schema_not_initialized"


def test_unhandled_error_is_500_without_a_stack_trace(client, db, monkeypatch):
    import retrieval.api

    def broken(**kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(retrieval.api, "search", broken)
    response = post(client, "/search", {"query": "x"})
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "internal_error"
    assert ("secret internals" not in response.content.decode()
            and "Traceback" not in error["message"])


def test_openapi_and_docs_are_served(client, db):
    schema = json.loads(client.get("/openapi.json").content)
    assert {"/search", "/ask", "/ask/stream", "/health"} <= set(schema["paths"])
    assert "/ingest" not in schema["paths"]
    assert client.get("/docs").status_code == 200


def test_unknown_path_and_wrong_method_use_the_unified_error(client, db):
    missing = client.get("/nope")
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    wrong = client.get("/search")
    assert wrong.status_code == 405 and error_of(wrong)["code"] == "method_not_allowed"
    assert wrong["Allow"] == "POST"


@pytest.mark.parametrize(("path", "body_keys"), [
    ("/", {"code", "message", "details"}), ("/static/ninja/x.js", {"code", "message", "details"}),
    ("/v1/", {"message", "type", "param", "code"})])
def test_a_refused_csrf_check_outside_the_html_sites_uses_the_error_body(db, path, body_keys):
    # DELETE of a view that is not CSRF-exempt: ninja's root of each API, the static files.
    response = Client(enforce_csrf_checks=True).delete(path)
    assert response.status_code == 403
    assert set(json.loads(response.content)["error"]) == body_keys
    assert json.loads(response.content)["error"]["code"] == "forbidden"


def test_a_refused_csrf_check_in_the_admin_keeps_its_page(db):
    response = Client(enforce_csrf_checks=True).post("/admin/login/", {"username": "x"})
    assert response.status_code == 403 and response["Content-Type"].startswith("text/html")


def test_docs_work_without_internet(client, db):
    page = client.get("/docs").content.decode()
    assert "cdn." not in page and "/static/ninja/" in page
    asset = page.split('/static/ninja/', 1)[1].split('"', 1)[0]
    assert client.get(f"/static/ninja/{asset}").status_code == 200


def test_requests_for_other_host_names_are_refused(db):
    response = Client(raise_request_exception=False, HTTP_HOST="evil.example").get("/health")
    assert response.status_code == 400
    assert error_of(response)["code"] == "bad_request"


@pytest.mark.parametrize("path", ["/health", "/search"])
def test_database_never_initialised_is_schema_not_initialized(client, superuser_db, path):
    # Dropping pgvector takes a superuser (the application's role does not own the extension).
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP TABLE ingest_runs, embeddings, chunks, documents CASCADE")
        cursor.execute("DROP EXTENSION vector")
    response = client.get(path) if path == "/health" else post(client, path, {"query": "x"})
    assert response.status_code == 503
    assert error_of(response)["code"] == "schema_not_initialized"


def test_the_servers_address_leads_people_to_the_workbench(client, db):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/workbench/"
    # The API keeps its own paths.
    assert client.get("/health").status_code in (200, 503)
    assert client.get("/docs").status_code == 200


def test_the_favicon_is_served(client, db):
    response = client.get("/favicon.ico", follow=True)
    assert response.status_code == 200 and b"<svg" in b"".join(response.streaming_content)
    page = client.get("/workbench/login/").content.decode()
    assert 'rel="icon" href="/static/workbench/favicon.svg"' in page
