"""PDF, DOCX and TXT files in the vault scan, ingested into the real database: the same
incremental sync, failure isolation and scan rules as notes, with pages stored per chunk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connection

from core.config import get_config
from knowledge import preparing
from knowledge.ingest import IngestRequest, vault_ingest
from parsing.formats import ocr
from parsing.vault import vault_scan
from tests.knowledge.test_ingest import write
from tests.parsing.formats.files import (
    docx_bytes,
    encrypted_pdf_bytes,
    pdf_bytes,
    scanned_pdf_bytes,
)

pytestmark = pytest.mark.django_db

needs_ocr = pytest.mark.skipif(not ocr.ocr_available(),
                               reason=f"the OCR extra is not installed ({ocr.INSTALL_HINT})")


def rows(query: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def ingest(path: Path, config=None, **kwargs):
    return vault_ingest(IngestRequest(vault_path=path, prepare_workers=0, **kwargs),
                        config=config or get_config())


def survey_pdf(extra: str = "") -> bytes:
    return pdf_bytes([
        "Porphyry copper deposits form above intrusions. " * 20,
        "Soil sampling grid 50 by 50 metres; anomaly threshold Cu 120 ppm. " * 15 + extra,
        "Drill hole ZK-1042 intersected 1.32 percent Cu over 48 m. " * 15,
    ], title="Survey Report 2024", outline=[(0, 0, "1 Geology"), (1, 0, "2 Geochemistry"),
                                            (2, 0, "3 Drilling")])


@pytest.fixture
def mixed_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "index.md", "# Index\n\nSee the survey report and the assay table.\n")
    write(root, "reports/survey.pdf", survey_pdf())
    write(root, "reports/assays.docx", docx_bytes([
        ("heading", 1, "Assays"), ("p", "Assay results by hole."),
        ("caption", "Table 1 Grades"),
        ("table", [["Hole", "Cu (%)"], ["ZK-1042", "1.32"], ["ZK-1043", "0.87"]])]))
    write(root, "field/notes.txt",
          "野外记录：斑岩型铜矿蚀变分带清楚。\n\n第二段。\n".encode("gb18030"))
    return root


def test_every_format_is_indexed_with_its_facts_and_pages(mixed_vault: Path):
    result = ingest(mixed_vault)
    assert (result.status, result.documents_added, result.files_rejected) == ("success", 4, 0)
    documents = rows("SELECT relative_path, format, title, page_count, ocr_page_count, "
                     "metadata ->> 'outline' FROM documents ORDER BY 1")
    assert documents == [
        ("field/notes.txt", "txt", "notes", None, 0, None),
        ("index.md", "markdown", None, None, 0, None),
        ("reports/assays.docx", "docx", "assays", None, 0, None),
        ("reports/survey.pdf", "pdf", "Survey Report 2024", 3, 0, "true"),
    ]
    pdf_chunks = rows("SELECT heading_path, page_start, page_end FROM chunks "
                      "WHERE relative_path = 'reports/survey.pdf' ORDER BY chunk_index")
    assert pdf_chunks == [(["1 Geology"], 1, 1), (["2 Geochemistry"], 2, 2),
                          (["3 Drilling"], 3, 3)]
    others = rows("SELECT count(*) FROM chunks WHERE relative_path <> 'reports/survey.pdf' "
                  "AND (page_start IS NOT NULL OR page_end IS NOT NULL)")
    assert others == [(0,)]
    table = rows("SELECT content FROM chunks WHERE relative_path = 'reports/assays.docx' "
                 "AND content LIKE 'Table 1%%'")
    assert table == [("Table 1 Grades\n\n| Hole | Cu (%) |\n| --- | --- |\n| ZK-1042 | 1.32 |\n"
                      "| ZK-1043 | 0.87 |",)]
    # Every chunk has a vector and lexical terms, like a note's.
    assert rows("SELECT count(*) FROM chunks c LEFT JOIN embeddings e ON e.chunk_id = c.id "
                "WHERE e.id IS NULL OR c.lexical_terms IS NULL") == [(0,)]
    assert rows("SELECT content FROM chunks WHERE relative_path = 'field/notes.txt'") == [
        ("野外记录：斑岩型铜矿蚀变分带清楚。\n\n第二段。",)]


def test_unchanged_documents_are_skipped_changed_rebuilt_and_removed_deleted(mixed_vault: Path):
    ingest(mixed_vault)
    before = rows("SELECT id FROM chunks WHERE relative_path = 'reports/assays.docx'")
    again = ingest(mixed_vault)
    assert (again.documents_skipped, again.chunks_written) == (4, 0)
    write(mixed_vault, "reports/survey.pdf", survey_pdf(extra="New cut-off grade 0.3 percent."))
    (mixed_vault / "field/notes.txt").unlink()
    changed = ingest(mixed_vault)
    assert (changed.documents_updated, changed.documents_deleted,
            changed.documents_skipped) == (1, 1, 2)
    assert rows("SELECT count(*) FROM chunks WHERE content LIKE '%%cut-off grade 0.3%%' "
                "AND page_start = 2") == [(1,)]
    assert rows("SELECT count(*) FROM documents WHERE relative_path = 'field/notes.txt'") == [
        (0,)]
    assert rows("SELECT id FROM chunks WHERE relative_path = 'reports/assays.docx'") == before


def test_broken_files_are_warnings_naming_them_and_the_rest_is_indexed(mixed_vault: Path,
                                                                      config_override):
    good = survey_pdf()
    write(mixed_vault, "bad/truncated.pdf", good[:len(good) // 2])
    write(mixed_vault, "bad/secret.pdf", encrypted_pdf_bytes())
    write(mixed_vault, "bad/not-word.docx", b"PK\x03\x04 broken")
    write(mixed_vault, "bad/binary.txt", b"\x81\x30\x81")
    write(mixed_vault, "bad/huge.pdf", good + b"\n%" + b"x" * 2_000_000)
    config = config_override(rag_document_max_mb=1.5)
    result = ingest(mixed_vault, config=config)
    assert result.status == "success" and result.documents_added == 4
    assert result.files_rejected == 5
    reasons = {warning["file"]: warning["reason"] for warning in result.warnings}
    assert "damaged or truncated" in reasons["bad/truncated.pdf"]
    assert "encrypted with a password" in reasons["bad/secret.pdf"]
    assert "not a valid DOCX file" in reasons["bad/not-word.docx"]
    assert "neither UTF-8 nor GB18030" in reasons["bad/binary.txt"]
    assert reasons["bad/huge.pdf"] == ("file is larger than the 1,572,864-byte limit "
                                       "(RAG_DOCUMENT_MAX_MB)")
    assert rows("SELECT count(*) FROM documents WHERE relative_path LIKE 'bad/%%'") == [(0,)]


def test_hidden_folders_and_symlinks_follow_the_note_rules(tmp_path: Path):
    root = tmp_path / "vault"
    outside = tmp_path / "outside.pdf"
    outside.write_bytes(pdf_bytes(["Outside the vault."]))
    write(root, "kept.pdf", pdf_bytes(["Kept."]))
    write(root, ".trash/old.pdf", pdf_bytes(["Trashed."]))
    write(root, ".hidden.docx", docx_bytes([("p", "Hidden.")]))
    os.symlink(outside, root / "escape.pdf")
    write(root, "image.png", b"\x89PNG not indexed")
    scan = vault_scan(root=root)
    assert [note.relative_path for note in scan.notes] == ["kept.pdf"]
    assert ("escape.pdf", "symlink points outside the vault; not indexed") in scan.warnings


def test_upper_case_extensions_are_documents_too(tmp_path: Path):
    root = tmp_path / "vault"
    write(root, "SCAN.PDF", pdf_bytes(["Upper case extension text."]))
    write(root, "Notes.TXT", b"Plain text.")
    result = ingest(root)
    assert result.documents_added == 2
    assert rows("SELECT relative_path, format FROM documents ORDER BY 1") == [
        ("Notes.TXT", "txt"), ("SCAN.PDF", "pdf")]


def test_scans_left_out_without_ocr_are_read_once_ocr_is_on(tmp_path: Path, config_override,
                                                           monkeypatch):
    root = tmp_path / "vault"
    write(root, "scan.pdf", scanned_pdf_bytes([["Hole ZK-2001 core log"]]))
    monkeypatch.setattr(ocr, "ocr_available", lambda: False)
    first = ingest(root)
    assert first.documents_added == 1
    assert [warning["file"] for warning in first.warnings] == ["scan.pdf"]
    assert ocr.INSTALL_HINT in first.warnings[0]["reason"]
    assert rows("SELECT metadata ->> 'ocr_skipped_pages', metadata ->> 'ocr_skipped_reason', "
                "(SELECT count(*) FROM chunks) FROM documents") == [("[1]", "not_installed", 0)]
    # Still no OCR: the unchanged file is skipped, not read again.
    assert ingest(root).documents_skipped == 1
    monkeypatch.undo()
    if not ocr.ocr_available():
        pytest.skip(f"the OCR extra is not installed ({ocr.INSTALL_HINT})")
    now = ingest(root)
    assert (now.documents_updated, now.ocr_pages) == (1, 1)
    (content, marked), = rows("SELECT content, metadata ->> 'ocr' FROM chunks")
    assert "ZK-2001" in content and marked == "true"
    assert rows("SELECT ocr_page_count, metadata ? 'ocr_skipped_pages' FROM documents") == [
        (1, False)]


@needs_ocr
def test_the_ocr_budget_is_shared_by_the_worker_processes(tmp_path: Path, config_override,
                                                         monkeypatch):
    root = tmp_path / "vault"
    for index in range(3):
        write(root, f"scan-{index}.pdf", scanned_pdf_bytes([[f"Scanned report {index}"]]))
    monkeypatch.setattr(preparing, "SERIAL_FIRST", 0)  # every file goes to the workers
    config = config_override(rag_ocr_max_pages=2)
    first = vault_ingest(IngestRequest(vault_path=root, prepare_workers=2), config=config)
    assert (first.documents_added, first.ocr_pages) == (3, 2)
    left = rows("SELECT relative_path FROM documents "
                "WHERE metadata ->> 'ocr_skipped_reason' = 'run_cap'")
    assert len(left) == 1
    assert sum("RAG_OCR_MAX_PAGES" in warning["reason"] for warning in first.warnings) == 1
    # The next run goes on with the page left out and skips the two that are done.
    second = vault_ingest(IngestRequest(vault_path=root, prepare_workers=2), config=config)
    assert (second.documents_updated, second.documents_skipped, second.ocr_pages) == (1, 2, 1)
    assert rows("SELECT sum(ocr_page_count) FROM documents") == [(3,)]


def test_an_ingest_of_only_some_files_reads_and_changes_nothing_else(mixed_vault: Path):
    ingest(mixed_vault)
    write(mixed_vault, "index.md", "# Index\n\nChanged, but not asked for.\n")
    (mixed_vault / "field/notes.txt").unlink()
    write(mixed_vault, "reports/assays.docx", docx_bytes([("p", "Rewritten assays.")]))
    result = ingest(mixed_vault, only=frozenset({"reports/assays.docx"}))
    assert (result.files_seen, result.documents_updated, result.documents_deleted) == (1, 1, 0)
    assert rows("SELECT count(*) FROM documents") == [(4,)]
    assert rows("SELECT content FROM chunks WHERE relative_path = 'index.md'") == [
        ("# Index\n\nSee the survey report and the assay table.",)]
    # A listed file that is gone is deleted, as a whole run would; the others stay.
    (mixed_vault / "reports/assays.docx").unlink()
    assert ingest(mixed_vault, only=frozenset({"reports/assays.docx"})).documents_deleted == 1
    assert rows("SELECT count(*) FROM documents") == [(3,)]
