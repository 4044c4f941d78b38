"""A vault's oversized files are skipped with a warning naming the limit; the rest is indexed."""

from __future__ import annotations

from pathlib import Path

from django.db import connection

from knowledge.ingest import IngestRequest, vault_ingest
from tests.parsing.formats.files import docx_bytes


def test_files_past_the_character_or_chunk_limit_are_skipped_and_the_rest_indexed(
        db, tmp_path: Path, config_override):
    config = config_override(rag_document_max_chars=3_000, rag_document_max_chunks=4)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ok.md").write_text("# Fine\n\nA short note.\n", encoding="utf-8")
    (vault / "long.md").write_text("# Long\n\n" + "word " * 1_000, encoding="utf-8")
    (vault / "sections.md").write_text(
        "".join(f"# Part {number}\n\nText {number}.\n\n" for number in range(6)), encoding="utf-8")
    (vault / "long.docx").write_bytes(docx_bytes([("p", "text " * 100)] * 10))
    result = vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=config)
    reasons = {warning["file"]: warning["reason"] for warning in result.warnings}
    assert "RAG_DOCUMENT_MAX_CHARS" in reasons["long.md"]
    assert "RAG_DOCUMENT_MAX_CHARS" in reasons["long.docx"]
    assert "RAG_DOCUMENT_MAX_CHUNKS" in reasons["sections.md"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT relative_path FROM documents ORDER BY 1")
        assert cursor.fetchall() == [("ok.md",)]


def test_files_past_the_paragraph_limit_are_skipped_naming_it(db, tmp_path: Path,
                                                              config_override):
    config = config_override(rag_document_max_paragraphs=50)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ok.md").write_text("# Fine\n\nA short note.\n", encoding="utf-8")
    (vault / "blocks.md").write_text("# Many\n\n" + "Line.\n\n" * 60, encoding="utf-8")
    (vault / "lines.txt").write_text("Line.\n\n" * 60, encoding="utf-8")
    (vault / "many.docx").write_bytes(docx_bytes([("p", "Short.")] * 60))
    result = vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=config)
    reasons = {warning["file"]: warning["reason"] for warning in result.warnings}
    for name in ("blocks.md", "lines.txt", "many.docx"):
        assert reasons[name].startswith("file holds more than 50 paragraphs "
                                        "(RAG_DOCUMENT_MAX_PARAGRAPHS)"), name
    with connection.cursor() as cursor:
        cursor.execute("SELECT relative_path FROM documents ORDER BY 1")
        assert cursor.fetchall() == [("ok.md",)]
