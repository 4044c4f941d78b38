"""Real documents made for the tests: PDFs (with and without an outline, image-only, encrypted,
truncated), DOCX with nested headings and tables, and text in several encodings."""

from __future__ import annotations

import io
from collections.abc import Sequence

from fpdf import FPDF

# A4 in points, as fpdf2 lays it out.
PAGE_WIDTH_MM = 210


def pdf_bytes(pages: Sequence[str], *, title: str | None = None,
              outline: Sequence[tuple[int, int, str]] = ()) -> bytes:
    """A digital PDF: one entry of `pages` per page (Helvetica text, wrapped). `outline` holds
    (page index, level, title): the title is printed as a heading line on that page, above its
    text, and becomes a bookmark."""
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    headings = {}
    for index, level, heading in outline:
        headings.setdefault(index, []).append((level, heading))
    for index, text in enumerate(pages):
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        for level, heading in headings.get(index, []):
            pdf.start_section(heading, level=level)
            pdf.multi_cell(0, 7, heading, new_x="LMARGIN", new_y="NEXT")
        if text:
            pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def scanned_pdf_bytes(pages: Sequence[Sequence[str]]) -> bytes:
    """An image-only PDF: each page is one picture of its lines (no text layer), covering the
    whole page, as a scanner makes them."""
    from PIL import Image, ImageDraw, ImageFont

    pdf = FPDF()
    font = ImageFont.load_default(size=40)
    for lines in pages:
        image = Image.new("L", (1240, 1754), 255)  # A4 at 150 dpi
        draw = ImageDraw.Draw(image)
        for number, line in enumerate(lines):
            draw.text((100, 120 + number * 80), line, font=font, fill=0)
        pdf.add_page()
        pdf.image(image, x=0, y=0, w=PAGE_WIDTH_MM)
    return bytes(pdf.output())


def encrypted_pdf_bytes(password: str = "secret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(["Confidential text."]))))
    writer.encrypt(user_password=password, owner_password=password)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def docx_bytes(parts: Sequence[tuple], *, title: str | None = None) -> bytes:
    """A DOCX from parts: ("heading", level, text), ("p", text), ("caption", text) and
    ("table", rows)."""
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    for part in parts:
        kind = part[0]
        if kind == "heading":
            document.add_heading(part[2], level=part[1])
        elif kind == "p":
            document.add_paragraph(part[1])
        elif kind == "caption":
            document.add_paragraph(part[1], style="Caption")
        elif kind == "table":
            rows = part[1]
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            for row, values in zip(table.rows, rows):
                for cell, value in zip(row.cells, values):
                    cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def ruled_table_pdf_bytes(rows: Sequence[Sequence[str]], *, before: str = "",
                          after: str = "", pages_before: Sequence[str] = ()) -> bytes:
    """A digital PDF: a page of text for each of `pages_before`, then a page with `before`, a
    table with every cell bordered (a ruled table) and `after`."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages_before:
        pdf.add_page()
        pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    if before:
        pdf.multi_cell(0, 5, before, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    for row in rows:
        for cell in row:
            pdf.cell(45, 8, cell, border=1)
        pdf.ln(8)
    if after:
        pdf.ln(4)
        pdf.multi_cell(0, 5, after, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())
