"""PDF extraction on real files: pages, outline headings, titles, limits and broken files."""

from __future__ import annotations

import pytest

from parsing.chunking import blocks_chunk
from parsing.formats import ocr, pdf
from parsing.formats.base import ExtractOptions, FormatRejected
from tests.parsing.formats.files import (
    encrypted_pdf_bytes,
    pdf_bytes,
    scanned_pdf_bytes,
)

NO_OCR = ExtractOptions(ocr=False)


def page_text(number: int, words: int = 60) -> str:
    return " ".join(f"page{number}word{index}" for index in range(words)) + "."


def test_pages_keep_their_numbers_and_the_metadata_title():
    data = pdf_bytes([page_text(1), "", page_text(3)], title="Survey Methods")
    extracted = pdf.extract(data, name="reports/survey.pdf", options=NO_OCR)
    assert extracted.title == "Survey Methods"
    assert extracted.page_count == 3
    assert extracted.facts["extractor"] == "pypdfium2" and extracted.facts["outline"] is False
    chunks = blocks_chunk(blocks=extracted.blocks)
    # A page with text of its own is its own chunk; the empty page 2 gives none.
    assert [(chunk.page_start, chunk.page_end) for chunk in chunks] == [(1, 1), (3, 3)]
    assert chunks[0].content.startswith("page1word0") and chunks[1].content.endswith(
        "page3word59.")
    assert chunks[0].heading_path == []


def test_nearly_empty_pages_share_a_chunk_whose_span_names_them_all():
    # A cover and a contents line are nearly empty: they share one chunk. Page 3 is short but
    # says something, so it keeps its own chunk and page, as page 4 does.
    pages = ["Cover: Survey 2024", "Contents: geology, drilling", page_text(3, words=10),
             page_text(4, words=80)]
    chunks = blocks_chunk(blocks=pdf.extract(pdf_bytes(pages), name="sparse.pdf",
                                             options=NO_OCR).blocks)
    assert [(chunk.page_start, chunk.page_end) for chunk in chunks] == [(1, 2), (3, 3), (4, 4)]


def test_without_a_metadata_title_the_file_name_is_the_title():
    extracted = pdf.extract(pdf_bytes([page_text(1)]), name="a/Drill Log 2024.pdf",
                            options=NO_OCR)
    assert extracted.title == "Drill Log 2024"


def test_full_pages_give_chunks_that_each_name_their_page():
    pages = [page_text(number, words=250) for number in range(1, 7)]
    extracted = pdf.extract(pdf_bytes(pages), name="long.pdf", options=NO_OCR)
    assert extracted.page_count == 6  # each page's words fit on its page
    chunks = blocks_chunk(blocks=extracted.blocks)
    assert len(chunks) > 3
    for chunk in chunks:
        found = {int(word[4:word.index("word")]) for word in chunk.content.split()
                 if word.startswith("page") and "word" in word}
        # The span is exactly the pages whose words the chunk holds: full pages are cut at
        # their page breaks, so every chunk names one page.
        assert (chunk.page_start, chunk.page_end) == (min(found), max(found))
        assert chunk.page_start == chunk.page_end
    assert {chunk.page_start for chunk in chunks} == {1, 2, 3, 4, 5, 6}


def test_outline_gives_nested_heading_paths_cut_where_the_title_is_printed():
    pages = [page_text(1), page_text(2), page_text(3), page_text(4)]
    outline = [(0, 0, "1 Deposit types"), (2, 0, "2 Sampling"), (2, 1, "2.1 Core splitting"),
               (3, 1, "2.2 Blanks")]
    extracted = pdf.extract(pdf_bytes(pages, outline=outline), name="o.pdf", options=NO_OCR)
    assert extracted.facts["outline"] is True
    spans = [(block.heading_path, block.pages[0][1]) for block in extracted.blocks]
    # "2 Sampling" and "2.1 Core splitting" start on the same page with nothing between them:
    # the deeper heading names the section.
    assert spans == [(("1 Deposit types",), 1),
                     (("2 Sampling", "2.1 Core splitting"), 3),
                     (("2 Sampling", "2.2 Blanks"), 4)]
    chunks = blocks_chunk(blocks=extracted.blocks)
    blanks = [chunk for chunk in chunks if chunk.heading_path[-1] == "2.2 Blanks"]
    assert blanks and all(chunk.page_start == 4 for chunk in blanks)
    assert blanks[0].content.startswith("2.2 Blanks")


def test_text_before_a_mid_page_heading_stays_with_the_section_before():
    # The second bookmark's title is printed in the middle of page 2.
    from fpdf import FPDF

    doc = FPDF()
    doc.set_font("Helvetica", size=11)
    doc.add_page()
    doc.start_section("Intro", level=0)
    doc.multi_cell(0, 7, "Intro", new_x="LMARGIN", new_y="NEXT")
    doc.multi_cell(0, 5, page_text(1), new_x="LMARGIN", new_y="NEXT")
    doc.add_page()
    doc.multi_cell(0, 5, "Closing words of the intro on page two.", new_x="LMARGIN",
                   new_y="NEXT")
    doc.start_section("Results", level=0)
    doc.multi_cell(0, 7, "Results", new_x="LMARGIN", new_y="NEXT")
    doc.multi_cell(0, 5, page_text(2), new_x="LMARGIN", new_y="NEXT")
    extracted = pdf.extract(bytes(doc.output()), name="m.pdf", options=NO_OCR)
    intro, results = extracted.blocks
    assert intro.heading_path == ("Intro",) and "Closing words" in intro.text
    assert intro.pages == ((0, 1), (intro.text.index("Closing"), 2))
    assert results.heading_path == ("Results",) and results.text.startswith("Results")
    assert results.pages == ((0, 2),)


