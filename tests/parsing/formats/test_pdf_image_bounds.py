"""A page holding an image larger than IMAGE_MAX_PIXELS is never rendered: PDFium would decode
the whole image first, whatever the size of the render."""

from __future__ import annotations

import zlib

import pytest

from parsing.formats import ocr, pdf
from parsing.formats.base import ExtractOptions


def image_pdf_bytes(*, width: int, height: int) -> bytes:
    """One A4 page covered by a gray `width` x `height` image (deflated: a few kB per 10 M
    pixels), written by hand so that no library decodes the image on the way."""
    rows = zlib.compressobj(9)
    row = b"\x80" * width
    data = b"".join(rows.compress(row) for _ in range(height)) + rows.flush()
    content = b"q 595 0 0 842 0 0 cm /Im0 Do Q"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
        b"/Resources << /XObject << /Im0 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
        % (width, height, len(data)) + data + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def test_a_page_with_an_oversized_image_is_left_out_without_rendering(monkeypatch):
    monkeypatch.setattr(pdf, "IMAGE_MAX_PIXELS", 1_000_000)  # the same rule, a smaller file
    monkeypatch.setattr(ocr, "ocr_available", lambda: True)
    recognised = []
    monkeypatch.setattr(ocr, "image_recognise",
                        lambda image: recognised.append(image) or ("", None))
    data = image_pdf_bytes(width=1200, height=1000)
    extracted = pdf.extract(data, name="plan.pdf", options=ExtractOptions())
    assert recognised == []  # never rendered, so never recognised
    assert any("1,200 x 1,000-pixel image, more than the 1,000,000 pixels" in warning
               for warning in extracted.warnings), extracted.warnings


def test_the_default_bound_refuses_an_image_of_40000_by_40000_pixels_from_its_size_alone():
    pypdfium2 = pytest.importorskip("pypdfium2")
    # The image's dictionary says 40000 x 40000; its data is never decoded, so it can be short.
    data = image_pdf_bytes(width=1, height=1).replace(b"/Width 1 /Height 1",
                                                      b"/Width 40000 /Height 40000")
    page = pypdfium2.PdfDocument(data)[0]
    assert pdf.page_image_oversized(page) == (40000, 40000)
    small = pypdfium2.PdfDocument(image_pdf_bytes(width=100, height=80))[0]
    assert pdf.page_image_oversized(small) is None


def test_a_page_with_an_image_within_the_bound_is_still_recognised(monkeypatch):
    monkeypatch.setattr(ocr, "ocr_available", lambda: True)
    recognised = []
    monkeypatch.setattr(ocr, "image_recognise",
                        lambda image: recognised.append(image.size) or ("Plan legend", 0.9))
    extracted = pdf.extract(image_pdf_bytes(width=1200, height=1000), name="plan.pdf",
                            options=ExtractOptions())
    assert len(recognised) == 1
    assert "Plan legend" in " ".join(block.text for block in extracted.blocks)


def test_the_source_views_page_image_is_not_rendered_either(monkeypatch, tmp_path):
    from workbench.pages import sources

    path = tmp_path / "plan.pdf"
    path.write_bytes(image_pdf_bytes(width=1200, height=1000))
    assert sources._pdf_page_png(path=str(path), page=1) is not None
    monkeypatch.setattr(pdf, "IMAGE_MAX_PIXELS", 1_000_000)
    assert sources._pdf_page_png(path=str(path), page=1) is None
