"""GET /knowledge-bases/{slug}/documents: a page of a base's documents, newest change first,
narrowed by status and format, with the total that matches and bounded pages."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from tests.api.http import error_of


def listing(client, query: str = "", slug: str = "default") -> dict:
    response = client.get(f"/knowledge-bases/{slug}/documents{query}")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def test_a_page_lists_the_bases_documents_newest_change_first(client, sample_index):
    page = listing(client)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM documents ORDER BY updated_at DESC, id DESC")
        ids = [row[0] for row in cursor.fetchall()]
    assert (page["knowledge_base"], page["total"], page["limit"], page["offset"]) == (
        "default", len(ids), 50, 0)
    assert [document["id"] for document in page["documents"]] == ids
    first = page["documents"][0]
    assert set(first) == {"id", "title", "format", "original_name", "relative_path", "status",
                          "page_count", "ocr_page_count", "size_bytes", "content_hash", "error",
                          "chunks", "uploaded", "created_at", "updated_at"}
    assert first["format"] == "markdown" and first["status"] == "active"
    assert first["chunks"] >= 1 and first["uploaded"] is False
    # The folder on the server is not the caller's business.
    assert "acme-vault" not in json.dumps(page)


def test_limit_and_offset_page_through_the_same_order(client, sample_index):
    whole = [document["id"] for document in listing(client)["documents"]]
    pages = [listing(client, f"?limit=3&offset={offset}") for offset in range(0, len(whole), 3)]
    assert [document["id"] for page in pages for document in page["documents"]] == whole
    assert {page["total"] for page in pages} == {len(whole)}
    past = listing(client, f"?offset={10**30}")
    assert past["documents"] == [] and past["total"] == len(whole)


@pytest.mark.parametrize("query", ["?limit=0", "?limit=201", "?offset=-1", "?status=gone",
                                   "?format=html", "?limit=many"])
def test_a_page_out_of_bounds_or_an_unknown_filter_is_422(client, sample_index, query):
    response = client.get(f"/knowledge-bases/default/documents{query}")
    assert response.status_code == 422
    assert error_of(response)["code"] == "invalid_request"


def test_status_and_format_narrow_the_page_and_its_total(client, sample_index,
                                                         config_override, tmp_path):
    config_override(project_root=tmp_path)
    uploaded = client.post("/knowledge-bases/default/documents",
                           {"file": SimpleUploadedFile("ridge.txt", b"Ridge 9 notes.")})
    document_id = json.loads(uploaded.content)["document_id"]
    queued = listing(client, "?status=queued")
    assert queued["total"] == 1
    [document] = queued["documents"]
    assert (document["id"], document["format"], document["original_name"], document["uploaded"],
            document["chunks"]) == (document_id, "txt", "ridge.txt", True, 0)
    assert listing(client, "?format=txt")["total"] == 1
    assert listing(client, "?format=txt&status=active")["total"] == 0
    markdown = listing(client, "?format=markdown&status=active")
    assert markdown["total"] == listing(client)["total"] - 1
    assert listing(client, "?format=pdf")["documents"] == []


def test_an_unknown_base_is_404(client, sample_index):
    response = client.get("/knowledge-bases/nowhere/documents")
    assert response.status_code == 404
    assert error_of(response) == {"code": "not_found",
                                  "message": "knowledge base not found: nowhere",
                                  "details": {"knowledge_base": "nowhere"}}