def test_page_limit_indexes_the_first_pages_and_warns():
    data = pdf_bytes([page_text(number) for number in range(1, 6)])
    extracted = pdf.extract(data, name="big.pdf", options=ExtractOptions(pdf_max_pages=2,
                                                                          ocr=False))
    assert extracted.page_count == 5
    assert extracted.facts["pages_left_out"] == 3
    assert extracted.warnings == ["PDF has 5 pages; only the first 2 were indexed "
                                  "(RAG_PDF_MAX_PAGES)"]
    chunks = blocks_chunk(blocks=extracted.blocks)
    assert max(chunk.page_end for chunk in chunks) == 2
    assert "page3word0" not in " ".join(chunk.content for chunk in chunks)


def test_an_encrypted_pdf_is_refused_by_name():
    with pytest.raises(FormatRejected, match="encrypted with a password"):
        pdf.extract(encrypted_pdf_bytes(), name="secret.pdf", options=NO_OCR)


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_a_truncated_pdf_is_refused_with_both_readers_reasons(keep: float):
    data = pdf_bytes([page_text(1), page_text(2)])
    with pytest.raises(FormatRejected) as caught:
        pdf.extract(data[:int(len(data) * keep)], name="cut.pdf", options=NO_OCR)
    message = str(caught.value)
    assert "PDFium could not open it" in message and "pypdf could not read it" in message
    assert "damaged or truncated" in message


def test_not_a_pdf_at_all_is_refused():
    with pytest.raises(FormatRejected, match="damaged or truncated"):
        pdf.extract(b"%PDF-1.7\nthis is not a PDF body", name="fake.pdf", options=NO_OCR)


def test_a_file_pdfium_refuses_but_pypdf_reads_is_indexed_by_the_fallback(monkeypatch):
    import pypdfium2

    def refuse(*args, **kwargs):
        raise pypdfium2.PdfiumError("Failed to load document (PDFium: Data format error).")

    monkeypatch.setattr(pypdfium2, "PdfDocument", refuse)
    data = pdf_bytes([page_text(1), page_text(2)], title="Fallback",
                     outline=[(1, 0, "Second")])
    extracted = pdf.extract(data, name="f.pdf", options=NO_OCR)
    assert extracted.facts["extractor"] == "pypdf" and extracted.title == "Fallback"
    assert [(block.heading_path, block.pages[0][1]) for block in extracted.blocks] == [
        ((), 1), (("Second",), 2)]


def test_scanned_pages_without_ocr_are_left_out_with_one_warning_naming_them(monkeypatch):
    data = scanned_pdf_bytes([["Scanned page one"], ["Scanned page two"]])
    monkeypatch.setattr(ocr, "ocr_available", lambda: False)
    extracted = pdf.extract(data, name="scan.pdf", options=ExtractOptions())
    assert extracted.blocks == []
    assert extracted.facts["ocr_skipped_pages"] == [1, 2]
    assert extracted.facts["ocr_skipped_reason"] == "not_installed"
    assert len(extracted.warnings) == 1
    assert "scanned pages 1–2" in extracted.warnings[0]
    assert ocr.INSTALL_HINT in extracted.warnings[0]


def test_ocr_turned_off_says_so():
    data = scanned_pdf_bytes([["Scanned"]])
    extracted = pdf.extract(data, name="scan.pdf", options=NO_OCR)
    assert extracted.facts["ocr_skipped_reason"] == "disabled"
    assert extracted.warnings == ["scanned page 1 without a text layer not indexed: OCR is "
                                  "turned off (RAG_OCR=off)"]


def test_a_page_with_text_and_a_small_picture_is_not_a_scan():
    from fpdf import FPDF
    from PIL import Image

    doc = FPDF()
    doc.add_page()
    doc.image(Image.new("L", (50, 50), 128), x=10, y=10, w=20)
    extracted = pdf.extract(bytes(doc.output()), name="logo.pdf", options=ExtractOptions())
    assert "ocr_skipped_pages" not in extracted.facts and extracted.warnings == []


def test_running_headers_and_footers_are_dropped_but_headings_kept():
    pages = [f"Survey Report 2024\nChapter {number}\n" + "\n".join(
        f"Line {line} of part {'ABCDE'[number - 1]}." for line in range(8)) + f"\n- {number} -"
        for number in range(1, 6)]
    stripped = pdf.running_lines_strip(pages, headings=frozenset({"Chapter 3"}))
    assert stripped[0].splitlines()[0] == "Line 0 of part A."
    assert stripped[0].splitlines()[-1] == "Line 7 of part A."
    # "Chapter n" on page n looks like a running line, but page 3's is a bookmark title.
    assert stripped[2].splitlines()[0] == "Chapter 3"
    assert "Survey Report 2024" not in "\n".join(stripped)
    # Short pages or too few pages: nothing is taken for a running line.
    assert pdf.running_lines_strip(["A\nB", "A\nC"]) == ["A\nB", "A\nC"]


def test_pages_display_joins_runs():
    assert pdf.pages_display([7, 1, 2, 3, 9, 10]) == "1–3, 7, 9–10"
    assert pdf.pages_display([4]) == "4"
