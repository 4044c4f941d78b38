"""The source view: a cited chunk in its document, with its neighbours and, for a PDF, the page
it comes from (its text and a picture of it).

A card's link may name a span of the chunk's text (`quote_start`, `quote_end`: the quote the
answer relied on, workbench/pages/quotes.py); it is marked in the chunk. Offsets that are not
integers within the text with start < end are ignored.

The page is read from the document's stored file each time, never addressed by a path from the
request: the picture's URL names the document by id, and the caller must be able to read the
document's knowledge base. Pillow is not a dependency of the default install, so the picture is
encoded as PNG here (zlib and a few headers suffice for 8-bit RGB).
"""

from __future__ import annotations

import math
import re
import struct
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from access.callers import Caller
from core.errors import NotFound
from knowledge.models import Chunk, Document
from knowledge.selectors import chunk_get
from parsing.formats.pdf import page_image_oversized
from workbench.pages.quotes import marked_text, quote_offsets

NEIGHBOURS = 2  # chunks shown before and after the cited one
PAGE_IMAGE_DPI = 110
# A page bigger than A4 (a plan, a poster) is rendered smaller: never more pixels than this.
PAGE_IMAGE_MAX_PIXELS = 3_000_000
PDF_POINTS_PER_INCH = 72
_NEWLINE = re.compile(r"\r\n?")
# PDFium marks soft hyphens and unknown glyphs with control characters (as at ingest).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# PDFium is not thread-safe, not even across documents, and the server answers requests on
# several threads of one process: one page is read or rendered at a time. (Ingest reads PDFs in
# the jobs worker, another process.)
_PDFIUM_LOCK = threading.Lock()
_DOCUMENT_FIELDS = ("id", "knowledge_base_id", "title", "frontmatter", "original_name",
                    "source_name", "relative_path", "file_path", "format", "page_count",
                    "status")


@dataclass(frozen=True)
class SourcePage:
    """The page of a PDF shown beside the chunk."""

    number: int
    numbers: list[int]  # every page of the chunk's span, to switch between them
    text: str | None  # None: the file is gone, unreadable, or has no such page


@dataclass(frozen=True)
class SourceView:
    chunk: dict[str, Any]  # chunk_get's answer
    document: dict[str, Any]
    title: str
    before: list[Chunk] = field(default_factory=list)
    after: list[Chunk] = field(default_factory=list)
    page: SourcePage | None = None
    quote: tuple[int, int] | None = None  # the span of the chunk's text to mark

    @property
    def content_html(self) -> SafeString:
        """The chunk's text, escaped, with the quote marked."""
        return marked_text(self.chunk["content"], self.quote)


def source_get(*, caller: Caller, chunk_id: int, page: str | int | None = None,
               quote_start: str | None = None, quote_end: str | None = None) -> SourceView:
    """A chunk the caller may read, its neighbours by chunk_index in the same document, and
    (for a PDF) one page of its span: `page` when it lies in the span, else the first; the
    quote's span when the offsets lie within the chunk's text (else none).
    NotFound alike for a missing chunk and one of a base the caller may not read."""
    chunk = chunk_get(caller=caller, chunk_id=chunk_id)
    document = Document.objects.filter(pk=chunk["document_id"]).values(*_DOCUMENT_FIELDS).first()
    if document is None:  # deleted between the two reads
        raise NotFound(f"chunk not found: {chunk_id}", details={"id": chunk_id})
    document = document_shown(document)
    siblings = Chunk.objects.filter(document_id=chunk["document_id"]).only(
        "id", "chunk_index", "content", "heading_path", "page_start", "page_end")
    before = list(siblings.filter(chunk_index__lt=chunk["chunk_index"])
                  .order_by("-chunk_index")[:NEIGHBOURS])[::-1]
    after = list(siblings.filter(chunk_index__gt=chunk["chunk_index"])
                 .order_by("chunk_index")[:NEIGHBOURS])
    return SourceView(chunk=chunk, document=document, title=document_title(document),
                      before=before, after=after, page=_source_page(chunk, document, page),
                      quote=quote_offsets(quote_start, quote_end,
                                          length=len(chunk["content"])))


def document_title(document: dict[str, Any]) -> str:
    """What a person calls a document: the `title` of its frontmatter (a note's, or a PDF's or
    DOCX's properties), else the title its format gave it, else its source (an upload's source
    name, a vault document's path)."""
    title = (document.get("frontmatter") or {}).get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    return document.get("title") or document.get("source_name") or document["relative_path"]


