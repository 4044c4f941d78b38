"""Bounded work per file: text past RAG_DOCUMENT_MAX_CHARS or paragraphs past
RAG_DOCUMENT_MAX_PARAGRAPHS are refused while they are extracted, a DOCX body far larger than
that needs is refused unparsed, and a file that makes more than RAG_DOCUMENT_MAX_CHUNKS chunks
is not indexed — each a warning naming the limit."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from knowledge.preparing import PreparedNote, PrepareFailed, document_prepare
from parsing.formats import pdf, plain_text, word
from parsing.formats.base import ExtractOptions, FormatRejected
from tests.parsing.formats.files import docx_bytes, pdf_bytes

SMALL = ExtractOptions(max_chars=5_000, max_chunks=3)


def test_a_docx_past_the_character_limit_is_refused_naming_it():
    data = docx_bytes([("p", f"Paragraph {number}: " + "text " * 40) for number in range(100)])
    assert word.extract(data, name="ok.docx", options=ExtractOptions()).blocks
    with pytest.raises(FormatRejected, match=r"more than 5,000 characters.*RAG_DOCUMENT_MAX_CHARS"):
        word.extract(data, name="long.docx", options=SMALL)


def docx_with_body(body: bytes) -> bytes:
    """A DOCX whose word/document.xml is `body`, the rest as python-docx writes it."""
    source = zipfile.ZipFile(io.BytesIO(docx_bytes([("p", "x")])))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in source.infolist():
            content = body if entry.filename == "word/document.xml" else source.read(entry)
            archive.writestr(entry.filename, content)
    return packed.getvalue()


def paragraphs_body(paragraph: bytes, count: int) -> bytes:
    return (b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
            b'wordprocessingml/2006/main"><w:body>' + paragraph * count
            + b"</w:body></w:document>")


def test_a_docx_body_far_past_what_the_limit_needs_is_refused_before_parsing():
    # 20 MB of empty paragraphs deflate to a few kB: the shape of the 450 MB upload.
    data = docx_with_body(paragraphs_body(b"<w:p/>", 3_500_000))
    started = time.perf_counter()
    with pytest.raises(FormatRejected, match=r"word/document.xml\) unpacks to 21,000,\d+ bytes"):
        word.extract(data, name="bomb.docx", options=SMALL)
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


# ---- paragraphs ---------------------------------------------------------------------------


def test_a_docx_of_very_many_tiny_paragraphs_is_refused_unparsed_in_milliseconds():
    # 1.9 M one-letter paragraphs: within the character limit and the body-size limit (65 MB
    # of XML in a 224 kB upload), and minutes of python-docx work without a paragraph limit.
    data = docx_with_body(paragraphs_body(b"<w:p><w:r><w:t>x</w:t></w:r></w:p>", 1_900_000))
    started = time.perf_counter()
    with pytest.raises(FormatRejected, match=r"more than 200,000 paragraphs "
                                             r"\(RAG_DOCUMENT_MAX_PARAGRAPHS\)"):
        word.extract(data, name="tiny.docx", options=ExtractOptions())
    refused = time.perf_counter() - started
    assert refused < 2, f"refused after {refused:.2f} s"


def renamed_prefix(data: bytes) -> bytes:
    """The DOCX with Word's namespace prefix `w` renamed `x` in its body: the same document to
    an XML parser, but no `<w:p>` tag for a byte scan to find."""
    body = zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml")
    for old, new in ((b"<w:", b"<x:"), (b"</w:", b"</x:"), (b" w:", b" x:"),
                     (b"xmlns:w=", b"xmlns:x=")):
        body = body.replace(old, new)
    source = zipfile.ZipFile(io.BytesIO(data))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in source.infolist():
            content = body if entry.filename == "word/document.xml" else source.read(entry)
            archive.writestr(entry.filename, content)
    return packed.getvalue()


def test_docx_paragraphs_and_table_cells_are_counted_while_they_are_extracted():
    rows = [[f"r{row}c{column}" for column in range(3)] for row in range(20)]  # 60 cells
    data = docx_bytes([("heading", 1, "Assays"), *[("p", f"Note {n}.") for n in range(10)],
                       ("table", rows)])
    renamed = renamed_prefix(data)
    assert word.extract(renamed, name="a.docx", options=ExtractOptions()).blocks == (
        word.extract(data, name="a.docx", options=ExtractOptions()).blocks)
    # 11 paragraphs and a table of 60 one-paragraph cells: 71 in all.
    within, past = ExtractOptions(max_paragraphs=71), ExtractOptions(max_paragraphs=70)
    assert word.extract(renamed, name="a.docx", options=within).blocks
    with pytest.raises(FormatRejected, match="more than 70 paragraphs"):
        word.extract(renamed, name="a.docx", options=past)  # counted while extracted
    with pytest.raises(FormatRejected, match="more than 70 paragraphs"):
        word.extract(data, name="a.docx", options=past)  # counted in the body's bytes


def test_empty_docx_paragraphs_count_though_they_hold_no_text():
    data = renamed_prefix(docx_with_body(paragraphs_body(b"<w:p/>", 300_000)))
    started = time.perf_counter()
    with pytest.raises(FormatRejected, match="RAG_DOCUMENT_MAX_PARAGRAPHS"):
        word.extract(data, name="empty.docx", options=ExtractOptions())
    refused = time.perf_counter() - started
    # Parsed, then read up to the 200,001st paragraph at some µs each.
    assert refused < 20, f"refused after {refused:.2f} s"


def test_docx_text_reads_as_python_docx_reads_it():
    import docx

    document = docx.Document()
    paragraph = document.add_paragraph("Grade\t0.8 %")
    paragraph.add_run(" Sn").add_break()
    paragraph.add_run("next line")
    document.add_paragraph("Plain paragraph.")
    buffer = io.BytesIO()
    document.save(buffer)
    blocks = word.extract(buffer.getvalue(), name="t.docx", options=ExtractOptions()).blocks
    expected = "\n\n".join(item.text.strip() for item in docx.Document(
        io.BytesIO(buffer.getvalue())).paragraphs)
    assert [block.text for block in blocks] == [expected]
    assert "Grade\t0.8 % Sn\nnext line" in expected


def test_text_pdf_pages_and_notes_past_the_paragraph_limit_are_refused():
    options = ExtractOptions(max_paragraphs=100)
    assert plain_text.extract(("line\n\n" * 100).encode(), name="ok.txt", options=options)
    with pytest.raises(FormatRejected, match="more than 100 paragraphs"):
        plain_text.extract(("line\n\n" * 101).encode(), name="long.txt", options=options)
    # PDFium gives a page's lines without blank lines between paragraphs: one per page.
    pages = [f"Page {number} text." for number in range(4)]
    assert pdf.extract(pdf_bytes(pages), name="ok.pdf", options=ExtractOptions(max_paragraphs=4))
    with pytest.raises(FormatRejected, match="RAG_DOCUMENT_MAX_PARAGRAPHS"):
        pdf.extract(pdf_bytes(pages), name="long.pdf", options=ExtractOptions(max_paragraphs=3))
    # A note's blocks: plain paragraphs (read by the fast path), and list items and headings
    # (read by markdown-it).
    assert isinstance(document_prepare("para\n\n" * 100, "ok.md", options=options), PreparedNote)
    for note in ("para\n\n" * 101, "# List\n\n" + "- item\n" * 100):
        outcome = document_prepare(note, "many.md", options=options)
        assert isinstance(outcome, PrepareFailed)
        assert outcome.reason.startswith("file holds more than 100 paragraphs "
                                         "(RAG_DOCUMENT_MAX_PARAGRAPHS)")


def test_a_note_is_refused_at_the_limit_before_the_rest_is_parsed():
    note = "- item\n" * 20_000  # markdown-it's path, then sections and chunks
    started = time.perf_counter()
    outcome = document_prepare(note, "list.md", options=ExtractOptions(max_paragraphs=100))
    refused = time.perf_counter() - started
    assert isinstance(outcome, PrepareFailed) and "RAG_DOCUMENT_MAX_PARAGRAPHS" in outcome.reason
    started = time.perf_counter()
    assert isinstance(document_prepare(note, "list.md"), PreparedNote)
    parsed = time.perf_counter() - started
    # What is left is markdown-it's set-up over the whole text (its line table).
    assert refused * 4 < parsed, f"refused in {refused:.3f} s, parsed whole in {parsed:.3f} s"
