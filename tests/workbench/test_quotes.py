"""Quotes of source cards (workbench/pages/quotes.py): where a quote is when its block was a run
of adjacent chunks, the link to it, which cards are unverified, and the offsets a request may
give the source view."""

from __future__ import annotations

import pytest

from knowledge.models import Chunk
from tests.conftest import PAGED_SOURCE
from workbench.pages.quotes import (
    QuoteSpan,
    cited_numbers,
    quote_offsets,
    quote_spans,
    quoted_cards,
)


@pytest.fixture
def run(sample_index) -> list[Chunk]:
    """Three adjacent chunks of one note, as answering/context.py joins them into one block."""
    chunks = list(Chunk.objects.filter(relative_path=PAGED_SOURCE).order_by("chunk_index")[:3])
    assert [chunk.chunk_index for chunk in chunks] == [0, 1, 2]
    return chunks


def card(chunk: Chunk, *, text: str, quote: str, number: int = 1) -> dict:
    """A card of a block whose text is `text`, cited by `chunk`, with `quote` found in it."""
    start = text.index(quote)
    return {"number": number, "chunk_id": chunk.pk, "quote": quote, "quote_start": start,
            "quote_end": start + len(quote), "quote_support": 1.0}


def test_a_quote_of_a_single_chunk_keeps_its_offsets(run):
    quote = run[1].content[5:40]
    assert quote_spans([card(run[1], text=run[1].content, quote=quote)]) == {
        1: QuoteSpan(chunk_id=run[1].pk, start=5, end=40)}


@pytest.mark.parametrize("holder", [0, 2])
def test_a_quote_in_a_run_is_found_in_the_chunk_that_holds_it(run, holder):
    # The run's citation is its best chunk, the middle one; the quote lies in another.
    text = "\n\n".join(chunk.content for chunk in run)
    quote = run[holder].content[-30:]
    spans = quote_spans([card(run[1], text=text, quote=quote)])
    span = spans[1]
    assert span.chunk_id == run[holder].pk
    assert run[holder].content[span.start:span.end] == quote


def test_a_run_starting_at_its_cited_chunk_is_found_too(run):
    text = "\n\n".join(chunk.content for chunk in run[1:])
    quote = run[2].content[:25]
    span = quote_spans([card(run[1], text=text, quote=quote)])[1]
    assert (span.chunk_id, run[2].content[span.start:span.end]) == (run[2].pk, quote)


def test_a_quote_over_two_chunks_is_shown_in_the_first(run):
    text = "\n\n".join(chunk.content for chunk in run[:2])
    quote = run[0].content[-10:] + "\n\n" + run[1].content[:10]
    span = quote_spans([card(run[0], text=text, quote=quote)])[1]
    assert span == QuoteSpan(chunk_id=run[0].pk, start=len(run[0].content) - 10,
                             end=len(run[0].content))


def named(chunk: Chunk, *, text: str, quote: str, holder: Chunk) -> dict:
    """A card as a citation names its quote now: the block's offsets, and the chunk holding
    the quote with the quote's offsets into that chunk's own text."""
    local = holder.content.index(quote)
    return {**card(chunk, text=text, quote=quote), "quote_raw": quote,
            "quote_chunk_index": holder.chunk_index, "quote_chunk_start": local,
            "quote_chunk_end": local + len(quote)}


def test_a_quote_opens_in_the_chunk_its_citation_names(run, config_override):
    # No run is searched (a run of one chunk at most): the citation's own place is enough.
    config_override(rag_context_per_document=1, rag_context_neighbours=0)
    text = "\n\n".join(chunk.content for chunk in run)
    quote = run[2].content[-30:]
    span = quote_spans([named(run[1], text=text, quote=quote, holder=run[2])])[1]
    assert (span.chunk_id, run[2].content[span.start:span.end]) == (run[2].pk, quote)


