"""A document's text as the index holds it, for GET /documents/{id}/content: its chunks in
order, each continuation chunk's overlap with the one before taken out again, with a marker
before each page of a paged document (`--- page 3 ---`).

The text is rebuilt from the chunks rather than read from the file, so that it is exactly what
search results and citations quote. A continuation chunk (parsing/chunking.py) starts with the
tail of the chunk before it, in the same section, and a chunk of a paged document starts a new
page group only on a page after the previous chunk's last page; a chunk of another section or
page group overlaps nothing. The overlap is found as the longest end of the previous chunk that
the next one starts with, at least OVERLAP_MIN_CHARS long, so that a coincidence of a few
characters is not taken for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper

from access.callers import Caller
from core.db import db_errors_translated, row_as
from core.errors import NotFound
from knowledge import sql
from parsing.chunking import OVERLAP_TOKENS

# The longest text a response carries; past it, the text is cut and `truncated` is true.
CONTENT_MAX_CHARS = 2_000_000
# A chunk's overlap spans at most this many characters (chunking.py looks back at most eight
# characters per overlap token).
OVERLAP_MAX_CHARS = OVERLAP_TOKENS * 8
OVERLAP_MIN_CHARS = 16
_BATCH = 200


@dataclass(frozen=True)
class ChunkText:
    heading_path: list[str]
    page_start: int | None
    page_end: int | None
    content: str


def document_content(*, caller: Caller, document_id: int,
                     max_chars: int = CONTENT_MAX_CHARS) -> dict[str, Any]:
    """A document's text from its chunks, with page markers, cut at `max_chars` (`truncated`
    says so); NotFound alike for a missing document and one of a base the caller cannot read."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_DETAIL, [document_id])
        detail: dict[str, Any] | None = row_as(cursor, dict)
        if detail is None or not caller.may_read(detail["knowledge_base_id"]):
            raise NotFound(f"document not found: {document_id}", details={"id": document_id})
        pieces: list[str] = []
        size = 0
        for piece in text_pieces(_chunks_read(cursor, document_id)):
            pieces.append(piece)
            size += len(piece)
            if size > max_chars:
                break
    text = "".join(pieces)
    return {"document_id": detail["id"], "knowledge_base": detail["knowledge_base"],
            "title": detail["title"], "format": detail["format"], "status": detail["status"],
            "page_count": detail["page_count"], "chunks": detail["chunks"],
            "content": text[:max_chars], "truncated": len(text) > max_chars,
            "max_chars": max_chars}


def _chunks_read(cursor: CursorWrapper, document_id: int) -> Iterator[ChunkText]:
    """The document's chunks in order, read a batch at a time: a long document is read only
    as far as the response needs."""
    next_index = 0
    while True:
        cursor.execute(sql.DOCUMENT_TEXT_CHUNKS, [document_id, next_index, _BATCH])
        rows = cursor.fetchall()
        for _, heading_path, page_start, page_end, content in rows:
            yield ChunkText(heading_path=list(heading_path or []), page_start=page_start,
                            page_end=page_end, content=content)
        if len(rows) < _BATCH:
            return
        next_index = rows[-1][0] + 1


def text_pieces(chunks: Iterable[ChunkText]) -> Iterator[str]:
    """The pieces of the document's text, in order: each chunk without the overlap it repeats,
    separated by a blank line where a new section begins, a page marker before a new page."""
    previous: ChunkText | None = None
    announced = 0  # the last page a marker named
    for chunk in chunks:
        text = chunk.content
        continued = previous is not None and _continues(previous, chunk)
        if continued:
            assert previous is not None
            text = text[overlap_length(previous.content, text):]
        marker = None
        if chunk.page_start is not None and (chunk.page_end or chunk.page_start) > announced:
            last = chunk.page_end or chunk.page_start
            marker = (f"--- page {last} ---" if chunk.page_start >= last
                      else f"--- pages {chunk.page_start}–{last} ---")
            announced = last
        separator = "" if previous is None else "\n\n"
        if marker is not None:
            yield f"{separator}{marker}\n\n{text.lstrip() if continued else text}"
        elif continued:
            yield text  # it starts with the whitespace that followed the overlap
        else:
            yield separator + text
        previous = chunk


def _continues(previous: ChunkText, chunk: ChunkText) -> bool:
    """Whether `chunk` may be a continuation of `previous` (and so start with its overlap)."""
    if chunk.heading_path != previous.heading_path:
        return False
    if chunk.page_start is not None and previous.page_end is not None:
        return chunk.page_start <= previous.page_end
    return True


def overlap_length(previous: str, text: str) -> int:
    """How many leading characters of `text` repeat the end of `previous`: the longest such
    end of at least OVERLAP_MIN_CHARS and at most OVERLAP_MAX_CHARS characters, else 0."""
    window = previous[-OVERLAP_MAX_CHARS:]
    probe = text[:OVERLAP_MIN_CHARS]
    if len(probe) < OVERLAP_MIN_CHARS:
        return 0
    start = window.find(probe)
    while start != -1:  # the first place is the longest overlap
        if text.startswith(window[start:]):
            return len(window) - start
        start = window.find(probe, start + 1)
    return 0
