"""Word documents (.docx) with python-docx.

Heading styles (Heading 1–9, and their Chinese names) give the heading path. Tables become
Markdown tables, each a block of its own with its caption; the chunker cuts a long one between
rows, and every piece repeats the table's caption and header row (parsing/tables.py), so a number
is never separated from its column name and unit.
A DOCX file has no reliable page numbers (pages are laid out by the reader's Word), so its
chunks have none.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Callable
from typing import Any

from parsing.formats.base import (
    Block,
    Extracted,
    ExtractOptions,
    FormatRejected,
    TextBudget,
    heading_push,
    paragraph_breaks,
    paragraph_limit_message,
    properties_clean,
    title_from_name,
)

FORMAT = "docx"
# The XML inside a DOCX is compressed; a file that unpacks to more than this is refused
# before it is parsed (a zip bomb would take all memory).
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
# Bytes of word/document.xml allowed per character of RAG_DOCUMENT_MAX_CHARS: Word's markup runs
# at 5-20 bytes a character (runs, properties, revision ids), so 40 leaves room for the heaviest
# real files while a body of hundreds of MB of empty paragraphs is refused before parsing.
BODY_BYTES_PER_CHAR = 40
BODY_MIN_BYTES = 16 * 1024 * 1024
BODY = "word/document.xml"
# A paragraph's start tag with Word's own prefix: `<w:p>`, `<w:p w:rsidR=...>`, `<w:p/>`.
_PARAGRAPH_TAG = re.compile(rb"<w:p[\s/>]")
_SCAN_BYTES = 1024 * 1024
_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_CAPTION_STYLE = re.compile(r"^(?:caption|题注)$", re.IGNORECASE)
_CAPTION_TEXT = re.compile(r"^(?:表|table)\s*[\d一二三四五六七八九十]", re.IGNORECASE)
_CELL_SPACE = re.compile(r"\s+")


def extract(data: bytes, *, name: str, options: ExtractOptions) -> Extracted:
    document = _open(data, options=options)
    budget = TextBudget(options)
    from docx.oxml.ns import qn
    from docx.table import Table

    paragraph_tag, table_tag = qn("w:p"), qn("w:tbl")
    text_tags = _TextTags(qn)
    style_names, default_style = _paragraph_styles(document)
    title = (document.core_properties.title or "").strip()
    headings: list[tuple[int, str]] = []
    heading: tuple[str, ...] = ()
    blocks: list[Block] = []
    paragraphs: list[str] = []
    lead = 0  # length of the heading line at the start of `paragraphs`' text
    caption: str | None = None
    tables = 0

    def flush() -> None:
        nonlocal paragraphs, lead
        text = "\n\n".join(paragraphs)
        if text[lead:].strip():
            blocks.append(Block(text=text, heading_path=heading, lead=lead,
                                breaks=paragraph_breaks(text)))
        paragraphs, lead = [], 0

    # The body's paragraphs and tables one element at a time (python-docx's iter_inner_content
    # first makes a list of them all), each counted before it is read.
    for element in document.element.body.iterchildren(paragraph_tag, table_tag):
        if element.tag == table_tag:
            budget.paragraph(sum(1 for _ in element.iter(paragraph_tag)))
            rows = _table_rows(Table(element, document))
            for row in rows:
                budget.take("".join(row))
            tables += 1
            if rows and caption is not None and paragraphs and paragraphs[-1] == caption:
                paragraphs.pop()  # the caption travels with the table instead
            flush()
            if rows:
                blocks.append(Block(text=table_markdown(rows, caption=caption),
                                    heading_path=heading, table=True))
            caption = None
            continue
        budget.paragraph()
        text = budget.take(text_tags.paragraph_text(element).strip())
        style = style_names.get(element.style, default_style)
        level = _heading_level(style)
        if level is not None and text:
            flush()
            heading = heading_push(headings, level, text)
            paragraphs, lead = [text], len(text)
            caption = None
            continue
        if style == "Title" and text and not title:
            title = text
        if text:
            paragraphs.append(text)
            caption = text if (_CAPTION_STYLE.match(style) or _CAPTION_TEXT.match(text)) else None
    flush()
    return Extracted(format=FORMAT, title=title or title_from_name(name), blocks=blocks,
                     properties=_properties(document.core_properties),
                     facts={"tables": tables})


def _open(data: bytes, *, options: ExtractOptions) -> Any:
    from docx import Document

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(entry.file_size for entry in archive.infolist())
            body = next((entry.file_size for entry in archive.infolist()
                         if entry.filename == BODY), 0)
            if unpacked > MAX_UNPACKED_BYTES:
                raise FormatRejected(f"DOCX unpacks to {unpacked:,} bytes, over the "
                                     f"{MAX_UNPACKED_BYTES:,}-byte limit")
            # Parsing the body's XML comes before any of its text can be counted: one far
            # larger than a document of RAG_DOCUMENT_MAX_CHARS characters would need is
            # refused unparsed, and so is one of more paragraphs than RAG_DOCUMENT_MAX_PARAGRAPHS
            # (13 M empty paragraphs fit in 80 MB and take 6 s and 1.7 GB to parse).
            body_limit = max(BODY_MIN_BYTES, options.max_chars * BODY_BYTES_PER_CHAR)
            if body > body_limit:
                raise FormatRejected(
                    f"the DOCX body ({BODY}) unpacks to {body:,} bytes, more than the "
                    f"{body_limit:,} a document of RAG_DOCUMENT_MAX_CHARS "
                    f"({options.max_chars:,}) characters needs; not indexed")
            if body:
                _paragraphs_scan(archive, limit=options.max_paragraphs)
    except (zipfile.BadZipFile, zlib.error, EOFError):
        raise FormatRejected("not a valid DOCX file (damaged, an old .doc renamed, or "
                             "encrypted with a password)") from None
    try:
        return Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises KeyError, ValueError, lxml errors, ...
        raise FormatRejected(f"not a valid DOCX file ({type(exc).__name__}: {exc})") from None


def _paragraphs_scan(archive: zipfile.ZipFile, *, limit: int) -> None:
    """Count the body's paragraph start tags as it unpacks, a megabyte at a time, and refuse
    it once there are more than `limit`. A body that names Word's namespace by another prefix
    passes here, and is counted while it is extracted instead."""
    count = 0
    tail = b""
    with archive.open(BODY) as body:
        while chunk := body.read(_SCAN_BYTES):
            window = tail + chunk
            count += len(_PARAGRAPH_TAG.findall(window))
            if count > limit:
                raise FormatRejected(paragraph_limit_message(limit))
            # A tag cut by the chunk's end is found in the next window; one that ended
            # in this window is too long to be found again in its last 4 bytes.
            tail = window[-4:]


class _TextTags:
    """A paragraph's text as python-docx's Paragraph.text reads it (its runs and those of its
    hyperlinks; tabs, breaks and non-breaking hyphens as characters), walking the children
    with lxml's tag filter: python-docx evaluates an XPath expression per paragraph and per
    run, some 20 µs each."""

    def __init__(self, qn: Callable[[str], str]) -> None:
        self.run, self.hyperlink = qn("w:r"), qn("w:hyperlink")
        self.parts = tuple(qn(f"w:{name}")
                           for name in ("br", "cr", "noBreakHyphen", "ptab", "t", "tab"))

    def paragraph_text(self, paragraph: Any) -> str:
        pieces: list[str] = []
        for child in paragraph.iterchildren(self.run, self.hyperlink):
            runs = child.iterchildren(self.run) if child.tag == self.hyperlink else (child,)
            for run in runs:
                # python-docx's element classes give each part its text (str of a w:tab: "\t")
                pieces.extend(str(part) for part in run.iterchildren(*self.parts))
        return "".join(pieces)


def _paragraph_styles(document: Any) -> tuple[dict[str, str], str]:
    """({style id: name} of the paragraph styles, the default paragraph style's name), read
    once: python-docx looks a paragraph's style up anew each time, scanning every style for
    the default, about 4 ms a paragraph (20,000 paragraphs took 100 s)."""
    from docx.enum.style import WD_STYLE_TYPE

    first: dict[str, Any] = {}
    for style in document.styles:
        if style.style_id:
            first.setdefault(style.style_id, style)  # as python-docx's lookup: the first
    names = {style_id: style.name or "" for style_id, style in first.items()
             if style.type == WD_STYLE_TYPE.PARAGRAPH}
    default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    return names, (default.name or "") if default is not None else ""


def _heading_level(style: str) -> int | None:
    match = _HEADING_STYLE.match(style.strip())
    return int(match.group(1)) if match else None


def _table_rows(table: Any) -> list[list[str]]:
    """Cell texts per row; a cell merged across columns counts once."""
    rows = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(_CELL_SPACE.sub(" ", cell.text).strip())
        if any(cells):
            rows.append(cells)
    return rows


def table_markdown(rows: list[list[str]], *, caption: str | None) -> str:
    """The table as Markdown: the caption, a blank line, the first row as the header row, the
    delimiter row, then the other rows."""
    width = max(len(row) for row in rows)
    head = _row(rows[0], width) + "\n" + "| " + " | ".join(["---"] * width) + " |"
    lines = [f"{caption}\n\n{head}" if caption else head]
    lines.extend(_row(row, width) for row in rows[1:])
    return "\n".join(lines)


def _row(cells: list[str], width: int) -> str:
    padded = [cell.replace("|", "\\|") for cell in cells] + [""] * (width - len(cells))
    return "| " + " | ".join(padded) + " |"


def _properties(core: Any) -> dict[str, str]:
    """The DOCX's core properties as frontmatter fields (dates as ISO)."""
    values: dict[str, object] = {}
    for field in ("title", "author", "subject", "keywords", "category", "created", "modified"):
        try:
            values[field] = getattr(core, field)
        except (ValueError, TypeError, AttributeError):  # a malformed date in docProps/core.xml
            continue
    return properties_clean(values)
