"""Tasks are made where ingest stores a version: one per OCR page below the threshold, one per
ruled table, none twice for the same version, and a new version closes the old one's."""

from __future__ import annotations

import json

import pytest

from tests.knowledge.test_ingest import write
from tests.review.conftest import (
    SCAN_LINES,
    TABLE_MARKER,
    ingest,
    needs_ocr,
    rows,
    table_pdf,
)

pytestmark = pytest.mark.django_db


def test_a_ruled_table_becomes_one_task_with_its_rows_and_flagged_cells(review_vault):
    (kind, page, table_index, cells, flags, text, status), = rows(
        "SELECT kind, page, table_index, rows, flags, extracted_text, status FROM review_tasks")
    cells, flags = json.loads(cells), json.loads(flags)
    assert (kind, page, table_index, status) == ("table", 1, 0, "open")
    assert cells == [["Sample", "Mass", "Length"], ["S-1", "12 kg", "3.5 mm"],
                     ["S-2", "220 V", "45%"]]
    assert [(flag["row"], flag["column"], flag["text"]) for flag in flags] == [
        (1, 1, "12 kg"), (1, 2, "3.5 mm"), (2, 1, "220 V"), (2, 2, "45%")]
    assert TABLE_MARKER in text


def test_an_unchanged_file_ingested_again_adds_no_task(review_vault):
    root, config = review_vault
    assert ingest(root, config).documents_skipped == 1
    assert rows("SELECT count(*) FROM review_tasks") == [(1,)]


def test_a_changed_file_supersedes_the_open_tasks_of_its_old_version(review_vault):
    root, config = review_vault
    write(root, "table.pdf", table_pdf() + b"\n% changed\n")
    assert ingest(root, config).documents_updated == 1
    assert rows("SELECT t.status, t.document_version_id = d.active_version_id FROM review_tasks t "
                "JOIN documents d ON d.id = t.document_id ORDER BY t.id") == [
        ("superseded", False), ("open", True)]


def test_a_pdf_without_a_table_or_scan_makes_no_task(tmp_path, config_override):
    from knowledge.bases import kb_create
    from tests.parsing.formats.files import pdf_bytes

    kb_create(slug="field", name="Field reports")
    write(tmp_path, "plain.pdf", pdf_bytes(["Plain text with 12 kg of samples."]))
    ingest(tmp_path, config_override(rag_ocr_review_confidence=1.0))
    assert rows("SELECT count(*) FROM review_tasks") == [(0,)]


@needs_ocr
def test_a_scanned_page_below_the_threshold_becomes_a_task_with_its_text(scan_vault):
    (kind, page, text, confidence, flags), = rows(
        "SELECT kind, page, extracted_text, confidence, flags FROM review_tasks")
    assert (kind, page) == ("ocr_page", 1)
    assert "ZK-7731" in text and 0 < confidence < 1
    assert [flag["text"] for flag in json.loads(flags)] == ["42 m"]
    assert SCAN_LINES[1].split()[0] in text


@needs_ocr
def test_a_scanned_page_above_the_threshold_makes_no_task(tmp_path, config_override):
    from knowledge.bases import kb_create
    from tests.parsing.formats.files import scanned_pdf_bytes

    kb_create(slug="field", name="Field reports")
    write(tmp_path, "scan.pdf", scanned_pdf_bytes([SCAN_LINES]))
    result = ingest(tmp_path, config_override(rag_ocr_review_confidence=0.0))
    assert result.ocr_pages == 1
    assert rows("SELECT count(*) FROM review_tasks") == [(0,)]


def test_reviewed_page_text_is_refused_for_a_whole_vault(tmp_path, config_override):
    from core.errors import InvalidRequest
    from knowledge.ingest import IngestRequest, vault_ingest

    with pytest.raises(InvalidRequest, match="one document"):
        vault_ingest(IngestRequest(vault_path=tmp_path, page_texts=((1, "text"),)),
                     config=config_override())
