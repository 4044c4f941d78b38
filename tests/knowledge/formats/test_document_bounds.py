"""Bounded work per file: text past RAG_DOCUMENT_MAX_CHARS is refused while it is extracted,
a DOCX body far larger than that needs is refused unparsed, and a file that makes more than
RAG_DOCUMENT_MAX_CHUNKS chunks is not indexed — each a warning naming the limit."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from knowledge.formats import pdf, plain_text, word
from knowledge.formats.base import ExtractOptions, FormatRejected
from knowledge.preparing import PreparedNote, PrepareFailed, document_prepare
from tests.knowledge.formats.files import docx_bytes, pdf_bytes

SMALL = ExtractOptions(max_chars=5_000, max_chunks=3)


def test_a_docx_past_the_character_limit_is_refused_naming_it():
    data = docx_bytes([("p", f"Paragraph {number}: " + "text " * 40) for number in range(100)])
    assert word.extract(data, name="ok.docx", options=ExtractOptions()).blocks
    with pytest.raises(FormatRejected, match=r"more than 5,000 characters.*RAG_DOCUMENT_MAX_CHARS"):
        word.extract(data, name="long.docx", options=SMALL)


def test_a_docx_body_far_past_what_the_limit_needs_is_refused_before_parsing():
    # 20 MB of empty paragraphs deflate to a few kB: the shape of the 450 MB upload.
    body = (b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
            b'wordprocessingml/2006/main"><w:body>' + b"<w:p/>" * 3_500_000
            + b"</w:body></w:document>")
    source = zipfile.ZipFile(io.BytesIO(docx_bytes([("p", "x")])))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in source.infolist():
            content = body if entry.filename == "word/document.xml" else source.read(entry)
            archive.writestr(entry.filename, content)
    started = time.perf_counter()
    with pytest.raises(FormatRejected, match=r"word/document.xml\) unpacks to 21,000,\d+ bytes"):
        word.extract(packed.getvalue(), name="bomb.docx", options=SMALL)
    assert time.perf_counter() - started < 5  # refused unparsed: milliseconds


def test_a_pdf_and_a_text_file_past_the_limit_are_refused():
    pages = ["Page text " * 100 for _ in range(8)]  # 8,000 characters
    assert pdf.extract(pdf_bytes(pages), name="ok.pdf", options=ExtractOptions()).blocks
    with pytest.raises(FormatRejected, match="RAG_DOCUMENT_MAX_CHARS"):
        pdf.extract(pdf_bytes(pages), name="long.pdf", options=SMALL)
    with pytest.raises(FormatRejected, match="RAG_DOCUMENT_MAX_CHARS"):
        plain_text.extract(("line of text\n" * 500).encode(), name="long.txt", options=SMALL)


def test_a_note_past_the_limit_fails_without_being_parsed():
    outcome = document_prepare("# Note\n\n" + "word " * 2_000, "long.md", options=SMALL)
    assert isinstance(outcome, PrepareFailed)
    assert "more than 5,000 characters" in outcome.reason


def test_a_file_of_more_chunks_than_the_limit_is_not_indexed():
    note = "".join(f"# Section {number}\n\nBody of section {number}.\n\n" for number in range(5))
    assert isinstance(document_prepare(note, "ok.md"), PreparedNote)
    outcome = document_prepare(note, "many.md", options=SMALL)
    assert isinstance(outcome, PrepareFailed)
    assert outcome.reason.startswith("file makes 5 chunks, more than the 3 of "
                                     "RAG_DOCUMENT_MAX_CHUNKS")
    data = docx_bytes([part for number in range(5)
                       for part in (("heading", 1, f"Part {number}"), ("p", f"Text {number}."))])
    refused = document_prepare(data, "many.docx", options=SMALL)
    assert isinstance(refused, PrepareFailed) and "RAG_DOCUMENT_MAX_CHUNKS" in refused.reason
