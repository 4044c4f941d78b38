"""The terminal rendering shared by `rag search` and `rag ask`: the page label and source lines."""

from __future__ import annotations

import pytest

from core.output import citation_line, page_span_label


@pytest.mark.parametrize(("page_start", "page_end", "label"), [
    (12, 12, "p. 12"),
    (12, None, "p. 12"),
    (12, 13, "p. 12\u201313"),
    (1, 120, "p. 1\u2013120"),
    (None, None, ""),
])
def test_page_span_label(page_start, page_end, label):
    assert page_span_label(page_start=page_start, page_end=page_end) == label


def test_a_range_is_joined_by_an_en_dash_not_a_hyphen():
    label = page_span_label(page_start=3, page_end=4)
    assert label == "p. 3–4" and "-" not in label


def test_citation_line_names_the_pages_after_the_heading():
    item = {"source": "manuals/Guide.pdf", "heading": "Install", "score": 0.81234,
            "page_start": 12, "page_end": 13}
    assert citation_line(2, item) == "[2] manuals/Guide.pdf › Install, p. 12–13 (0.8123)"
    one_page = {**item, "page_end": 12}
    assert citation_line(2, one_page) == "[2] manuals/Guide.pdf › Install, p. 12 (0.8123)"


def test_citation_line_without_heading_puts_the_pages_after_the_source():
    item = {"source": "scan.pdf", "heading": "", "score": 0.5, "page_start": 3, "page_end": 3}
    assert citation_line(1, item) == "[1] scan.pdf, p. 3 (0.5000)"


def test_citation_line_of_a_note_is_unchanged():
    item = {"source": "a.md", "heading": "Setup", "score": 0.5, "page_start": None,
            "page_end": None}
    assert citation_line(1, item) == "[1] a.md › Setup (0.5000)"
    assert citation_line(1, {"source": "a.md", "heading": "", "score": 0.5}) == "[1] a.md (0.5000)"
