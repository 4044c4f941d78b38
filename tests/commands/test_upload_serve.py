"""Uploads end to end over a real socket: `rag serve` with its jobs worker, a token of a
maintainer, upload → 202 → job → searchable → delete → gone, and the same file twice."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
from django.contrib.auth import get_user_model

from access.api_tokens import token_create
from core.config import get_config
from knowledge.bases import kb_create, kb_list
from tests.commands.test_serve import serve  # noqa: F401 - the fixture
from tests.parsing.formats.files import pdf_bytes

QUERY = "cassiterite greisen tin"


def job_done(url: str, job_id: int, headers: dict) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/jobs/{job_id}", headers=headers, timeout=10).json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def test_upload_search_delete_over_http(clean_tables, serve):  # noqa: F811
    # Committed in-process (the server is another process): `rag kb create` and `rag token
    # create` have tests of their own, and each CLI run here would cost a Django start-up.
    base = kb_create(slug="tin", name="Tin project")
    # Files another test left in this base's folder (ids restart with every test) are not ours.
    folder = (get_config().upload_dir / f"kb-{base.id}").resolve()
    left_before = set(folder.iterdir()) if folder.is_dir() else set()
    get_user_model().objects.create_superuser("maint", "", "pw-unused-1x")
    headers = {"Authorization": f"Bearer {token_create(username='maint').secret}"}
    server = serve()
    uploads = None
    try:
        data = pdf_bytes(["Cassiterite greisen veins carry tin at 0.6 percent Sn. " * 8,
                          "Page two: access road and camp."])
        response = httpx.post(f"{server.url}/knowledge-bases/tin/documents", headers=headers,
                              files={"file": ("Greisen report.pdf", data, "application/pdf")},
                              timeout=30)
        assert response.status_code == 202, response.text
        upload = response.json()
        assert upload["created"] is True
        assert job_done(server.url, upload["job_id"], headers)["status"] == "succeeded"
        document = httpx.get(f"{server.url}/documents/{upload['document_id']}", headers=headers,
                             timeout=10).json()
        assert (document["status"], document["page_count"]) == ("active", 2)
        found = httpx.post(f"{server.url}/search", headers=headers, timeout=10,
                           json={"query": QUERY, "knowledge_bases": ["tin"]}).json()
        top = found["results"][0]
        assert (top["document_id"], top["knowledge_base"], top["page_start"]) == (
            upload["document_id"], "tin", 1)

        again = httpx.post(f"{server.url}/knowledge-bases/tin/documents", headers=headers,
                           files={"file": ("copy.pdf", data, "application/pdf")}, timeout=30)
        assert again.status_code == 200
        assert again.json()["document_id"] == upload["document_id"]

        without = httpx.post(f"{server.url}/knowledge-bases/tin/documents",
                             files={"file": ("x.txt", b"text", "text/plain")}, timeout=30)
        assert without.status_code == 401  # a token exists: every call needs one

        deleted = httpx.delete(f"{server.url}/documents/{upload['document_id']}",
                               headers=headers, timeout=10)
        assert deleted.status_code == 202
        assert job_done(server.url, deleted.json()["job_id"], headers)["status"] == "succeeded"
        assert httpx.get(f"{server.url}/documents/{upload['document_id']}", headers=headers,
                         timeout=10).status_code == 404
        gone = httpx.post(f"{server.url}/search", headers=headers, timeout=10,
                          json={"query": QUERY, "knowledge_bases": ["tin"]})
        assert gone.status_code in (200, 503)
        assert upload["document_id"] not in [result["document_id"]
                                             for result in gone.json().get("results", [])]
    finally:
        for base in kb_list(slugs=["tin"]):
            for source in base.sources:
                if source.kind == "uploads":
                    uploads = Path(source.path)
        if uploads is not None and uploads.name.startswith("kb-"):
            assert uploads == folder
            assert not [path for path in uploads.iterdir()
                        if not path.name.startswith(".") and path not in left_before]
            shutil.rmtree(uploads, ignore_errors=True)
