"""The admin shows what was indexed, read-only, without rendering vectors."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from knowledge.models import Chunk, Document, Embedding, IngestRun


@pytest.fixture
def admin_client(db) -> Client:
    user = get_user_model().objects.create_superuser(username="root", email="", password="pw")
    client = Client()
    client.force_login(user)
    return client


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
    response = admin_client.post(f"/admin/knowledge/document/{document.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert Document.objects.filter(pk=document.pk).exists()
    run = IngestRun.objects.first()
    assert run.status == "success"
    page = admin_client.get(f"/admin/knowledge/ingestrun/{run.pk}/change/").content.decode()
    assert 'name="_save"' not in page and 'name="_continue"' not in page
