"""The one interface every document format implements, and what it hands to the chunker.

A format module exposes `extract(data, *, name, options) -> Extracted`. It gets the file's bytes
(read once by parsing.vault with the same safety checks as a note, and hashed from the same
bytes) rather than a path, so a file swapped after the scan can never be parsed in place of the
one that was checked. It returns the document's text as blocks in reading order, each with its
heading path and the pages it covers; chunking, embedding and storage are the same for every
format.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

_PARAGRAPH_START = re.compile(r"\n[ \t]*\n\s*")
_LINE_START = re.compile(r"\n")


class FormatRejected(Exception):
    """A file of a known format that cannot be indexed; the message names the reason
    (encrypted, damaged, too many pages, not decodable)."""


@dataclass(frozen=True)
class ExtractOptions:
    """Limits a run puts on every file (from the config; documented in .env.sample)."""

    pdf_max_pages: int = 2000
    ocr: bool = True  # recognise scanned pages when the optional OCR extra is installed
    max_chars: int = 2_000_000  # RAG_DOCUMENT_MAX_CHARS: text of one file
    max_paragraphs: int = 200_000  # RAG_DOCUMENT_MAX_PARAGRAPHS
    max_chunks: int = 20_000  # RAG_DOCUMENT_MAX_CHUNKS
    # Reviewed text of some pages (1-based page -> text), used instead of what the page
    # holds: a correction from the review queue, which the page is then not read or OCR'd for.
    page_texts: tuple[tuple[int, str], ...] = ()


class TextBudget:
    """Counts a file's text and paragraphs while it is extracted and refuses it (FormatRejected)
    the moment it passes RAG_DOCUMENT_MAX_CHARS or RAG_DOCUMENT_MAX_PARAGRAPHS, before the rest
    is read, chunked or embedded. Paragraphs bound the work that characters do not: an empty
    DOCX paragraph has no text, yet costs its XML element and its pass through the extractor."""

    def __init__(self, options: ExtractOptions) -> None:
        self.limit = options.max_chars
        self.used = 0
        self.paragraph_limit = options.max_paragraphs
        self.paragraphs = 0

    def take(self, text: str) -> str:
        """Count the characters of `text`."""
        self.used += len(text)
        if self.used > self.limit:
            raise FormatRejected(text_limit_message(self.limit))
        return text

    def paragraph(self, count: int = 1) -> None:
        """Count `count` paragraphs (a DOCX paragraph, a Markdown block)."""
        self.paragraphs += count
        if self.paragraphs > self.paragraph_limit:
            raise FormatRejected(paragraph_limit_message(self.paragraph_limit))

    def paragraphs_take(self, text: str) -> str:
        """Count the paragraphs of plain text (separated by blank lines, as paragraph_breaks
        cuts them), one at a time: a text of millions is refused at the limit."""
        if not text.strip():
            return text
        self.paragraph()
        for match in _PARAGRAPH_START.finditer(text):
            if match.end() < len(text):
                self.paragraph()
        return text


def text_limit_message(limit: int) -> str:
    return (f"file holds more than {limit:,} characters of text (RAG_DOCUMENT_MAX_CHARS); not "
            "indexed (split it, or raise the limit)")


def paragraph_limit_message(limit: int) -> str:
    return (f"file holds more than {limit:,} paragraphs (RAG_DOCUMENT_MAX_PARAGRAPHS); not "
            "indexed (split it, or raise the limit)")


@dataclass(frozen=True)
class Block:
    """A stretch of text in reading order under one heading path.

    `pages` lists where each page begins inside `text`: (offset, 1-based page number), sorted by
    offset, the first at offset 0; empty for formats without pages. A `table` block is one
    table as Markdown (its caption, header row, delimiter row, then its rows): the chunker cuts
    a long one between rows, each piece after the caption and header row (parsing/tables.py)."""

    text: str
    heading_path: tuple[str, ...] = ()
    pages: tuple[tuple[int, int], ...] = ()
    table: bool = False
    # Length of a heading line at the start of `text` (DOCX): a block of nothing else makes no
    # chunk, and the heading is kept with the text after it.
    lead: int = 0
    # Offsets in `text` where a paragraph or line starts: where a chunk may be cut.
    breaks: tuple[int, ...] = ()


@dataclass
class Extracted:
    """A whole document as a format module read it."""

    format: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    page_count: int | None = None
    warnings: list[str] = field(default_factory=list)
    # Per-page recogniser confidence of pages whose text came from OCR.
    ocr_confidence: dict[int, float] = field(default_factory=dict)
    # The text of the pages read by OCR and of those holding a table, as it went into the
    # blocks: what the review queue shows beside the page image.
    page_texts: dict[int, str] = field(default_factory=dict)
    # Ruled tables found on the pages (parsing/formats/pdf_tables.py DetectedTable).
    tables: list[Any] = field(default_factory=list)
    # Facts stored in documents.metadata (extractor, outline, pages left out and why).
    facts: dict[str, Any] = field(default_factory=dict)
    # The file's own document properties (author, created, modified, title, subject,
    # keywords), which become its frontmatter fields for filters (retrieval/filters.py).
    properties: dict[str, Any] = field(default_factory=dict)


PROPERTY_MAX_CHARS = 500  # one property's text: a title or author, not a second document


def properties_clean(values: dict[str, Any]) -> dict[str, str]:
    """Document properties as frontmatter fields: non-empty text, whitespace collapsed, NUL
    removed, at most PROPERTY_MAX_CHARS each; dates and times as ISO text."""
    clean = {}
    for key, value in values.items():
        if isinstance(value, (dt.datetime, dt.date)):
            value = value.isoformat()
        if not isinstance(value, str):
            continue
        text = " ".join(value.replace("\x00", "").split())[:PROPERTY_MAX_CHARS]
        if text:
            clean[key] = text
    return clean


def pdf_date(value: str | None) -> str | None:
    """A PDF date (`D:20210503142210+08'00'`, parts optional after the year) as an ISO date or
    date-time; None when it is not one."""
    match = _PDF_DATE.match(value or "")
    if match is None:
        return None
    year, month, day, hour, minute, second, zone, zone_hour, zone_minute = match.groups()
    try:
        date = dt.date(int(year), int(month or 1), int(day or 1))
        if hour is None:
            return date.isoformat()
        moment = dt.datetime(date.year, date.month, date.day, int(hour), int(minute or 0),
                             int(second or 0))
    except ValueError:
        return None
    if zone in ("+", "-") and zone_hour is not None:
        offset = dt.timedelta(hours=int(zone_hour), minutes=int(zone_minute or 0))
        moment = moment.replace(tzinfo=dt.timezone(offset if zone == "+" else -offset))
    elif zone in ("Z", "z"):
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.isoformat()


_PDF_DATE = re.compile(r"\s*(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?"
                       r"(?:([Zz+-])(?:(\d{2})'?(?:(\d{2})'?)?)?)?")


def title_from_name(name: str) -> str:
    """The file name without its folder and extension: the title of a document without one."""
    base = name.rsplit("/", 1)[-1]
    stem, dot, _ = base.rpartition(".")
    return stem if dot and stem else base


def paragraph_breaks(text: str, *, lines: bool = False) -> tuple[int, ...]:
    """Offsets where a paragraph starts (after a blank line), or with `lines` where any line
    starts: the places a chunk may be cut."""
    pattern = _LINE_START if lines else _PARAGRAPH_START
    return tuple(match.end() for match in pattern.finditer(text) if match.end() < len(text))


def heading_push(stack: list[tuple[int, str]], level: int, title: str) -> tuple[str, ...]:
    """Enter a heading of `level` (a deeper heading has a higher level) on `stack` of
    (level, title) and return the heading path it starts. A level skipped in between leaves no
    empty name in the path."""
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, title))
    return tuple(name for _, name in stack)
