"""Word documents (.docx) with python-docx.

Heading styles (Heading 1–9, and their Chinese names) give the heading path. Tables become
Markdown tables; a table too long for one chunk is cut between rows, and every piece repeats the
table's caption and header row, so a number is never separated from its column name and unit.
A DOCX file has no reliable page numbers (pages are laid out by the reader's Word), so its
chunks have none.
"""

from __future__ import annotations

import io
import re
import zipfile

from core.text_tokens import tokens_count
from knowledge.formats.base import (
    Block,
    Extracted,
    ExtractOptions,
    FormatRejected,
    TextBudget,
    heading_push,
    paragraph_breaks,
    title_from_name,
)

FORMAT = "docx"
# A table piece is at most this many tokens (the chunker's target), header included.
TABLE_PIECE_TOKENS = 800
# The XML inside a DOCX is compressed; a file that unpacks to more than this is refused
# before it is parsed (a zip bomb would take all memory).
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
# Bytes of word/document.xml allowed per character of RAG_DOCUMENT_MAX_CHARS: Word's markup runs
# at 5-20 bytes a character (runs, properties, revision ids), so 40 leaves room for the heaviest
# real files while a body of hundreds of MB of empty paragraphs is refused before parsing.
BODY_BYTES_PER_CHAR = 40
BODY_MIN_BYTES = 16 * 1024 * 1024
_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_CAPTION_STYLE = re.compile(r"^(?:caption|题注)$", re.IGNORECASE)
_CAPTION_TEXT = re.compile(r"^(?:表|table)\s*[\d一二三四五六七八九十]", re.IGNORECASE)
_CELL_SPACE = re.compile(r"\s+")


def extract(data: bytes, *, name: str, options: ExtractOptions) -> Extracted:
    document = _open(data, options=options)
    budget = TextBudget(options)
    from docx.table import Table

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

    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = _table_rows(item)
            for row in rows:
                budget.take("".join(row))
            tables += 1
            if caption is not None and paragraphs and paragraphs[-1] == caption:
                paragraphs.pop()  # the caption travels with the table instead
            flush()
            blocks.extend(Block(text=piece, heading_path=heading, table=True)
                          for piece in table_pieces(rows, caption=caption))
            caption = None
            continue
        text = budget.take(item.text.strip())
        style = item.style.name if item.style is not None else ""
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
                     facts={"tables": tables})


def _open(data: bytes, *, options: ExtractOptions):
    from docx import Document

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(entry.file_size for entry in archive.infolist())
            body = next((entry.file_size for entry in archive.infolist()
                         if entry.filename == "word/document.xml"), 0)
    except zipfile.BadZipFile:
        raise FormatRejected("not a valid DOCX file (damaged, an old .doc renamed, or "
                             "encrypted with a password)") from None
    if unpacked > MAX_UNPACKED_BYTES:
        raise FormatRejected(f"DOCX unpacks to {unpacked:,} bytes, over the "
                             f"{MAX_UNPACKED_BYTES:,}-byte limit")
    # Parsing the body's XML comes before any of its text can be counted: one far larger than
    # a document of RAG_DOCUMENT_MAX_CHARS characters would need is refused unparsed.
    body_limit = max(BODY_MIN_BYTES, options.max_chars * BODY_BYTES_PER_CHAR)
    if body > body_limit:
        raise FormatRejected(f"the DOCX body (word/document.xml) unpacks to {body:,} bytes, more "
                             f"than the {body_limit:,} a document of RAG_DOCUMENT_MAX_CHARS "
                             f"({options.max_chars:,}) characters needs; not indexed")
    try:
        return Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises KeyError, ValueError, lxml errors, ...
        raise FormatRejected(f"not a valid DOCX file ({type(exc).__name__}: {exc})") from None


def _heading_level(style: str) -> int | None:
    match = _HEADING_STYLE.match(style.strip())
    return int(match.group(1)) if match else None


def _table_rows(table) -> list[list[str]]:
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


def table_pieces(rows: list[list[str]], *, caption: str | None) -> list[str]:
    """The table as Markdown, cut between rows into pieces of at most TABLE_PIECE_TOKENS
    tokens, each starting with the caption and the header row."""
    if not rows:
        return []
    width = max(len(row) for row in rows)
    header = _row(rows[0], width) + "\n" + "| " + " | ".join(["---"] * width) + " |"
    head = f"{caption}\n\n{header}" if caption else header
    budget = TABLE_PIECE_TOKENS - tokens_count(head)
    pieces: list[str] = []
    lines: list[str] = []
    used = 0
    for row in rows[1:]:
        line = _row(row, width)
        cost = tokens_count(line) + 1
        if lines and used + cost > budget:
            pieces.append(head + "\n" + "\n".join(lines))
            lines, used = [], 0
        lines.append(line)
        used += cost
    pieces.append(head + ("\n" + "\n".join(lines) if lines else ""))
    return pieces


def _row(cells: list[str], width: int) -> str:
    padded = [cell.replace("|", "\\|") for cell in cells] + [""] * (width - len(cells))
    return "| " + " | ".join(padded) + " |"
