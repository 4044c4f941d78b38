"""OCR of scanned pages: identifiers joined back, the per-run page budget, and real recognition
with rapidocr when the `ocr` extra is installed (skipped with the reason otherwise)."""

from __future__ import annotations

import multiprocessing

import pytest

from parsing.chunking import blocks_chunk
from parsing.formats import ocr, pdf
from parsing.formats.base import ExtractOptions
from tests.parsing.formats.files import pdf_bytes, scanned_pdf_bytes

needs_ocr = pytest.mark.skipif(not ocr.ocr_available(),
                               reason=f"the OCR extra is not installed ({ocr.INSTALL_HINT})")


@pytest.mark.parametrize("text, joined", [
    ("E R R - 1 0 4 2", "ERR-1042"),
    ("code E R R - 1 0 4 2 again", "code ERR-1042 again"),
    ("钻孔 Z K - 1 0 4 2 见矿", "钻孔 ZK-1042 见矿"),
    ("S N 2 0 2 4 / 0 7", "SN2024/07"),
    ("ERR-1042 stays", "ERR-1042 stays"),
    ("1 2 3 4 5", "1 2 3 4 5"),  # numbers alone stay apart
    ("A B C D", "A B C D"),  # letters alone stay apart
    ("I am a cat", "I am a cat"),
    ("x 1", "x 1"),
])
def test_spaced_identifiers_are_joined(text: str, joined: str):
    assert ocr.identifiers_join(text) == joined


@pytest.fixture
def budget():
    value = multiprocessing.get_context("spawn").Value("i", 2)
    ocr.budget_use(value)
    yield value
    ocr.budget_use(None)


def test_the_budget_is_taken_page_by_page_until_spent(budget):
    assert [ocr.page_take() for _ in range(4)] == [True, True, False, False]
    assert budget.value == 0


def test_without_a_budget_every_page_may_be_taken():
    ocr.budget_use(None)
    assert all(ocr.page_take() for _ in range(1000))


@needs_ocr
def test_a_scanned_pdf_is_recognised_with_pages_and_confidence():
    data = scanned_pdf_bytes([["Drill log for hole ZK-1042", "Copper grade 1.32 percent"],
                              ["Error code E R R - 7 7 1 means the core jammed"]])
    extracted = pdf.extract(data, name="scan.pdf", options=ExtractOptions())
    assert extracted.facts["ocr_pages"] == [1, 2] and extracted.warnings == []
    assert all(0.5 < score <= 1 for score in extracted.ocr_confidence.values())
    # Each page says something: each is its own chunk, with its own page's confidence.
    first, second = blocks_chunk(blocks=extracted.blocks,
                                 ocr_confidence=extracted.ocr_confidence)
    assert "ZK-1042" in first.content and "ERR-771" in second.content
    assert [(chunk.page_start, chunk.page_end) for chunk in (first, second)] == [(1, 1), (2, 2)]
    assert first.facts["ocr"] is True and second.facts["ocr"] is True
    assert first.facts["ocr_confidence"] == pytest.approx(extracted.ocr_confidence[1], abs=1e-4)
    assert second.facts["ocr_confidence"] == pytest.approx(extracted.ocr_confidence[2],
                                                           abs=1e-4)


@needs_ocr
def test_pages_past_the_budget_are_left_for_the_next_run(budget):
    data = scanned_pdf_bytes([["Page one text"], ["Page two text"], ["Page three text"]])
    extracted = pdf.extract(data, name="scan.pdf", options=ExtractOptions())
    assert extracted.facts["ocr_pages"] == [1, 2]
    assert extracted.facts["ocr_skipped_pages"] == [3]
    assert extracted.facts["ocr_skipped_reason"] == "run_cap"
    assert "RAG_OCR_MAX_PAGES" in extracted.warnings[0]


@needs_ocr
def test_a_digital_page_next_to_a_scan_keeps_its_text_layer():
    from io import BytesIO

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for data in (pdf_bytes(["Digital page with its own text layer."]),
                 scanned_pdf_bytes([["Scanned page two"]])):
        writer.append(PdfReader(BytesIO(data)))
    buffer = BytesIO()
    writer.write(buffer)
    extracted = pdf.extract(buffer.getvalue(), name="mixed.pdf", options=ExtractOptions())
    assert extracted.facts["ocr_pages"] == [2]
    chunks = blocks_chunk(blocks=extracted.blocks, ocr_confidence=extracted.ocr_confidence)
    (chunk,) = chunks
    assert chunk.content.startswith("Digital page with its own text layer.")
    assert "Scanned page two" in chunk.content
    # The chunk holds an OCR page: it is marked, with that page's confidence.
    assert chunk.facts == {"ocr": True, "ocr_confidence": extracted.ocr_confidence[2]}


def test_a_recogniser_failure_leaves_the_page_out_with_a_warning(monkeypatch):
    def broken(image):
        raise RuntimeError("onnxruntime session failed")

    monkeypatch.setattr(ocr, "ocr_available", lambda: True)
    monkeypatch.setattr(ocr, "image_recognise", broken)
    data = scanned_pdf_bytes([["Page one"], ["Page two"]])
    extracted = pdf.extract(data, name="scan.pdf", options=ExtractOptions())
    assert extracted.blocks == [] and extracted.ocr_confidence == {}
    assert extracted.warnings == [
        f"OCR of scanned page {page} failed (RuntimeError: onnxruntime session failed); the "
        "page is left out" for page in (1, 2)]
