"""knowledge/upload_names.py: the rule that makes a client's file name an upload's source name,
and `rag db init` naming the uploads stored before it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from knowledge.bases import kb_create
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.upload_names import NAME_MAX_CHARS, source_name_clean
from ops.db_init import db_init
from parsing.lexical import chunk_lexical_build
from tests.api.test_documents import upload, work
from tests.parsing.formats.files import pdf_bytes

ORE = "Ridge 9 drill cores carry wolframite veins with tungsten grades near 0.8 percent."
CAMP = "Ridge 9 camp logistics: wolframite samples leave by helicopter every tuesday."


@pytest.mark.parametrize("given, name", [
    ("report.pdf", "report.pdf"),
    ("../../etc/report.pdf", "report.pdf"),
    ("C:\\Users\\pat\\Report.PDF", "Report.PDF"),
    ("..hidden.pdf", "hidden.pdf"),
    ("re\x00port\x1b[31m\u202e.pdf", "report[31m.pdf"),
    ("  quarterly\t\n  figures .txt ", "quarterly figures.txt"),
    ("...pdf", "document.pdf"),
    (".pdf", "pdf"),  # no extension left: refused as a file of no known kind
    ("", ""),
    (None, ""),
])
def test_a_given_name_is_cleaned_of_paths_controls_and_leading_dots(given, name):
    assert source_name_clean(given) == name


def test_a_long_name_is_cut_before_its_extension():
    name = source_name_clean("x" * 500 + ".docx")
    assert len(name) == NAME_MAX_CHARS and name.endswith("x.docx")


def rows(query: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def test_db_init_names_uploads_stored_before_source_names(client, clean_tables, config_override,
                                                          tmp_path):
    config_override(project_root=tmp_path)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "report.pdf").write_bytes(pdf_bytes(["A vault copy of the report."]))
    kb_create(slug="field", name="Field reports", sources=[str(vault)])
    ids = [json.loads(upload(client, name, pdf_bytes([text * 3])).content)["document_id"]
           for name, text in (("report.pdf", ORE), ("Report.pdf", CAMP))]
    work()
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=config_override())
    # As uploads were stored before source names: known by their files' generated names,
    # titled after them, their lexical terms made from them.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE documents SET source_name = NULL, title = "
                       "regexp_replace(relative_path, '\\.pdf$', '') WHERE id = ANY(%s)", [ids])
        cursor.execute("UPDATE chunks c SET relative_path = d.relative_path FROM documents d "
                       "WHERE d.id = c.document_id AND d.id = ANY(%s)", [ids])
    for chunk_id, content, heading_path, path in rows(
            "SELECT id, content, heading_path, relative_path FROM chunks "
            "WHERE document_id = ANY(%s)", [ids]):
        old = chunk_lexical_build(content=content, heading_path=heading_path, relative_path=path)
        rows("UPDATE chunks SET lexical_terms = %s::tsvector, lexical_length = %s WHERE id = %s "
             "RETURNING id", [old.terms, old.length, chunk_id])
    stored = [Path(path).stem for (path,) in rows(
        "SELECT relative_path FROM documents WHERE id = ANY(%s) ORDER BY id", [ids])]
    hex_terms = ("SELECT count(*) FROM chunks c WHERE c.document_id = ANY(%s) "
                 "AND c.lexical_terms::text LIKE ANY(%s)")
    assert rows(hex_terms, [ids, [f"%{stem}%" for stem in stored]]) != [(0,)]

    call_command("db", "init")
    expected = [(ids[0], "report (2).pdf", "report (2)"), (ids[1], "Report (3).pdf", "Report (3)")]
    assert rows("SELECT id, source_name, title FROM documents WHERE id = ANY(%s) ORDER BY id",
                [ids]) == expected
    assert rows("SELECT DISTINCT c.document_id, c.relative_path, c.lexical_version FROM chunks c "
                "WHERE c.document_id = ANY(%s) ORDER BY 1", [ids]) == [
        (ids[0], "report (2).pdf", 3), (ids[1], "Report (3).pdf", 3)]
    assert rows(hex_terms, [ids, [f"%{stem}%" for stem in stored]]) == [(0,)]
    response = client.post("/search", json.dumps({"query": "Ridge 9 wolframite", "top_k": 10}),
                           content_type="application/json")
    body = response.content.decode()
    assert {hit["source"] for hit in json.loads(body)["results"]
            if hit["document_id"] in ids} == {"report (2).pdf", "Report (3).pdf"}
    assert not any(stem in body for stem in stored)

    db_init()  # again: nothing changes
    assert rows("SELECT id, source_name, title FROM documents WHERE id = ANY(%s) ORDER BY id",
                [ids]) == expected
    # A new upload of the name finds it taken four times (the vault's file is one).
    third = json.loads(upload(client, "REPORT.pdf", pdf_bytes([ORE + CAMP])).content)
    assert rows("SELECT source_name FROM documents WHERE id = %s", [third["document_id"]]) == [
        ("REPORT (4).pdf",)]


def test_uploads_are_kept_under_an_absolute_upload_dir(client, clean_tables, config_override,
                                                       tmp_path):
    share = tmp_path / "share"
    config_override(project_root=tmp_path / "project", upload_folder=share)
    base = kb_create(slug="field", name="Field reports")
    body = json.loads(upload(client, "report.pdf", pdf_bytes([ORE * 3])).content)
    work()
    stored = list(share.rglob("*.pdf"))
    assert [path.parent.name for path in stored] == [f"kb-{base.id}"]
    assert not (tmp_path / "project").exists()
    assert rows("SELECT status, source_name FROM documents WHERE id = %s",
                [body["document_id"]]) == [("active", "report.pdf")]
    assert rows("SELECT path FROM knowledge_base_sources WHERE kind = 'uploads'") == [
        (str(stored[0].parent),)]
