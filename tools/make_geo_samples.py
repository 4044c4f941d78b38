"""Generate samples/geo-kb/: a small geological-prospecting knowledge base for ingest and eval.

The ACME vault holds only Markdown notes. This second sample exercises everything else that
ingest reads, with content where a retrieval answer sits on one specific page: excerpts of a
(fictional) porphyry copper-gold exploration project, 青山岭铜金矿 Qingshanling, mostly Chinese
with English terms.

- reports/porphyry-copper-model.pdf — 5 pages, metadata title, two-level outline (bookmarks)
- reports/QSL-2023-drillhole-assays.pdf — 4 pages, metadata title, a grade table over pages 2–3
  (hole, from–to m, length m, Cu %, Au g/t, Mo ppm)
- reports/ZK-0815 钻孔地质编录.pdf — 4 pages, no metadata title (the file name is the title)
- reports/sampling-qaqc-procedure.pdf — 5 pages, metadata title, sampling and QA/QC rules
- scans/ZK-1042 野外备忘录扫描件.pdf — 2 image-only pages (no text layer) for OCR: 200 dpi,
  black on white, CJK glyphs about 35 px tall
- reports/青山岭2024年度勘查工作总结.docx — Heading 1/2, a captioned 15-row table with units
- notes/AP-3 化探异常查证记录.txt — GB18030-encoded plain text
- 00-index.md, 术语表 Glossary.md — Markdown notes that link the rest together

The text itself is in tools/geo_samples_content.py; this module lays it out.

Output is deterministic: fixed creation dates (the PDF file IDs hash the content) and ZIP
timestamps, so a rebuild with the same library and font versions gives identical bytes.
eval/geo-questions.yaml asks questions about it, with the expected file and page.

    python tools/make_geo_samples.py [--out samples/geo-kb]

Needs fpdf2, Pillow, python-docx and the WenQuanYi Micro Hei font
(`apt-get install fonts-wqy-microhei`).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if not __package__:  # run as a script (python tools/make_geo_samples.py): the project on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.geo_samples_content import (  # noqa: E402
    DOCX,
    NOTES,
    PDF_DOCUMENTS,
    SCAN,
    TXT,
    TXT_PATH,
)

FONT_PATH = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "samples" / "geo-kb"
FIXED_DATE = datetime(2024, 6, 28, 9, 30, tzinfo=UTC)
ZIP_DATE = (2024, 6, 28, 9, 30, 0)
FONT = "wqy"
SCAN_DPI = 200
SCAN_SIZE = (round(210 / 25.4 * SCAN_DPI), round(297 / 25.4 * SCAN_DPI))  # A4: 1654 × 2339 px
SCAN_GLYPH_PX = 38  # em size: CJK glyphs come out about 35 px tall, Latin capitals about 27 px
# Line breaking: a Latin word or number stays whole, CJK may break between any two characters,
# and closing punctuation never starts a line (fpdf2 itself only breaks at spaces).
_LINE_TOKEN = re.compile(r"[\x21-\x7e\u00b0-\u00b5\u00d7\u2013\u2018\u2019\u2264\u2265]+|.",
                         re.DOTALL)
_NO_LINE_START = set("，。、；：？！）》」』”’%…")
_NO_LINE_END = set("（《「『“‘")


class FontMissing(RuntimeError):
    """The CJK font the PDFs and the scan embed is not installed."""


def font_check(*, font_path: Path = FONT_PATH) -> None:
    """Raise FontMissing, naming the Debian package, when the CJK font is absent."""
    if not font_path.is_file():
        raise FontMissing(f"CJK font not found at {font_path}; install it with "
                          "`apt-get install fonts-wqy-microhei`")


def samples_build(*, out: Path, font_path: Path = FONT_PATH) -> list[Path]:
    """Write every sample file under `out`; returns the paths written, sorted."""
    font_check(font_path=font_path)
    written = []
    for spec in PDF_DOCUMENTS:
        written.append(_write(out / spec["path"], _pdf_bytes(spec, font_path=font_path)))
    written.append(_write(out / SCAN["path"], _scan_bytes(font_path=font_path)))
    written.append(_write(out / DOCX["path"], _docx_bytes()))
    written.append(_write(out / TXT_PATH, TXT.encode("gb18030")))
    for relative_path, body in NOTES.items():
        written.append(_write(out / relative_path, body.encode("utf-8")))
    return sorted(written)


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _pdf_new(*, font_path: Path, title: str | None, running_title: str):
    from fpdf import FPDF

    class ReportPdf(FPDF):
        def footer(self) -> None:
            if not running_title:  # a scan: nothing but the page images
                return
            self.set_y(-14)
            self.set_font(FONT, size=8)
            self.set_text_color(90)
            self.cell(0, 6, f"{running_title} · 第 {self.page_no()} 页", align="C")
            self.set_text_color(0)

    pdf = ReportPdf(format="A4")
    if running_title:
        pdf.add_font(FONT, fname=str(font_path))
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_producer("tools/make_geo_samples.py")
    pdf.set_author("西岭地质勘查有限公司 Xiling Geological Exploration Co. (fictional)")
    pdf.set_lang("zh-CN")
    if title:
        pdf.set_title(title)
    pdf.set_margins(20, 18, 20)
    pdf.set_auto_page_break(True, margin=20)
    return pdf


def _pdf_bytes(spec: dict[str, Any], *, font_path: Path) -> bytes:
    """One report: `pages` is a list of pages, each a list of (kind, …) blocks."""
    pdf = _pdf_new(font_path=font_path, title=spec.get("title"),
                   running_title=spec["running_title"])
    outline = spec.get("outline", False)
    for page in spec["pages"]:
        pdf.add_page()
        for block in page:
            _pdf_block(pdf, block, outline=outline)
    if pdf.page_no() != spec["page_count"]:
        raise RuntimeError(f"{spec['path']}: laid out on {pdf.page_no()} pages, "
                           f"expected {spec['page_count']}; shorten the text")
    return bytes(pdf.output())


def _pdf_block(pdf, block: tuple, *, outline: bool) -> None:
    kind = block[0]
    if kind in ("h1", "h2"):
        level = 0 if kind == "h1" else 1
        if outline:
            pdf.start_section(block[1], level=level)
        pdf.set_font(FONT, size=15 if kind == "h1" else 12)
        pdf.ln(2 if kind == "h1" else 1)
        pdf.multi_cell(0, 8 if kind == "h1" else 7, _wrap(pdf, block[1]), align="L",
                       new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1)
    elif kind == "title":
        pdf.set_font(FONT, size=18)
        pdf.multi_cell(0, 10, _wrap(pdf, block[1]), align="C", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    elif kind == "p":
        pdf.set_font(FONT, size=10.5)
        pdf.multi_cell(0, 6.2, _wrap(pdf, block[1]), align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
    elif kind == "table":
        _pdf_table(pdf, header=block[1], rows=block[2], widths=block[3])
    else:
        raise ValueError(f"unknown block kind {kind!r}")


def _wrap(pdf, text: str) -> str:
    """`text` with a newline wherever a line of the current font would overflow the margins."""
    width = pdf.w - pdf.l_margin - pdf.r_margin - 2 * pdf.c_margin - 0.5
    lines = []
    for paragraph in text.split("\n"):
        line: list[str] = []
        for token in _LINE_TOKEN.findall(paragraph):
            if line and pdf.get_string_width("".join(line) + token) > width:
                carried = [line.pop()] if token in _NO_LINE_START and len(line) > 1 else []
                while len(line) > 1 and line[-1] in _NO_LINE_END:
                    carried.insert(0, line.pop())
                lines.append("".join(line).rstrip())
                line = carried
            if token == " " and not line:
                continue
            line.append(token)
        lines.append("".join(line).rstrip())
    return "\n".join(lines)


def _pdf_table(pdf, *, header: tuple[str, ...], rows: list[tuple[str, ...]],
               widths: tuple[int, ...]) -> None:
    from fpdf.fonts import FontFace

    pdf.set_font(FONT, size=9.5)
    headings = FontFace(emphasis="NONE", fill_color=(225, 230, 235))
    with pdf.table(col_widths=widths, text_align="CENTER", line_height=6.4,
                   headings_style=headings, repeat_headings=1) as table:
        for cells in (header, *rows):
            row = table.row()
            for cell in cells:
                row.cell(cell)
    pdf.ln(3)


def _scan_bytes(*, font_path: Path) -> bytes:
    """Image-only pages: Chinese and English rendered by Pillow, covering each page.

    Grayscale holding only black and white, as a bitonal scan; not mode "1", which fpdf2 2.8
    writes with CCITT parameters on a Flate stream that readers then decode as noise."""
    from PIL import Image, ImageDraw, ImageFont

    pdf = _pdf_new(font_path=font_path, title=None, running_title="")
    pdf.set_image_filter("FlateDecode")  # same bytes whether or not Pillow has libtiff (CCITT)
    body = ImageFont.truetype(str(font_path), SCAN_GLYPH_PX, index=0)
    heading = ImageFont.truetype(str(font_path), SCAN_GLYPH_PX + 10, index=0)
    for lines in SCAN["pages"]:
        image = Image.new("L", SCAN_SIZE, 255)
        draw = ImageDraw.Draw(image)
        draw.rectangle((110, 110, SCAN_SIZE[0] - 110, SCAN_SIZE[1] - 140), outline=0, width=3)
        y = 170
        for number, line in enumerate(lines):
            font = heading if number == 0 else body
            draw.text((160, y), line, font=font, fill=0)
            y += int(font.size * 1.75) if line else font.size
            if number == 0:
                draw.line((160, y - 12, SCAN_SIZE[0] - 160, y - 12), fill=0, width=2)
                y += 20
        bitonal = image.point(lambda value: 255 if value > 150 else 0)
        pdf.add_page()
        pdf.image(bitonal, x=0, y=0, w=pdf.w, h=pdf.h)
    return bytes(pdf.output())


def _docx_bytes() -> bytes:
    import docx
    from docx.oxml.ns import qn
    from docx.shared import Pt

    spec = DOCX
    document = docx.Document()
    normal = document.styles["Normal"]
    normal.font.size = Pt(10.5)
    normal.element.get_or_add_rPr().get_or_add_rFonts().set(qn("w:eastAsia"), "宋体")
    properties = document.core_properties
    properties.title = spec["title"]
    properties.author = "西岭地质勘查有限公司"
    properties.last_modified_by = "tools/make_geo_samples.py"
    properties.created = properties.modified = properties.last_printed = FIXED_DATE
    properties.revision = 1
    document.add_paragraph(spec["title"], style="Title")
    for kind, *rest in spec["blocks"]:
        if kind == "h1":
            document.add_heading(rest[0], level=1)
        elif kind == "h2":
            document.add_heading(rest[0], level=2)
        elif kind == "p":
            document.add_paragraph(rest[0])
        elif kind == "caption":
            document.add_paragraph(rest[0], style="Caption")
        elif kind == "table":
            header, rows = rest
            table = document.add_table(rows=1 + len(rows), cols=len(header))
            table.style = "Table Grid"
            for row, cells in zip(table.rows, (header, *rows)):
                for cell, text in zip(row.cells, cells):
                    cell.text = text
        else:
            raise ValueError(f"unknown block kind {kind!r}")
    buffer = io.BytesIO()
    document.save(buffer)
    return _zip_normalise(buffer.getvalue())


def _zip_normalise(data: bytes) -> bytes:
    """python-docx stamps each ZIP member with the current time; rewrite with a fixed one."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            target.writestr(info, source.read(member.filename))
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="output folder (default: samples/geo-kb in the project)")
    args = parser.parse_args(argv)
    try:
        written = samples_build(out=args.out)
    except FontMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"error: {exc.name} is not installed (needs fpdf2, Pillow, python-docx)",
              file=sys.stderr)
        return 2
    for path in written:
        print(f"{path.stat().st_size:>9}  {path.relative_to(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