def document_shown(document: dict[str, Any]) -> dict[str, Any]:
    """A document's row (with `source_name`) as pages show it: an upload's relative_path is its
    source name, as in search results; the name its file is stored under is the server's own."""
    shown = dict(document)
    source_name = shown.pop("source_name", None)
    if source_name:
        shown["relative_path"] = source_name
    return shown


def _source_page(chunk: dict[str, Any], document: dict[str, Any],
                 requested: str | int | None) -> SourcePage | None:
    start = chunk["page_start"]
    if document["format"] != "pdf" or start is None:
        return None
    end = chunk["page_end"] or start
    numbers = list(range(start, end + 1))
    number = _int_or_none(requested)
    if number not in numbers:
        number = start
    return SourcePage(number=number, numbers=numbers,
                      text=pdf_page_text(path=document["file_path"], page=number))


def _int_or_none(value: str | int | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def page_image_png(*, caller: Caller, document_id: int, page: int) -> bytes:
    """Page `page` (1-based) of a PDF the caller may read, as PNG. NotFound alike for a missing
    document, one of a base the caller may not read, a document that is not a PDF, and a
    page that cannot be rendered (file gone or unreadable, page out of range)."""
    document = Document.objects.filter(pk=document_id).values(*_DOCUMENT_FIELDS).first()
    if (document is None or not caller.may_read(document["knowledge_base_id"])
            or document["status"] == "deleting"):
        raise NotFound(f"document not found: {document_id}", details={"id": document_id})
    png = None
    if document["format"] == "pdf":
        png = _pdf_page_png(path=document["file_path"], page=page)
    if png is None:
        raise NotFound(f"page {page} of document {document_id} cannot be shown",
                       details={"id": document_id, "page": page})
    return png


def pdf_page_text(*, path: str, page: int) -> str | None:
    """The text layer of one page (1-based), or None when the page cannot be read."""
    with _pdf_page(path, page) as pdf_page:
        if pdf_page is None:
            return None
        textpage = pdf_page.get_textpage()
        try:
            return _CONTROL.sub("", _NEWLINE.sub("\n", textpage.get_text_range()))
        finally:
            textpage.close()


def _pdf_page_png(*, path: str, page: int) -> bytes | None:
    with _pdf_page(path, page) as pdf_page:
        # A page holding a huge image is not rendered: PDFium would decode it whole.
        if pdf_page is None or page_image_oversized(pdf_page) is not None:
            return None
        width, height = pdf_page.get_size()
        scale = PAGE_IMAGE_DPI / PDF_POINTS_PER_INCH
        scale = min(scale, math.sqrt(PAGE_IMAGE_MAX_PIXELS / max(1.0, width * height)))
        # RGB byte order, white background, no alpha: rows map one to one onto PNG's.
        bitmap = pdf_page.render(scale=scale, rev_byteorder=True)
        try:
            if bitmap.n_channels != 3:
                return None
            return png_encode(bytes(bitmap.buffer), width=bitmap.width, height=bitmap.height,
                              stride=bitmap.stride)
        finally:
            bitmap.close()


@contextmanager
def _pdf_page(path: str, number: int) -> Iterator[Any]:
    """One page of a PDF file (1-based), or None when the file is missing, not a PDF that
    PDFium can open, or has no such page; page and file are closed afterwards, all while
    holding _PDFIUM_LOCK."""
    import pypdfium2 as pdfium

    with _PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(path)
        except (pdfium.PdfiumError, OSError, ValueError):
            yield None
            return
        try:
            if not 1 <= number <= len(document):
                yield None
                return
            page = document[number - 1]
            try:
                yield page
            finally:
                page.close()
        finally:
            document.close()


def png_encode(pixels: bytes, *, width: int, height: int, stride: int) -> bytes:
    """8-bit RGB rows (`stride` bytes apart) as a PNG file."""
    row_bytes = width * 3
    view = memoryview(pixels)
    # Each PNG row starts with its filter type; 0 (none) keeps this simple and zlib does the rest.
    raw = b"".join(b"\x00" + view[top:top + row_bytes]
                   for top in range(0, height * stride, stride))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header)
            + _png_chunk(b"IDAT", zlib.compress(raw, 6)) + _png_chunk(b"IEND", b""))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
