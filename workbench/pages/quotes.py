"""Verified citations on the workbench's pages (answering/quotes.py finds them): which source
cards the answer cites without a verified quote, the link that opens a card's quote in the source
view, and the source view's chunk text with that span marked.

A block is one chunk, or a run of adjacent chunks of one document joined with RUN_SEPARATOR,
cited by the run's best chunk (answering/context.py). A citation names the chunk its quote
begins in (`quote_chunk_index`) and the span's offsets into that chunk's own text
(`quote_chunk_start`, `quote_chunk_end`: answering/quote_places.py), so the link opens that
chunk of the cited chunk's document at those offsets, once its text there still reads as the
quote. An answer recorded before citations named that chunk, or whose chunks changed since,
has only the block's offsets (`quote_start`/`quote_end`): runs are then tried from the cited
chunk backwards, each at most RAG_CONTEXT_PER_DOCUMENT × (1 + 2 × RAG_CONTEXT_NEIGHBOURS) chunks
long (no run is longer), for one whose text reads as the quote there. A quote that no chunk
reads as any more (the passage changed) gets no offsets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from answering.citations import MARKER_PATTERN
from answering.context import RUN_SEPARATOR
from core.config import get_config
from knowledge.models import Chunk

_MARKER = re.compile(MARKER_PATTERN)
_NUMBER = re.compile(r"\d+")
_CHUNK_FIELDS = ("id", "document_id", "chunk_index", "content")
# Offsets from a request longer than this are refused before int() sees them.
_OFFSET_DIGITS_MAX = 12


@dataclass(frozen=True)
class QuoteSpan:
    """Where a quote is in one chunk: `content[start:end]`."""

    chunk_id: int
    start: int
    end: int
    # The chunk's text, for a card that shows the chunk its quote is in.
    content: str = field(default="", compare=False, repr=False)


def cited_numbers(text: str) -> list[int]:
    """The citation numbers of an answer's markers, in order, once per marker they are in (as
    answering/quotes.py reads them)."""
    return [int(digits) for marker in _MARKER.finditer(text or "")
            for digits in _NUMBER.findall(marker.group(0))]


def quoted_cards(cards: Sequence[dict[str, Any]], *, answer: str, checked: bool,
                 excerpt: Callable[[str, str], str] | None = None) -> list[dict[str, Any]]:
    """The cards with their quote, `href` (the source view, at the quote when it is found)
    and `unverified`: cited by a marker of `answer` without a quote. `checked` says whether
    the answer's citations were verified at all (a model-written answer from the knowledge).
    A card whose quote is in another chunk of its block than the one it was made of shows
    that chunk's `excerpt` (its text and the card's source), as its heading and pages name
    it."""
    cited = set(cited_numbers(answer)) if checked else set()
    spans = quote_spans(cards)
    quoted = []
    for card in cards:
        span = spans.get(card["number"])
        href = None
        shown = {}
        if span is not None:
            href = (reverse("workbench:source", args=[span.chunk_id]) + "?"
                    + urlencode({"quote_start": span.start, "quote_end": span.end}))
            if excerpt is not None and span.chunk_id != card.get("chunk_id"):
                shown["excerpt"] = excerpt(span.content, card["source"])
        elif card.get("chunk_id"):
            href = reverse("workbench:source", args=[card["chunk_id"]])
        quote = card.get("quote") or None
        quoted.append({**card, **shown, "quote": quote, "href": href,
                       "unverified": card["number"] in cited and quote is None})
    return quoted


def quote_spans(cards: Sequence[dict[str, Any]]) -> dict[int, QuoteSpan]:
    """The chunk and offsets of each linked card's quote, by card number, where the chunks'
    text still reads as the quote."""
    wanted = [card for card in cards if card.get("chunk_id") and _offsets_of(card) is not None]
    if not wanted:
        return {}
    rows = {row["id"]: row for row in Chunk.objects.filter(
        id__in=[card["chunk_id"] for card in wanted]).values(*_CHUNK_FIELDS)}
    # The chunk each citation names as holding its quote, in the cited chunk's own document.
    places = {(rows[card["chunk_id"]]["document_id"], card["quote_chunk_index"])
              for card in wanted if card["chunk_id"] in rows and _chunk_offsets_of(card)}
    holders = _chunks_at(places)
    spans: dict[int, QuoteSpan] = {}
    in_runs = []
    for card in wanted:
        row = rows.get(card["chunk_id"])
        if row is None:
            continue
        index = card.get("quote_chunk_index")
        span = _span_named(card, holders.get((row["document_id"], index))
                           if type(index) is int else None)
        if span is None:
            span = _span_in_chunk(card, row)
        if span is not None:
            spans[card["number"]] = span
        else:
            in_runs.append((card, row))
    if in_runs:
        config = get_config()
        # A run holds up to per_document kept chunks, each with its neighbours either way.
        run_limit = config.rag_context_per_document * (1 + 2 * config.rag_context_neighbours)
        neighbours = _neighbours([row for _, row in in_runs], run_limit=run_limit)
        for card, row in in_runs:
            span = _span_in_run(card, row, neighbours, run_limit=run_limit)
            if span is not None:
                spans[card["number"]] = span
    return spans


def _raw(card: Mapping[str, Any]) -> str:
    """The quoted span as the block's text holds it: `quote_raw`, or, in an answer recorded
    before that field, `quote` itself."""
    raw = card.get("quote_raw")
    return raw if isinstance(raw, str) and raw else card["quote"]


def _offsets_of(card: Mapping[str, Any]) -> tuple[int, int] | None:
    start, end, quote = card.get("quote_start"), card.get("quote_end"), card.get("quote")
    if (isinstance(quote, str) and quote and type(start) is int and type(end) is int
            and 0 <= start < end):
        return start, end
    return None


def _chunk_offsets_of(card: Mapping[str, Any]) -> tuple[int, int] | None:
    start, end = card.get("quote_chunk_start"), card.get("quote_chunk_end")
    if (type(card.get("quote_chunk_index")) is int and type(start) is int and type(end) is int
            and 0 <= start < end):
        return start, end
    return None


def _chunks_at(places: Iterable[tuple[int, int]]) -> dict[tuple[int, int], dict[str, Any]]:
    """The chunks at these (document, chunk index) places."""
    at = Q(pk__in=[])
    for document_id, chunk_index in places:
        at |= Q(document_id=document_id, chunk_index=chunk_index)
    return {(row["document_id"], row["chunk_index"]): row
            for row in Chunk.objects.filter(at).values(*_CHUNK_FIELDS)}


def _span_named(card: Mapping[str, Any], holder: Mapping[str, Any] | None) -> QuoteSpan | None:
    """The span in the chunk the citation names, if its text there is the quote's beginning
    (all of it, unless the quote runs on into the next chunk)."""
    offsets = _chunk_offsets_of(card)
    if holder is None or offsets is None:
        return None
    start, end = offsets
    if holder["content"][start:end] != _raw(card)[:end - start]:
        return None
    return QuoteSpan(chunk_id=holder["id"], start=start, end=end, content=holder["content"])


def _span_in_chunk(card: Mapping[str, Any], row: Mapping[str, Any]) -> QuoteSpan | None:
    """The span in the cited chunk itself, for a block of that chunk alone."""
    start, end = _offsets_of(card) or (0, 0)
    if row["content"][start:end] != _raw(card):
        return None
    return QuoteSpan(chunk_id=row["id"], start=start, end=end, content=row["content"])


def _neighbours(rows: Iterable[dict[str, Any]], *,
                run_limit: int) -> dict[tuple[int, int], dict[str, Any]]:
    """The chunks around each of `rows` that a run with it could hold, by (document, index)."""
    around = Q(pk__in=[])
    for row in rows:
        around |= Q(document_id=row["document_id"],
                    chunk_index__range=(row["chunk_index"] - run_limit + 1,
                                        row["chunk_index"] + run_limit - 1))
    return {(row["document_id"], row["chunk_index"]): row
            for row in Chunk.objects.filter(around).values(*_CHUNK_FIELDS)}


def _span_in_run(card: Mapping[str, Any], cited: Mapping[str, Any],
                 chunks: Mapping[tuple[int, int], dict[str, Any]], *,
                 run_limit: int) -> QuoteSpan | None:
    start, end = _offsets_of(card) or (0, 0)
    document, index = cited["document_id"], cited["chunk_index"]
    for first in range(index, index - run_limit, -1):
        run = []
        for member in range(first, first + run_limit):
            chunk = chunks.get((document, member))
            if chunk is None:
                break
            run.append(chunk)
        if first + len(run) <= index:  # a gap between this start and the cited chunk
            continue
        if RUN_SEPARATOR.join(chunk["content"] for chunk in run)[start:end] == _raw(card):
            return _span_of(run, start=start, end=end)
    return None


def _span_of(run: Sequence[Mapping[str, Any]], *, start: int, end: int) -> QuoteSpan | None:
    """The part of run[start:end] in the chunk where it starts (a quote running on into the next
    chunk is shown up to the end of its first)."""
    offset = 0
    for chunk in run:
        length = len(chunk["content"])
        if start < offset + length:
            local_start, local_end = max(start - offset, 0), min(end - offset, length)
            if local_start >= local_end:
                return None
            return QuoteSpan(chunk_id=chunk["id"], start=local_start, end=local_end,
                             content=chunk["content"])
        offset += length + len(RUN_SEPARATOR)
    return None


def quote_offsets(start: str | None, end: str | None, *, length: int) -> tuple[int, int] | None:
    """Offsets from a request into a text of `length` characters, or None unless both are
    decimal integers with 0 <= start < end <= length."""
    if start is None or end is None or not (_is_offset(start) and _is_offset(end)):
        return None
    first, last = int(start), int(end)
    return (first, last) if first < last <= length else None


def _is_offset(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= _OFFSET_DIGITS_MAX


def marked_text(text: str, span: tuple[int, int] | None) -> SafeString:
    """`text` escaped, with `text[start:end]` in a <mark> when `span` is given."""
    if span is None:
        return escape(text)
    start, end = span
    return mark_safe(f'{escape(text[:start])}<mark class="quote" id="quote" '
                     f'data-scroll-into-view>{escape(text[start:end])}</mark>'
                     f"{escape(text[end:])}")
