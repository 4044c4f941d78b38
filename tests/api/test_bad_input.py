"""Input no well-behaved client sends is refused with a 4xx and the unified error body, never a
500: control characters where a slug goes, a NUL in any text field of a request, NUL characters
anywhere else text reaches the database, multipart headers Django will not read."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.api.http import error_of, post

# Every text field of every JSON request, with a NUL in it (the ids in the paths need not
# exist: the body is refused before anything is looked up).
NUL_FIELDS = [
    ("post", "/search", {"query": "export\u0000limits"}, "query"),
    ("post", "/ask", {"question": "export\u0000limits"}, "question"),
    ("post", "/ask/stream", {"question": "\u0000"}, "question"),
    ("post", "/conversations", {"question": "export\u0000limits"}, "question"),
    ("post", "/conversations", {"title": "Export\u0000"}, "title"),
    ("patch", "/conversations/1", {"title": "Export\u0000"}, "title"),
    ("post", "/conversations/1/messages", {"question": "export\u0000limits"}, "question"),
    ("post", "/conversations/1/messages/stream", {"question": "\u0000"}, "question"),
    ("post", "/messages/1/feedback", {"rating": "down", "comment": "wrong\u0000"}, "comment"),
    ("post", "/knowledge-bases", {"slug": "field\u0000"}, "slug"),
    ("post", "/knowledge-bases", {"slug": "field", "name": "Field\u0000"}, "name"),
    ("post", "/knowledge-bases", {"slug": "field", "description": "\u0000"}, "description"),
    ("patch", "/knowledge-bases/default", {"name": "\u0000"}, "name"),
    ("patch", "/knowledge-bases/default", {"description": "Ridge\u0000"}, "description"),
]


@pytest.mark.parametrize("path", ["/search", "/ask"])
@pytest.mark.parametrize("slug", ["de\u0000fault", "\u0000", "de\u0007fault", "line\nbreak"])
def test_a_slug_with_control_characters_is_422_invalid_request(client, sample_index, path, slug):
    field = "query" if path == "/search" else "question"
    response = post(client, path, {field: "export limits", "knowledge_bases": [slug]})
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert "knowledge_bases" in error["message"] and "control characters" in error["message"]


@pytest.mark.parametrize(("method", "path", "body", "field"), NUL_FIELDS)
def test_a_nul_in_any_text_field_is_422_naming_the_field(client, sample_index, method, path,
                                                         body, field):
    response = getattr(client, method)(path, data=body, content_type="application/json")
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert [problem["field"] for problem in error["details"]["errors"]] == [field]


@pytest.mark.parametrize(("path", "field"), [("/documents/abc", "document_id"),
                                             ("/conversations?limit=many", "limit")])
def test_a_parameter_of_the_wrong_type_is_422_naming_it(client, sample_index, path, field):
    response = client.get(path)
    assert response.status_code == 422
    assert [problem["field"] for problem in error_of(response)["details"]["errors"]] == [field]


def test_an_upload_without_its_file_is_422_naming_the_field(client, sample_index):
    response = client.post("/knowledge-bases/default/documents", {"note": "no file here"})
    assert response.status_code == 422
    assert [problem["field"] for problem in error_of(response)["details"]["errors"]] == ["file"]


def test_a_nul_in_a_path_slug_is_refused_before_the_database(client, sample_index):
    response = client.post("/knowledge-bases/de%00fault/documents",
                           {"file": SimpleUploadedFile("a.txt", b"Some text.")})
    assert response.status_code == 422
    assert error_of(response)["details"] == {"reason": "nul_character"}


def test_an_upload_whose_part_headers_are_too_long_is_400_bad_request(client, sample_index):
    # Written by hand: Django's test client would cut the file name to 255 characters.
    name = "x" * 1000 + ".txt"
    body = (f"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            "Content-Type: text/plain\r\n\r\nSome text.\r\n--b--\r\n").encode()
    response = client.post("/knowledge-bases/default/documents", body,
                           content_type="multipart/form-data; boundary=b")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "bad_request" and "multipart body could not be read" in error["message"]


# A lone UTF-16 surrogate, in a value or in a key, anywhere in a JSON body: json.dumps writes
# it as the escape "\ud800", which is valid JSON but no Unicode text.
SURROGATE_FIELDS = [
    ("/search", {"query": "export\ud800limits"}, "query"),
    ("/search", {"query": "export", "filters": {"frontmatter": {"re\ud800gion": "west"}}},
     "a key of filters.frontmatter"),
    ("/search", {"query": "export", "filters": {"frontmatter": {"region": ["w", "\udc00"]}}},
     "filters.frontmatter.region[1]"),
    ("/ask", {"question": "export", "filters": {"frontmatter": {"\ud800": 1}}},
     "a key of filters.frontmatter"),
    ("/ask/stream", {"question": "\ud800"}, "question"),
    ("/conversations", {"question": "export", "filters": {"frontmatter": {"k\ud800": "v"}}},
     "a key of filters.frontmatter"),
    ("/conversations/1/messages", {"question": "export\udfff"}, "question"),
    ("/knowledge-bases", {"slug": "field", "name": "Field\ud800"}, "name"),
]


@pytest.mark.parametrize(("path", "body", "field"), SURROGATE_FIELDS)
def test_a_lone_surrogate_anywhere_in_a_body_is_422_naming_the_field(client, sample_index, path,
                                                                     body, field):
    from conversations.models import Conversation

    before = Conversation.objects.count()
    response = post(client, path, body)
    assert response.status_code == 422, response.content
    error = error_of(response)
    assert (error["code"], error["details"]) == ("invalid_request",
                                                 {"field": field, "reason": "lone_surrogate"})
    assert "\ud800" not in error["message"] and field in error["message"]
    assert Conversation.objects.count() == before  # a refused question starts nothing


def test_a_lone_surrogate_in_a_chat_completion_is_400_naming_the_param(client, sample_index):
    response = post(client, "/v1/chat/completions", {
        "model": "default", "messages": [{"role": "user", "content": "limits\ud800"}]})
    assert response.status_code == 400, response.content
    error = json.loads(response.content)["error"]
    assert (error["code"], error["param"]) == ("invalid_request", "messages[0].content")


def test_a_database_lost_under_an_orm_read_is_503_not_500(client, sample_index, monkeypatch):
    # What a read not wrapped in db_errors_translated raises when the server restarts under it.
    import psycopg
    from django.db import OperationalError

    from conversations import services

    def lost(**kwargs):
        try:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        except psycopg.OperationalError as cause:
            raise OperationalError("server closed the connection unexpectedly") from cause

    monkeypatch.setattr(services, "conversation_get", lost)
    response = client.get("/conversations/1")
    assert response.status_code == 503
    assert error_of(response)["code"] == "database_unavailable"
