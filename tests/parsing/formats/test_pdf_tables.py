"""Ruled tables in PDFs: found from the lines drawn on a page, with their rows; pages without
lines are never handed to pdfplumber."""

from __future__ import annotations

import sys

from parsing.formats import pdf, pdf_tables
from parsing.formats.base import ExtractOptions
from parsing.formats.pdf_tables import table_markdown, tables_find
from tests.parsing.formats.files import pdf_bytes, ruled_table_pdf_bytes

ROWS = [["Hole", "Depth", "Grade"], ["ZK-1", "42 m", "1.3%"], ["ZK-2", "57 m", "0.9%"]]


def test_a_ruled_table_is_found_with_its_rows_and_box():
    extracted = pdf.extract(ruled_table_pdf_bytes(ROWS, before="Drill log."), name="t.pdf",
                            options=ExtractOptions())
    (table,) = extracted.tables
    assert (table.page, table.index) == (1, 0)
    assert [list(row) for row in table.rows] == ROWS
    x0, top, x1, bottom = table.bbox
    assert x0 < x1 and top < bottom
    assert "Drill log." in extracted.page_texts[1]


def test_a_page_without_lines_is_not_read_for_tables(monkeypatch):
    asked = []
    monkeypatch.setattr(pdf.pdf_tables, "tables_find",
                        lambda data, pages: (asked.append(pages), ([], []))[1])
    extracted = pdf.extract(pdf_bytes(["Hole ZK-1 at 42 m."]), name="p.pdf",
                            options=ExtractOptions())
    assert asked == [[]] and extracted.tables == [] and extracted.page_texts == {}


def test_tables_find_reads_nothing_for_no_pages():
    sys.modules.pop("pdfplumber", None)
    assert tables_find(b"not a pdf", pages=[]) == ([], [])
    assert "pdfplumber" not in sys.modules


def test_reviewed_page_text_replaces_the_page():
    data = pdf_bytes(["First page text.", "Misread page."])
    extracted = pdf.extract(data, name="p.pdf", options=ExtractOptions(
        page_texts=((2, "Corrected page."),)))
    text = "\n".join(block.text for block in extracted.blocks)
    assert "Corrected page." in text and "Misread" not in text


def test_table_markdown_has_a_header_row():
    assert table_markdown((("A", "B"), ("1 | 2", "3"))) == (
        "| A | B |\n| --- | --- |\n| 1 \\| 2 | 3 |")


def test_a_page_with_too_many_lines_is_not_searched_and_says_so(monkeypatch):
    monkeypatch.setattr(pdf_tables, "PAGE_EDGES_MAX", 5)  # the table draws more boxes than 5
    found, warnings = tables_find(ruled_table_pdf_bytes(ROWS), pages=[1])
    assert found == []
    assert len(warnings) == 1 and "page 1 draws" in warnings[0]
    assert "its tables were not searched" in warnings[0]


def test_the_search_stops_at_its_time_limit_and_names_the_first_page_left(monkeypatch):
    table_on_page_2 = ruled_table_pdf_bytes(ROWS, pages_before=["Drill log, summary."])
    assert [table.page for table in tables_find(table_on_page_2, pages=[1, 2])[0]] == [2]
    clock = iter([0.0, 0.0, 100.0])  # started, before page 1, before page 2
    monkeypatch.setattr(pdf_tables.time, "monotonic", lambda: next(clock))
    found, warnings = tables_find(table_on_page_2, pages=[1, 2])
    assert found == []
    assert warnings == [f"tables were searched for {pdf_tables.SECONDS_MAX:.0f} s; pages from "
                        "2 on were not searched"]
