"""Documents through the API, in process with a real worker: upload → job → searchable →
delete → gone; the same content twice is one document; bad uploads are refused by name."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from access.api_tokens import token_create
from jobs.worker import Worker
from tests.api.http import error_of
from tests.parsing.formats.files import docx_bytes, pdf_bytes

MARKER = "Wolframite veins at Ridge 9 carry tungsten trioxide grades near 0.8 percent."


def upload(client: Client, name: str, data: bytes, *, slug: str = "field", **headers):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(f"/knowledge-bases/{slug}/documents",
                       {"file": SimpleUploadedFile(name, data)}, **headers)


def work() -> None:
    """Run every due job to its end, as `rag worker` would."""
    Worker(poll_seconds=0.01).run(until_idle=True)


def search(client: Client, query: str) -> dict:
    """The /search body; a base with nothing searchable left answers retrieval_not_ready."""
    response = client.post("/search", json.dumps({"query": query}),
                           content_type="application/json")
    body = json.loads(response.content)
    if response.status_code == 503 and body["error"]["code"] == "retrieval_not_ready":
        return {"results": []}
    return body


def test_upload_is_queued_built_searchable_and_deleted(client, clean_tables, project):
    response = upload(client, "Ridge 9 survey.pdf", pdf_bytes([MARKER * 3, "Second page."]))
    assert response.status_code == 202, response.content
    body = json.loads(response.content)
    assert body["created"] is True and body["job_id"]
    document = json.loads(client.get(f"/documents/{body['document_id']}").content)
    assert document["status"] == "queued" and document["original_name"] == "Ridge 9 survey.pdf"
    # Known by the client's name; the file is stored under a generated one, never the client's.
    assert document["relative_path"] == "Ridge 9 survey.pdf"
    with connection.cursor() as cursor:
        cursor.execute("SELECT file_path FROM documents WHERE id = %s", [body["document_id"]])
        (stored,) = cursor.fetchone()
    assert stored.endswith(".pdf") and "Ridge" not in stored
    work()
    job = json.loads(client.get(f"/jobs/{body['job_id']}").content)
    assert job["status"] == "succeeded" and job["result"]["chunks"] >= 1
    document = json.loads(client.get(f"/documents/{body['document_id']}").content)
    assert (document["status"], document["format"], document["page_count"]) == ("active", "pdf", 2)
    assert document["versions"][0]["status"] == "active"
    assert document["active_version_id"] == document["versions"][0]["id"]
    assert document["last_job"]["id"] == body["job_id"]
    found = search(client, "wolframite tungsten Ridge 9")
    assert found["results"][0]["document_id"] == body["document_id"]
    assert found["results"][0]["knowledge_base"] == "field"

    deleted = client.delete(f"/documents/{body['document_id']}")
    assert deleted.status_code == 202
    # Out of search at once, before the job has run.
    assert all(result["document_id"] != body["document_id"]
               for result in search(client, "wolframite tungsten Ridge 9")["results"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT file_path FROM documents WHERE id = %s", [body["document_id"]])
        (path,) = cursor.fetchone()
    work()
    assert client.get(f"/documents/{body['document_id']}").status_code == 404
    import os

    assert not os.path.exists(path)


def test_the_same_content_twice_is_one_document(client, clean_tables, project):
    data = docx_bytes([("heading", 1, "Camp"), ("p", "Camp logistics at 3,200 m.")])
    first = json.loads(upload(client, "camp.docx", data).content)
    second = upload(client, "camp-copy.docx", data)
    assert second.status_code == 200
    assert json.loads(second.content) == {"document_id": first["document_id"],
                                          "job_id": first["job_id"], "created": False}
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents")
        assert cursor.fetchone() == (1,)


@pytest.mark.parametrize("name, data, status, code", [
    ("report.pdf", b"not a pdf at all", 415, "unsupported_media_type"),
    ("notes.docx", b"PK\x03\x04 broken", 415, "unsupported_media_type"),
    ("binary.txt", b"\x00\x01\x02", 415, "unsupported_media_type"),
    ("image.png", b"\x89PNG", 415, "unsupported_media_type"),
])
def test_bad_uploads_are_refused_by_name(client, clean_tables, project, name, data, status,
                                         code):
    response = upload(client, name, data)
    assert response.status_code == status
    assert error_of(response)["code"] == code
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents")
        assert cursor.fetchone() == (0,)
    assert not [path for path in (project.project_root / ".local" / "uploads").rglob("*")
                if path.is_file()]


def test_an_upload_over_the_limit_is_413(client, clean_tables, project, config_override):
    config_override(project_root=project.project_root, rag_document_max_mb=0.001)
    response = upload(client, "big.txt", b"x" * 5000)
    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"


class ReadCounting(io.BytesIO):
    """A request body that records how much of it was read."""

    bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.bytes_read += len(data)
        return data

    def readline(self, size: int | None = -1) -> bytes:
        data = super().readline(size)
        self.bytes_read += len(data)
        return data


def test_an_upload_declared_past_the_limit_is_413_before_its_body_is_read(client, clean_tables,
                                                                           project,
                                                                           config_override):
    config = config_override(project_root=project.project_root, rag_document_max_mb=0.001)
    limit = config.rag_document_max_bytes + 64 * 1024
    body = encode_multipart(BOUNDARY, {"file": SimpleUploadedFile("big.txt", b"x" * limit)})
    assert len(body) > limit
    stream = ReadCounting(body)
    response = client.post("/knowledge-bases/field/documents", content_type=MULTIPART_CONTENT,
                           CONTENT_LENGTH=str(len(body)), **{"wsgi.input": stream})
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "payload_too_large"
    assert f"larger than the {limit:,}-byte limit (RAG_DOCUMENT_MAX_MB)" in error["message"]
    assert stream.bytes_read == 0
    # Refused before the upload service ran: not even the base's upload area was made.
    assert not (project.project_root / ".local" / "uploads").exists()


def test_a_cross_site_upload_is_refused(client, clean_tables, project):
    response = upload(client, "a.txt", b"text", HTTP_ORIGIN="http://evil.example")
    assert response.status_code == 403 and error_of(response)["code"] == "forbidden"


def test_a_broken_file_fails_its_job_and_says_why(client, clean_tables, project):
    body = json.loads(upload(client, "cut.pdf", pdf_bytes(["Text. " * 50])[:400]).content)
    work()
    job = json.loads(client.get(f"/jobs/{body['job_id']}").content)
    assert job["status"] == "failed" and "damaged or truncated" in job["error"]
    document = json.loads(client.get(f"/documents/{body['document_id']}").content)
    assert document["status"] == "failed" and "damaged or truncated" in document["error"]


def test_roles_readers_cannot_upload_or_delete_and_others_see_nothing(client, clean_tables,
                                                                     project):
    from django.contrib.auth import get_user_model

    from access.models import Grant
    from knowledge.models import KnowledgeBase

    users = get_user_model()
    reader = users.objects.create_user("rita")
    users.objects.create_user("sam")
    Grant.objects.create(user=reader, knowledge_base=KnowledgeBase.objects.get(slug="field"),
                         role="reader")
    admin = token_create(username=users.objects.create_superuser("root").username).secret
    reader_token = token_create(username="rita").secret
    stranger_token = token_create(username="sam").secret
    as_admin = {"HTTP_AUTHORIZATION": f"Bearer {admin}"}
    body = json.loads(upload(client, "a.txt", b"Assay notes.", **as_admin).content)
    work()

    refused = upload(client, "b.txt", b"More notes.", HTTP_AUTHORIZATION=f"Bearer {reader_token}")
    assert refused.status_code == 403 and error_of(refused)["code"] == "forbidden"
    assert client.delete(f"/documents/{body['document_id']}",
                         HTTP_AUTHORIZATION=f"Bearer {reader_token}").status_code == 403
    assert client.get(f"/documents/{body['document_id']}",
                      HTTP_AUTHORIZATION=f"Bearer {reader_token}").status_code == 200
    # A caller without a grant: the base, the document and the job do not exist for it.
    hidden = {"HTTP_AUTHORIZATION": f"Bearer {stranger_token}"}
    missing = upload(client, "c.txt", b"x", **hidden)
    absent = upload(client, "c.txt", b"x", slug="no-such-base", **hidden)
    assert missing.status_code == absent.status_code == 404
    assert error_of(missing)["message"].replace("field", "X") == \
        error_of(absent)["message"].replace("no-such-base", "X")
    assert client.get(f"/documents/{body['document_id']}", **hidden).status_code == 404
    assert client.get(f"/jobs/{body['job_id']}", **hidden).status_code == 404
    bases = json.loads(client.get("/knowledge-bases", **hidden).content)
    assert bases == []
    mine = json.loads(client.get("/knowledge-bases",
                                 HTTP_AUTHORIZATION=f"Bearer {reader_token}").content)
    assert [(base["slug"], base["role"], base["documents"]) for base in mine] == [
        ("field", "reader", 1)]


def test_vault_documents_are_not_deleted_through_the_api(client, clean_tables,
                                                         sample_vault_ingested):
    response = client.delete(f"/documents/{sample_vault_ingested}")
    assert response.status_code == 409 and error_of(response)["code"] == "conflict"


@pytest.fixture
def sample_vault_ingested(tmp_path) -> int:
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest

    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "a.md").write_text("# A\n\nBody.\n")
    vault_ingest(IngestRequest(vault_path=tmp_path / "v", prepare_workers=0), config=get_config())
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM documents")
        return cursor.fetchone()[0]


def test_an_ingest_that_read_the_document_before_its_delete_does_not_bring_it_back(
        client, clean_tables, project):
    """The delete lands between an ingest's read of the states and its write: the write
    leaves the `deleting` document alone (no status flip, no chunks)."""
    from core.config import get_config
    from embeddings import get_embedder
    from knowledge import store
    from knowledge.preparing import chunk_texts, document_prepare

    body = json.loads(upload(client, "a.txt", MARKER.encode()).content)
    work()
    with connection.cursor() as cursor:
        cursor.execute("SELECT vault_path, relative_path, file_path, content_hash FROM documents")
        vault, relative, file_path, digest = cursor.fetchone()
    prepared = document_prepare(open(file_path, "rb").read(), relative)
    assert client.delete(f"/documents/{body['document_id']}").status_code == 202
    embedder = get_embedder(config=get_config())
    store.documents_write(
        vault_path=vault, embedder=embedder,
        versions=[store.DocumentVersion(relative_path=relative, file_path=file_path,
                                        content_hash=digest, mtime_ns=0, size_bytes=1,
                                        frontmatter={}, tags=[], chunks=prepared.chunks,
                                        format="txt")],
        vectors=embedder.embed_documents(chunk_texts(chunks=prepared.chunks,
                                                     relative_path=relative, tags=[])))
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, (SELECT count(*) FROM chunks) FROM documents")
        assert cursor.fetchone() == ("deleting", 0)
    work()
    assert client.get(f"/documents/{body['document_id']}").status_code == 404


def test_a_failure_after_the_file_is_stored_leaves_no_file_and_no_document(
        client, clean_tables, project, monkeypatch):
    from knowledge import documents

    def broken(*args, **kwargs):
        raise RuntimeError("the queue is down")

    monkeypatch.setattr(documents, "job_enqueue", broken)
    response = upload(client, "a.txt", b"Some text.")
    assert response.status_code == 500
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents")
        assert cursor.fetchone() == (0,)
    assert not [path for path in (project.project_root / ".local" / "uploads").rglob("*")
                if path.is_file()]


def test_the_same_file_after_a_failed_build_is_tried_again(client, clean_tables, project):
    data = pdf_bytes(["Text. " * 50])[:400]
    first = json.loads(upload(client, "cut.pdf", data).content)
    work()
    again = json.loads(upload(client, "cut.pdf", data).content)
    assert again["document_id"] == first["document_id"] and again["created"] is False
    assert again["job_id"] != first["job_id"]
    document = json.loads(client.get(f"/documents/{first['document_id']}").content)
    assert document["status"] == "queued"


def test_a_body_less_post_is_still_415_outside_reindex(client, db):
    for path in ("/search", "/ask", "/ask/stream"):
        response = client.generic("POST", path, b"")
        assert response.status_code == 415, path
        assert error_of(response)["code"] == "unsupported_media_type"


def test_a_request_forwarded_by_a_proxy_is_never_a_local_caller(client, db):
    # No token issued: loopback callers are the operator, but not through a reverse proxy.
    forwarded = client.post("/search", json.dumps({"query": "x"}),
                            content_type="application/json",
                            HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert forwarded.status_code == 401