def test_a_plain_quote_is_found_by_its_raw_span(run):
    # `quote` is the span's plain reading; the chunks hold `quote_raw`.
    text = "\n\n".join(chunk.content for chunk in run)
    raw = run[0].content[-30:]
    shown = {**named(run[1], text=text, quote=raw, holder=run[0]), "quote": "plain reading"}
    span = quote_spans([shown])[1]
    assert (span.chunk_id, run[0].content[span.start:span.end]) == (run[0].pk, raw)
    fallback = {**shown, "quote_chunk_index": None}
    assert quote_spans([fallback])[1] == span


def test_a_named_chunk_that_no_longer_reads_as_the_quote_falls_back_to_the_runs(run):
    text = "\n\n".join(chunk.content for chunk in run)
    quote = run[2].content[-30:]
    stale = named(run[1], text=text, quote=quote, holder=run[2])
    Chunk.objects.filter(pk=run[2].pk).update(content="Rewritten. " + run[2].content)
    # The block's offsets still find it where the runs are what they were: nowhere here.
    assert quote_spans([stale]) == {}
    Chunk.objects.filter(pk=run[2].pk).update(content=run[2].content)
    moved = {**stale, "quote_chunk_index": 0}  # names a chunk that does not hold it
    span = quote_spans([moved])[1]
    assert (span.chunk_id, run[2].content[span.start:span.end]) == (run[2].pk, quote)


def test_a_run_longer_than_rag_context_per_document_is_not_searched(run, config_override):
    # A run holds per_document kept chunks and their neighbours: 2 × (1 + 2 × 0) here.
    config_override(rag_context_per_document=2, rag_context_neighbours=0)
    text = "\n\n".join(chunk.content for chunk in run)
    quote = run[2].content[-30:]
    assert quote_spans([card(run[0], text=text, quote=quote)]) == {}


def test_a_quote_the_chunks_no_longer_read_as_gets_no_link_to_it(run):
    text = run[1].content
    changed = card(run[1], text=text, quote=text[:20])
    Chunk.objects.filter(pk=run[1].pk).update(content="Rewritten since the answer. " + text)
    assert quote_spans([changed]) == {}
    (shown,) = quoted_cards([changed], answer="It says so [1].", checked=True)
    assert shown["href"] == f"/workbench/chunks/{run[1].pk}/"
    assert shown["quote"] == text[:20] and not shown["unverified"]


def test_a_cited_card_without_a_quote_is_unverified_only_when_checked(run):
    cards = [{"number": 1, "chunk_id": run[0].pk, "quote": None},
             {"number": 2, "chunk_id": None, "quote": None},
             {"number": 3, "chunk_id": run[2].pk}]
    answer = "One [1]. Two [1, 2]. Not three."
    shown = quoted_cards(cards, answer=answer, checked=True)
    assert [card["unverified"] for card in shown] == [True, True, False]
    assert [card["href"] for card in shown] == [f"/workbench/chunks/{run[0].pk}/", None,
                                                f"/workbench/chunks/{run[2].pk}/"]
    unchecked = quoted_cards(cards, answer=answer, checked=False)
    assert not any(card["unverified"] for card in unchecked)


def test_markers_are_read_in_every_form_the_server_reads():
    assert cited_numbers("A [1]. B [2, 3]、C 【４】 and [^5]; not [ 6] nor [note].") == [
        1, 2, 3, 4, 5]


@pytest.mark.parametrize("start, end, expected", [
    ("0", "5", (0, 5)), ("3", "10", (3, 10)), ("0", "10", (0, 10)),
    ("0", "11", None), ("5", "5", None), ("6", "2", None), ("-1", "3", None), ("a", "3", None),
    ("٣", "5", None), ("1", "9" * 5000, None), (None, "3", None), ("1", None, None),
])
def test_offsets_from_a_request_must_be_a_span_within_the_text(start, end, expected):
    assert quote_offsets(start, end, length=10) == expected
