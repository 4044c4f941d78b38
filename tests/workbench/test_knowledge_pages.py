"""The knowledge pages: bases and their documents, uploads through the same service as the API
with the job's progress polled until the document is searchable, reindex and delete, and 404 or
403 for what a person may not see or change."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from access.models import Grant
from jobs.worker import Worker
from knowledge.bases import kb_create
from knowledge.models import Document
from tests.parsing.formats.files import pdf_bytes
from workbench.pages import knowledge as knowledge_pages

MARKER = "Wolframite veins at Ridge 9 carry tungsten trioxide grades near 0.8 percent."
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def project(clean_tables, config_override, tmp_path):
    """A project folder of its own for the upload areas, and a `field` knowledge base; the
    tables are emptied first because the worker's jobs need committed rows."""
    config = config_override(project_root=tmp_path)
    kb_create(slug="field", name="Field reports", description="Survey reports from the ridge")
    return config


@pytest.fixture
def maintainer(person, project):
    return person("mae", grants={"field": Grant.MAINTAINER})


def upload(client, name: str, data: bytes, *, slug: str = "field"):
    return client.post(f"/workbench/knowledge/{slug}/upload/",
                       {"file": SimpleUploadedFile(name, data)})


def work() -> None:
    """Run every due job to its end, as `rag worker` would."""
    Worker(poll_seconds=0.01).run(until_idle=True)


def job_id_of(html: str) -> int:
    return int(re.search(r'id="job-(\d+)"', html).group(1))


def documents_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents")
        return cursor.fetchone()[0]


def test_the_list_shows_the_persons_bases_with_counts_and_role(person, sample_index):
    kb_create(slug="secret", name="Secret base")
    client = person("lee", grants={"default": Grant.READER})
    html = client.get("/workbench/knowledge/").content.decode()
    row = re.search(r'<a href="/workbench/knowledge/default/">Default</a>.*?</tr>', html,
                    re.DOTALL).group(0)
    documents, chunks = (int(value) for value in re.findall(r'<td class="num">(\d+)</td>', row))
    assert documents == Document.objects.filter(knowledge_base__slug="default").count() > 0
    assert chunks > documents
    assert "<td>reader</td>" in row
    assert "secret" not in html.lower()


def test_a_base_page_lists_its_documents_for_a_reader_without_the_upload_form(reader,
                                                                              sample_index):
    response = reader.get("/workbench/knowledge/default/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Support Escalation Policy" in html
    assert html.count('<span class="status-ok">active</span>') == Document.objects.count()
    assert 'enctype="multipart/form-data"' not in html
    assert "Reindex" not in html and "Delete" not in html


HANDBOOK = """---
title: On-call handbook
tags: [oncall]
---
# Pager rotation

Hand the pager over every Monday at 09:00 with the open incidents written down.
"""


@pytest.fixture
def handbook(db, tmp_path):
    """A vault of one note whose frontmatter has a title, deep in folders, in `default`."""
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest

    note = tmp_path / "teams" / "platform" / "on-call" / "handbook.md"
    note.parent.mkdir(parents=True)
    note.write_text(HANDBOOK, encoding="utf-8")
    result = vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0),
                          config=get_config())
    assert result.status == "success", result
    return Document.objects.get(relative_path="teams/platform/on-call/handbook.md")


def test_documents_are_links_to_their_page_named_by_the_frontmatter_title(reader, handbook,
                                                                          sample_index):
    html = reader.get("/workbench/knowledge/default/").content.decode()
    row = re.search(rf'<tr id="document-{handbook.pk}">.*?</tr>', html, re.DOTALL).group(0)
    assert (f'<a class="document-link" href="/workbench/documents/{handbook.pk}/">'
            "On-call handbook</a>") in row
    assert "teams/<wbr>platform/<wbr>on-call/<wbr>handbook.md" in row
    # Without a title, the path is the name and the link.
    policy = Document.objects.get(relative_path="policies/Support Escalation Policy.md")
    assert (f'<a class="document-link" href="/workbench/documents/{policy.pk}/">'
            "policies/<wbr>Support Escalation Policy.md</a>") in html
    assert html.count('class="document-link"') == Document.objects.count()


