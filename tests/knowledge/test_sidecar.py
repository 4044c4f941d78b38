"""Document properties and sidecar `.meta.yaml` files become the fields filters match: a PDF's
and a DOCX's own author, dates and title, a sidecar's fields over them, a note's frontmatter over
its sidecar; a changed or removed sidecar re-stores its document; a broken one only warns."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest
from django.db import connection
from fpdf import FPDF

from access.callers import scope_all
from core.config import get_config
from knowledge.ingest import IngestRequest, vault_ingest
from parsing.formats.base import pdf_date
from parsing.sidecar import SIDECAR_MAX_BYTES
from retrieval.filters import filters_parse
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.harness import config_changed
from tests.parsing.formats.files import docx_bytes

REPORT_TEXT = "Porphyry copper exploration report: drill holes, assay intervals and grades."


def report_pdf() -> bytes:
    pdf = FPDF()
    pdf.set_title("Exploration report 7")
    pdf.set_author("Li Wei")
    pdf.set_subject("Copper exploration")
    pdf.set_creation_date(dt.datetime(2019, 4, 2, 9, 30, tzinfo=dt.UTC))
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 5, REPORT_TEXT)
    return bytes(pdf.output())


def ingest(vault):
    return vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())


def stored(relative_path: str) -> tuple[dict, list[str], dict]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT frontmatter, tags, metadata FROM documents WHERE relative_path = %s",
                       [relative_path])
        frontmatter, tags, metadata = cursor.fetchone()
    return json.loads(frontmatter), tags, json.loads(metadata)


def found(filters: dict) -> set[str]:
    config = config_changed(get_config(), rag_retrieval="hybrid")
    outcome = search(RetrievalRequest(query="copper exploration report assay", scope=scope_all(),
                                      top_k=20, filters=filters_parse(filters)), config=config)
    return {hit.relative_path for hit in outcome.results}


@pytest.fixture
def vault(db, tmp_path):
    root = tmp_path / "vault"
    (root / "reports").mkdir(parents=True)
    (root / "reports" / "survey.pdf").write_bytes(report_pdf())
    (root / "reports" / "plan.docx").write_bytes(docx_bytes(
        [("heading", 1, "Drilling plan"), ("p", REPORT_TEXT)], title="Drilling plan 2021"))
    (root / "notes").mkdir()
    (root / "notes" / "field.md").write_text(
        "---\nregion: Sichuan\n---\n# Field note\n\n" + REPORT_TEXT + "\n")
    return root


def test_pdf_and_docx_properties_are_fields(vault):
    ingest(vault)
    frontmatter, _, _ = stored("reports/survey.pdf")
    assert {key: frontmatter[key] for key in ("title", "author", "subject", "created")} == {
        "title": "Exploration report 7", "author": "Li Wei", "subject": "Copper exploration",
        "created": "2019-04-02T09:30:00+00:00"}
    assert found({"frontmatter": {"author": "Li Wei"}}) == {"reports/survey.pdf"}
    assert found({"frontmatter": {"created": {"gte": "2019", "lt": "2020"}}}) == {
        "reports/survey.pdf"}
    assert found({"title": "drilling plan 2021"}) == {"reports/plan.docx"}
    docx_fields, _, _ = stored("reports/plan.docx")
    assert docx_fields["title"] == "Drilling plan 2021" and "author" in docx_fields


def test_a_sidecar_adds_fields_and_tags_and_changes_are_picked_up(vault):
    sidecar = vault / "reports" / "survey.pdf.meta.yaml"
    sidecar.write_text("region: Yunnan\nmineral: [copper, gold]\nyear: 2019\n"
                       "author: Survey team 3\ntags: [geology, '#drill-core']\n")
    first = ingest(vault)
    assert first.documents_added == 3 and not first.warnings
    frontmatter, tags, metadata = stored("reports/survey.pdf")
    # The sidecar's author wins over the PDF's own; the PDF's other properties stay.
    assert frontmatter["author"] == "Survey team 3" and frontmatter["subject"] == \
        "Copper exploration"
    assert tags == ["geology", "drill-core"] and metadata["sidecar"]["file"] == \
        "reports/survey.pdf.meta.yaml"
    assert found({"frontmatter": {"region": "Yunnan", "mineral": "gold"}}) == {
        "reports/survey.pdf"}
    assert found({"tags": ["Drill-Core"]}) == {"reports/survey.pdf"}
    # The sidecar is no document of its own.
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents WHERE relative_path LIKE '%%.yaml'")
        assert cursor.fetchone() == (0,)
    # Unchanged: nothing is stored again.
    assert ingest(vault).documents_updated == 0
    # A changed sidecar (the PDF untouched) stores its document again with the new fields.
    sidecar.write_text("region: Tibet\nyear: 2020\n")
    stat = sidecar.stat()
    os.utime(sidecar, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert ingest(vault).documents_updated == 1
    assert found({"frontmatter": {"region": "Tibet"}}) == {"reports/survey.pdf"}
    assert found({"frontmatter": {"region": "Yunnan"}}) == set()
    assert stored("reports/survey.pdf")[1] == []
    # Removed: the document keeps only its own properties.
    sidecar.unlink()
    assert ingest(vault).documents_updated == 1
    frontmatter, tags, metadata = stored("reports/survey.pdf")
    assert "region" not in frontmatter and frontmatter["author"] == "Li Wei"
    assert "sidecar" not in metadata


def test_a_notes_own_frontmatter_wins_over_its_sidecar(vault):
    (vault / "notes" / "field.md.meta.yaml").write_text("region: Gansu\nyear: 2018\n")
    ingest(vault)
    frontmatter, _, _ = stored("notes/field.md")
    assert frontmatter == {"region": "Sichuan", "year": 2018}


@pytest.mark.parametrize(("content", "warning"), [
    (b"region: [unclosed\n", "invalid YAML sidecar"),
    (b"- just\n- a list\n", "is not a mapping"),
    (b"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
     b"e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n", "more than 10000 values"),
    (b"region: \xff\xfe\n", "not valid UTF-8"),
    (b"region: x\n" + b"#" * SIDECAR_MAX_BYTES, "larger than"),
])
def test_a_broken_sidecar_only_warns(vault, content, warning):
    (vault / "reports" / "survey.pdf.meta.yaml").write_bytes(content)
    result = ingest(vault)
    assert result.documents_added == 3
    reasons = [entry["reason"] for entry in result.warnings
               if entry["file"] == "reports/survey.pdf.meta.yaml"]
    assert len(reasons) == 1 and warning in reasons[0]
    frontmatter, _, _ = stored("reports/survey.pdf")
    assert frontmatter["author"] == "Li Wei" and "region" not in frontmatter
    # Not read again until it changes: the next run stores nothing and warns nothing.
    again = ingest(vault)
    assert again.documents_updated == 0 and again.documents_skipped == 3


def test_a_symlinked_sidecar_is_not_followed(vault, tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text("region: Secret\n")
    (vault / "reports" / "survey.pdf.meta.yaml").symlink_to(outside)
    ingest(vault)
    assert "region" not in stored("reports/survey.pdf")[0]


@pytest.mark.parametrize(("value", "iso"), [
    ("D:20190402093000+08'00'", "2019-04-02T09:30:00+08:00"),
    ("D:20190402", "2019-04-02"), ("20190402093000Z", "2019-04-02T09:30:00+00:00"),
    ("D:2019", "2019-01-01"), ("D:20191340", None), ("yesterday", None), (None, None),
])
def test_pdf_dates(value, iso):
    assert pdf_date(value) == iso
