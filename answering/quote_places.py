"""Where a citation's quote is: the chunk of its block that holds the span, and the citation
fields that place gives.

A block is one chunk or a run of adjacent chunks of one document (answering/context.py), and
each chunk of a run keeps its own heading path, pages and span of the block's text. A quoted
citation names the place of its quote rather than the block's best chunk:
- `heading_path`: the heading path of the chunk holding the quote. A span over chunks of
  different sections takes the part of their paths they share — the section that holds the
  whole span, `[]` (the document) when they share none — since any one chunk's path would name
  a section the rest of the span is not in. `heading` is its last element ("" for none);
- `page_start` / `page_end`: the pages of the chunks holding it, from the first page any of
  them starts on to the last any ends on (null when none has pages);
- `quote_chunk_index`: the chunk (its index in the document) where the span begins, with
  `quote_chunk_start` / `quote_chunk_end` the span's offsets into that chunk's own text (up to
  its end when the span runs on into the next chunk).
A citation without a quote keeps its best chunk's heading, heading path and pages.

`quote` is the span's plain-text reading — Markdown's marks removed (`**P2（High）**` →
`P2（High）`, `` `code` `` → `code`, `[[Note|shown]]` → `shown`) and blanks collapsed — while
`quote_raw` is the span as the block's text holds it: `text[quote_start:quote_end] ==
quote_raw`. Today's quotes never cross a line break, and chunks of a run are joined by a blank
line, so a quote lies within one chunk; a span over several is placed all the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from answering.context import CitedChunk
from answering.quotes import Quote
from parsing.markdown import heading_text

# A citation's quote fields, all null for a block the answer does not cite (or cites without
# support); the citation's place fields change with them only when there is a quote.
QUOTE_FIELDS = ("quote", "quote_raw", "quote_start", "quote_end", "quote_support",
                "quote_chunk_index", "quote_chunk_start", "quote_chunk_end")
PLACE_FIELDS = ("heading", "heading_path", "page_start", "page_end")
_BOLD_LEFT = re.compile(r"\*\*")


@dataclass(frozen=True)
class QuotePlace:
    """The chunks of a block that a span of its text overlaps (in document order), and the
    span's offsets into the first one's own text."""

    chunks: tuple[CitedChunk, ...]
    start: int
    end: int

    @property
    def chunk(self) -> CitedChunk:
        """The chunk where the span begins."""
        return self.chunks[0]

    def fields(self) -> dict[str, Any]:
        """The citation's heading, heading path and pages as this place gives them."""
        path = _shared_prefix([list(chunk.heading_path) for chunk in self.chunks])
        starts = [chunk.page_start for chunk in self.chunks if chunk.page_start is not None]
        ends = [chunk.page_end if chunk.page_end is not None else chunk.page_start
                for chunk in self.chunks if chunk.page_start is not None]
        return {"heading": path[-1] if path else "", "heading_path": path,
                "page_start": min(starts) if starts else None,
                "page_end": max(page for page in ends if page is not None) if ends else None}


def quote_place(*, start: int, end: int, chunks: Sequence[CitedChunk]) -> QuotePlace | None:
    """Where `[start, end)` of a block's text lies among its `chunks`; None when no chunk's
    text holds any of it (a block recorded without its chunks' spans)."""
    held = tuple(chunk for chunk in chunks if chunk.start < end and start < chunk.end)
    if not held:
        return None
    first = held[0]
    return QuotePlace(chunks=held, start=max(start, first.start) - first.start,
                      end=min(end, first.end) - first.start)


def quote_fields(quote: Quote | None, *, chunks: Sequence[CitedChunk]) -> dict[str, Any]:
    """What a citation carries for `quote` of its block (the module docstring): the quote
    fields, and with a quote the place fields of the chunks holding it."""
    if quote is None:
        return dict.fromkeys(QUOTE_FIELDS)
    fields: dict[str, Any] = {"quote": quote_plain(quote.text), "quote_raw": quote.text,
                              "quote_start": quote.start, "quote_end": quote.end,
                              "quote_support": quote.support, "quote_chunk_index": None,
                              "quote_chunk_start": None, "quote_chunk_end": None}
    place = quote_place(start=quote.start, end=quote.end, chunks=chunks)
    if place is not None:
        fields.update(place.fields(), quote_chunk_index=place.chunk.chunk_index,
                      quote_chunk_start=place.start, quote_chunk_end=place.end)
    return fields


def quote_plain(raw: str) -> str:
    """The plain-text reading of a quoted span: its words without Markdown's marks, read as a
    heading's are (parsing/markdown.py); the span itself when nothing but marks is left."""
    # CommonMark leaves `**` as text where it touches CJK text and punctuation on both sides
    # (`**P2（High）**中文`); in a quote those are still bold marks, not the writer's asterisks.
    return " ".join(_BOLD_LEFT.sub("", heading_text(raw)).split()) or raw.strip()


def _shared_prefix(paths: Sequence[list[str]]) -> list[str]:
    shared = list(paths[0])
    for path in paths[1:]:
        length = 0
        while length < min(len(shared), len(path)) and shared[length] == path[length]:
            length += 1
        shared = shared[:length]
    return shared