def test_a_documents_page_shows_its_text_as_indexed(reader, handbook):
    response = reader.get(f"/workbench/documents/{handbook.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<title>On-call handbook · local-rag workbench</title>" in html
    assert "<h1>On-call handbook</h1>" in html
    assert "<code>teams/<wbr>platform/<wbr>on-call/<wbr>handbook.md</code>" in html
    text = re.search(r'<pre class="page-text document-text">(.*?)</pre>', html, re.DOTALL)
    assert "Hand the pager over every Monday at 09:00" in text.group(1)
    assert 'href="/workbench/knowledge/default/"' in html


def test_the_source_view_uses_the_frontmatter_title_too(reader, handbook):
    chunk = handbook.chunks.order_by("chunk_index").first()
    html = reader.get(f"/workbench/chunks/{chunk.pk}/").content.decode()
    assert "<h1>On-call handbook</h1>" in html


def test_another_bases_document_page_is_404_like_a_missing_one(person, handbook):
    kb_create(slug="secret", name="Secret base")
    outsider = person("oz", grants={"secret": Grant.READER})
    assert outsider.get(f"/workbench/documents/{handbook.pk}/").status_code == 404
    assert outsider.get("/workbench/documents/999999/").status_code == 404


def test_a_base_the_person_cannot_read_is_404_like_a_missing_one(reader, sample_index):
    kb_create(slug="secret", name="Secret base")
    assert reader.get("/workbench/knowledge/secret/").status_code == 404
    assert reader.get("/workbench/knowledge/nowhere/").status_code == 404


def test_a_long_document_list_is_paged(reader, sample_index, monkeypatch):
    monkeypatch.setattr(knowledge_pages, "DOCUMENTS_PER_PAGE", 3)
    total = Document.objects.count()
    first = reader.get("/workbench/knowledge/default/").content.decode()
    assert first.count('<tr id="document-') == 3
    assert f"3 documents a page, {total} in all" in first and 'href="?page=2"' in first
    last = reader.get("/workbench/knowledge/default/", {"page": 99}).content.decode()
    assert last.count('<tr id="document-') == total - 3 * ((total - 1) // 3)


def test_a_readers_upload_is_403_and_stores_nothing(person, project):
    client = person("rey", grants={"field": Grant.READER})
    response = upload(client, "survey.pdf", pdf_bytes([MARKER]))
    assert response.status_code == 403
    assert documents_count() == 0


def test_upload_is_polled_until_the_document_is_searchable(maintainer, person,
                                                           project):
    page = maintainer.get("/workbench/knowledge/field/").content.decode()
    assert 'enctype="multipart/form-data"' in page and 'name="csrfmiddlewaretoken"' in page
    response = upload(maintainer, "Ridge 9 survey.pdf", pdf_bytes([MARKER * 3, "Second page."]))
    html = response.content.decode()
    assert response.status_code == 202, html
    assert "Ridge 9 survey.pdf is uploaded as document" in html
    job_id = job_id_of(html)
    assert f'hx-get="/workbench/jobs/{job_id}/" hx-trigger="every 1s"' in html
    polling = maintainer.get(f"/workbench/jobs/{job_id}/", **HTMX).content.decode()
    assert "<html" not in polling and 'hx-trigger="every 1s"' in polling
    assert "queued" in polling

    work()

    done = maintainer.get(f"/workbench/jobs/{job_id}/", **HTMX).content.decode()
    assert "hx-trigger" not in done and "hx-get" not in done
    assert "The document is searchable now" in done
    page = maintainer.get(f"/workbench/jobs/{job_id}/").content.decode()
    assert "<html" in page and "<h1>Job #" in page
    assert f'href="/workbench/jobs/{job_id}/"' in page  # usable without JavaScript
    document = Document.objects.get()
    assert (document.status, document.format, document.page_count) == ("active", "pdf", 2)
    listing = maintainer.get("/workbench/knowledge/field/").content.decode()
    assert "Ridge 9 survey.pdf" in listing
    assert '<span class="status-ok">active</span>' in listing

    outsider = person("ola", grants={"default": Grant.READER})
    assert outsider.get(f"/workbench/jobs/{job_id}/").status_code == 404
    assert outsider.get("/workbench/jobs/999999/").status_code == 404


def test_the_same_file_again_is_already_there(maintainer, project):
    data = b"Camp logistics at 3,200 m: water, fuel and the radio schedule.\n"
    first = upload(maintainer, "camp.txt", data)
    assert first.status_code == 202
    again = upload(maintainer, "camp-copy.txt", data)
    assert again.status_code == 200
    assert "camp-copy.txt is already in this knowledge base" in again.content.decode()
    assert documents_count() == 1


@pytest.mark.parametrize("name, data, status, says", [
    ("report.pdf", b"not a pdf at all", 415, "report.pdf: the content is not a PDF"),
    ("image.png", b"\x89PNG", 415, "only .md, .pdf, .docx and .txt files can be uploaded"),
])
def test_a_file_of_the_wrong_kind_is_refused_with_the_services_reason(
        maintainer, project, name, data, status, says):
    response = upload(maintainer, name, data)
    assert response.status_code == status
    assert says in response.content.decode()
    assert documents_count() == 0


def test_an_oversized_file_is_413_with_the_limit(maintainer, project,
                                                 config_override):
    config_override(project_root=project.project_root, rag_document_max_mb=0.001)
    response = upload(maintainer, "big.txt", b"x" * 5000)
    assert response.status_code == 413
    assert "big.txt: larger than the 1,048-byte limit" in response.content.decode()


def test_a_post_without_a_file_says_so(maintainer, project):
    response = maintainer.post("/workbench/knowledge/field/upload/", {})
    assert response.status_code == 422
    assert "Choose a file to upload." in response.content.decode()


def test_an_uploaded_document_is_reindexed_then_deleted(maintainer, project):
    upload(maintainer, "survey.pdf", pdf_bytes([MARKER]))
    work()
    document = Document.objects.get()
    listing = maintainer.get("/workbench/knowledge/field/").content.decode()
    assert f'action="/workbench/documents/{document.id}/reindex/"' in listing
    assert f'action="/workbench/documents/{document.id}/delete/"' in listing

    reindexed = maintainer.post(f"/workbench/documents/{document.id}/reindex/")
    assert reindexed.status_code == 202
    assert "will be rebuilt" in reindexed.content.decode()
    work()
    job = maintainer.get(f"/workbench/jobs/{job_id_of(reindexed.content.decode())}/", **HTMX)
    assert "The document is searchable now" in job.content.decode()

    deleted = maintainer.post(f"/workbench/documents/{document.id}/delete/")
    assert deleted.status_code == 202
    assert "is out of search" in deleted.content.decode()
    work()
    job = maintainer.get(f"/workbench/jobs/{job_id_of(deleted.content.decode())}/", **HTMX)
    assert "The document is deleted." in job.content.decode()
    assert documents_count() == 0


def test_a_vault_document_cannot_be_deleted_here(person, sample_index):
    client = person("max", grants={"default": Grant.MAINTAINER})
    document = Document.objects.get(relative_path="policies/Support Escalation Policy.md")
    listing = client.get("/workbench/knowledge/default/").content.decode()
    assert f'action="/workbench/documents/{document.id}/reindex/"' in listing
    assert "/delete/" not in listing  # only uploads get a delete button
    response = client.post(f"/workbench/documents/{document.id}/delete/")
    assert response.status_code == 409
    assert "belongs to a vault folder" in response.content.decode()
    assert Document.objects.get(pk=document.id).status == "active"


def test_a_reader_may_not_change_documents_and_others_see_none(reader, person, sample_index):
    document = Document.objects.get(relative_path="policies/Support Escalation Policy.md")
    assert reader.post(f"/workbench/documents/{document.id}/reindex/").status_code == 403
    assert reader.post(f"/workbench/documents/{document.id}/delete/").status_code == 403
    stranger = person("sol")
    assert stranger.post(f"/workbench/documents/{document.id}/reindex/").status_code == 404
    assert stranger.post("/workbench/documents/999999/reindex/").status_code == 404


@pytest.mark.parametrize("slug", ["%00", "a%00b", "no%20such", "%C3%A9t%C3%A9"])
def test_a_path_that_is_no_slug_is_404(reader, sample_index, slug):
    assert reader.get(f"/workbench/knowledge/{slug}/").status_code == 404
    assert reader.post(f"/workbench/knowledge/{slug}/upload/").status_code == 404


@pytest.mark.parametrize("page", ["abc", "-1", "99999999999999999999"])
def test_a_page_that_is_not_a_page_number_shows_a_page_of_documents(reader, sample_index, page):
    response = reader.get("/workbench/knowledge/default/", {"page": page})
    assert response.status_code == 200 and '<tr id="document-' in response.content.decode()


def test_an_answers_source_card_names_an_upload_by_the_name_it_was_uploaded_under(maintainer,
                                                                                   project):
    response = upload(maintainer, "Ridge 9 survey.pdf", pdf_bytes([MARKER * 3]))
    assert response.status_code == 202
    work()
    stored = Document.objects.get()
    # Without a title of its own the document is titled after the name it was uploaded under,
    # never after the file the server named.
    assert (stored.source_name, stored.title) == ("Ridge 9 survey.pdf", "Ridge 9 survey")
    html = maintainer.post("/workbench/ask/", {"question": "Which grades do the Ridge 9 "
                                                            "wolframite veins carry?",
                                               "knowledge_base": "field"}).content.decode()
    title = re.search(r'id="source-1">.*?class="card-title"[^>]*>([^<]*)<', html, re.DOTALL)
    assert title is not None and title.group(1) == "Ridge 9 survey"
    assert stored.relative_path.removesuffix(".pdf") not in html


def test_an_upload_refused_in_the_chinese_interface_says_why_in_chinese(maintainer, project,
                                                                       config_override):
    config_override(project_root=project.project_root, rag_document_max_mb=0.001)
    response = maintainer.post("/workbench/knowledge/field/upload/",
                               {"file": SimpleUploadedFile("big.txt", b"x" * 5000)},
                               HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    html = response.content.decode()
    assert response.status_code == 413
    # What the code means in the page's language, then the server's own words naming the file.
    assert "请求过大。（big.txt: larger than the 1,048-byte limit" in html
    assert "The request is too large." not in html
