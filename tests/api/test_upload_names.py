"""Uploads are known by the names people gave them: `source` in /search results, /ask
citations, MCP and traces, and what the workbench shows; the generated name the file is stored
under appears in none of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse

from tests.api.test_documents import upload, work
from tests.conversations.test_mcp import body_of, mcp_session
from tests.parsing.formats.files import docx_bytes, pdf_bytes

FIRST = "Ridge 9 drill cores carry wolframite veins with tungsten grades near 0.8 percent."
SECOND = "Ridge 9 camp logistics: wolframite samples leave by helicopter every tuesday."
QUERY = "Ridge 9 wolframite"


def post(client: Client, path: str, body: dict) -> tuple[dict, str]:
    response = client.post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return json.loads(response.content), response.content.decode()


def stored_stems() -> list[str]:
    """The generated names (without extension) the uploads' files are stored under."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT file_path FROM documents ORDER BY id")
        return [Path(path).stem for (path,) in cursor.fetchall()]


def uploaded(client: Client, name: str, data: bytes) -> int:
    response = upload(client, name, data)
    assert response.status_code == 202, response.content
    return json.loads(response.content)["document_id"]


@pytest.fixture
def two_reports(client, clean_tables, project) -> tuple[int, int]:
    """`report.pdf` uploaded twice with different content, built."""
    first = uploaded(client, "report.pdf", pdf_bytes([FIRST * 3]))
    second = uploaded(client, "report.pdf", pdf_bytes([SECOND * 3]))
    work()
    return first, second


def test_two_uploads_of_one_name_are_told_apart_by_their_source(client, two_reports):
    first, second = two_reports
    documents = [json.loads(client.get(f"/documents/{document_id}").content)
                 for document_id in two_reports]
    assert [(d["status"], d["relative_path"], d["title"], d["original_name"])
            for d in documents] == [("active", "report.pdf", "report", "report.pdf"),
                                    ("active", "report (2).pdf", "report (2)", "report.pdf")]
    stems = stored_stems()
    assert all(len(stem) == 32 for stem in stems)  # stored under generated names

    found, raw = post(client, "/search", {"query": QUERY, "top_k": 10})
    sources = {hit["document_id"]: (hit["source"], hit["relative_path"])
               for hit in found["results"]}
    assert sources == {first: ("report.pdf", "report.pdf"),
                       second: ("report (2).pdf", "report (2).pdf")}
    assert not any(stem in raw for stem in stems)

    answer, raw = post(client, "/ask", {"question": "What do the Ridge 9 wolframite veins carry?"})
    assert answer["mode"] == "rag"
    assert {citation["source"] for citation in answer["citations"]} <= {"report.pdf",
                                                                        "report (2).pdf"}
    assert "report.pdf" in {citation["source"] for citation in answer["citations"]}
    assert not any(stem in raw for stem in stems)

    # A trace records its citations' chunks, which carry the given names.
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, row_to_json(t)::text FROM traces t ORDER BY created_at")
        traces = cursor.fetchall()
        cursor.execute("SELECT DISTINCT c.relative_path FROM traces t, "
                       "jsonb_array_elements(t.citations) AS cited "
                       "JOIN chunks c ON c.id = (cited ->> 'chunk_id')::int8 "
                       "WHERE t.operation = 'ask'")
        cited = {path for (path,) in cursor.fetchall()}
    assert [operation for operation, _ in traces] == ["search", "ask"]
    assert cited == {citation["source"] for citation in answer["citations"]}
    assert not any(stem in row for _, row in traces for stem in stems)


def test_the_workbench_shows_the_given_names_only(client, two_reports):
    superuser = get_user_model().objects.create_superuser(username="root", password="pw")
    pages = Client(raise_request_exception=False)
    pages.force_login(superuser)
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id) FROM chunks WHERE document_id = %s", [two_reports[1]])
        (chunk_id,) = cursor.fetchone()
    source = pages.get(reverse("workbench:source", args=[chunk_id]))
    base = pages.get(reverse("workbench:knowledge-base", args=["field"]))
    post(client, "/ask", {"question": "What do the Ridge 9 wolframite veins carry?"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM traces WHERE operation = 'ask'")
        (trace_id,) = cursor.fetchone()
    trace = pages.get(reverse("workbench:trace", args=[trace_id]))
    assert source.status_code == base.status_code == trace.status_code == 200
    assert "report (2).pdf" in source.content.decode()
    assert "report (2).pdf" in base.content.decode() and "report.pdf" in base.content.decode()
    assert "report.pdf" in trace.content.decode()
    for page in (source, base, trace):
        assert not any(stem in page.content.decode() for stem in stored_stems())


def test_mcp_search_names_the_uploads_by_their_given_names(two_reports, tmp_path):
    _, (found, document) = mcp_session(
        [("search", {"query": QUERY, "top_k": 10}), ("get_document", {"id": two_reports[1]})],
        errlog=tmp_path / "stderr.txt")
    body, detail = body_of(found), body_of(document)
    assert {hit["source"] for hit in body["results"]} == {"report.pdf", "report (2).pdf"}
    assert detail["relative_path"] == "report (2).pdf"
    text = json.dumps([body, detail])
    assert not any(stem in text for stem in stored_stems())


def test_a_files_own_title_wins_over_its_name(client, clean_tables, project):
    pdf = uploaded(client, "scan-0041.pdf", pdf_bytes([FIRST], title="Ridge 9 assay summary"))
    word = uploaded(client, "notes.docx", docx_bytes([("p", SECOND)], title="Camp notes"))
    text = uploaded(client, "Field log.txt", b"Ridge 9 field log: wolframite found.\n")
    work()
    titles = [json.loads(client.get(f"/documents/{document_id}").content)["title"]
              for document_id in (pdf, word, text)]
    assert titles == ["Ridge 9 assay summary", "Camp notes", "Field log"]


def test_names_are_unique_ignoring_case_and_cleaned_of_paths(client, clean_tables, project):
    first = uploaded(client, "Report.PDF", pdf_bytes([FIRST]))
    second = uploaded(client, "reports/../report.pdf", pdf_bytes([SECOND]))
    third = uploaded(client, "..\\REPORT.pdf", pdf_bytes([FIRST + SECOND]))
    names = [json.loads(client.get(f"/documents/{document_id}").content)["relative_path"]
             for document_id in (first, second, third)]
    assert names == ["Report.PDF", "report (2).pdf", "REPORT (3).pdf"]


def test_the_same_content_again_keeps_its_document_and_name(client, clean_tables, project):
    data = pdf_bytes([FIRST])
    first = uploaded(client, "report.pdf", data)
    again = upload(client, "renamed.pdf", data)
    assert again.status_code == 200 and json.loads(again.content)["document_id"] == first
    assert json.loads(client.get(f"/documents/{first}").content)["relative_path"] == "report.pdf"


def test_reindex_keeps_the_name_and_a_deleted_name_is_free_again(client, two_reports):
    first, second = two_reports
    assert client.post(f"/documents/{second}/reindex", data=b"",
                       content_type="").status_code == 202
    work()
    found, _ = post(client, "/search", {"query": QUERY, "top_k": 10})
    assert {hit["source"] for hit in found["results"]} == {"report.pdf", "report (2).pdf"}

    assert client.delete(f"/documents/{first}").status_code == 202
    work()
    third = uploaded(client, "report.pdf", pdf_bytes([FIRST * 2]))
    work()
    found, _ = post(client, "/search", {"query": QUERY, "top_k": 10})
    assert {(hit["document_id"], hit["source"]) for hit in found["results"]} == {
        (second, "report (2).pdf"), (third, "report.pdf")}
