"""The admin shows what was indexed, read-only, without rendering vectors."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from knowledge.models import Chunk, Document, Embedding, IngestRun


@pytest.mark.parametrize("model", ["document", "chunk", "embedding", "ingestrun"])
def test_changelists_render_without_add_or_delete(admin_client, sample_index, model):
    response = admin_client.get(f"/admin/knowledge/{model}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f"/admin/knowledge/{model}/add/" not in html
    assert admin_client.get(f"/admin/knowledge/{model}/add/").status_code == 403


def test_chunk_page_links_to_its_document_and_search_finds_content(admin_client, sample_index):
    chunk = Chunk.objects.select_related("document").filter(
        relative_path="policies/Support Escalation Policy.md").first()
    page = admin_client.get(f"/admin/knowledge/chunk/{chunk.pk}/change/").content.decode()
    assert f"/admin/knowledge/document/{chunk.document_id}/change/" in page
    found = admin_client.get("/admin/knowledge/chunk/", {"q": "escalation"}).content.decode()
    assert "Support Escalation Policy.md" in found


def test_embedding_page_never_renders_the_vector(admin_client, sample_index):
    embedding = Embedding.objects.first()
    page = admin_client.get(f"/admin/knowledge/embedding/{embedding.pk}/change/").content.decode()
    assert "fake-lexical-v1" in page
    # Neither as a field of the form nor as text: the stored vector's digits never appear.
    assert re.search(r"field-embedding(?![_\w])", page) is None
    assert "field-embedding_provider" in page  # the form's fields carry such classes
    with connection.cursor() as cursor:
        cursor.execute("SELECT embedding::text FROM embeddings WHERE id = %s", [embedding.pk])
        stored = cursor.fetchone()[0]
    values = [value for value in stored.strip("[]").split(",") if value not in ("0", "-0")]
    assert len(values) > 3 and not any(value in page for value in values[:3])


def test_nothing_can_be_changed_or_deleted(admin_client, sample_index):
    document = Document.objects.first()
    response = admin_client.post(f"/admin/knowledge/document/{document.pk}/delete/",
                                 {"post": "yes"})
    assert response.status_code == 403
    assert Document.objects.filter(pk=document.pk).exists()
    run = IngestRun.objects.first()
    assert run.status == "success"
    page = admin_client.get(f"/admin/knowledge/ingestrun/{run.pk}/change/").content.decode()
    assert 'name="_save"' not in page and 'name="_continue"' not in page


def test_documents_show_format_pages_and_ocr_and_chunks_their_pages(admin_client, tmp_path):
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest
    from tests.parsing.formats.files import pdf_bytes

    vault = tmp_path / "vault"
    vault.mkdir()
    # A nearly empty cover shares its chunk with the page after it: a chunk of pages 1–2.
    (vault / "report.pdf").write_bytes(pdf_bytes(["Cover",
                                                  "Second page text. " * 30],
                                                 title="Quarterly Survey"))
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    with connection.cursor() as cursor:  # as an OCR run records it
        cursor.execute("UPDATE documents SET ocr_page_count = 2, metadata = metadata || "
                       "'{\"ocr_confidence\": 0.91, \"ocr_skipped_pages\": [3], "
                       "\"ocr_skipped_reason\": \"run_cap\"}'::jsonb")
    listing = admin_client.get("/admin/knowledge/document/").content.decode()
    assert "Quarterly Survey" in listing and ">pdf<" in listing
    assert "2 pages (confidence 0.91); 1 left out: run_cap" in listing
    assert admin_client.get("/admin/knowledge/document/", {"format": "pdf"}).status_code == 200
    chunks = admin_client.get("/admin/knowledge/chunk/").content.decode()
    assert re.search(r'class="field-pages">1–2<', chunks)
