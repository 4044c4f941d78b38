"""Heading-aware chunking of a parsed note.

Every chunk belongs to exactly one section, so its heading_path is exact. A section over the target
is cut into units (top-level Markdown blocks, then sentences, then token-sized windows), and the
units are packed greedily; each continuation chunk repeats the tail of the one before it. A table
of more than TABLE_TARGET_TOKENS is cut apart from the text around it, into groups of whole rows
that each repeat the table's head (parsing/tables.py). A chunk is an exact slice of the section
source, or for a table's later chunks the head's slice followed by the rows' slice, which lets
wikilinks be read from the code-masked copy of the same slices. Each unit, overlap tail and
finished chunk is tokenised once.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.text_tokens import decode, encode, tokens_count
from parsing import tables
from parsing.formats.base import Block
from parsing.formats.ocr import confidence_mean
from parsing.markdown import ParsedNote, Section, wikilinks_extract
from parsing.spans import (
    MAX_TOKENS,
    OVERLAP_TOKENS,
    TARGET_TOKENS,
    Span,
    Unit,
    bounded,
    trim,
    windows,
)

# A trailing chunk below this takes units from the chunk before it, when that keeps the order.
MIN_TOKENS = 400
# A PDF page with fewer tokens than this is nearly empty (a cover, a figure with its caption) and
# shares its chunk with the next page (blocks_chunk); any page with a sentence of its own keeps
# its own chunks, so a citation names its page even when the pages are short.
PAGE_GROUP_MIN_TOKENS = 12

_SENTENCE_END = re.compile(r"[.!?]+\s+|[。！？]+\s*")
_SPACE = re.compile(r"\s+")
_SNAP_CHARS = 16
# Enough characters to hold OVERLAP_TOKENS tokens of ordinary prose or code.
_MAX_CHARS_PER_TOKEN = 8


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """One chunk ready to embed and store; `content` is an exact slice of the note's Markdown,
    or for a table's later chunks the table's head followed by one (parsing/tables.py)."""

    chunk_index: int
    content: str
    heading_path: list[str]
    token_count: int
    content_hash: str
    wikilinks: list[str]
    wikilink_aliases: dict[str, list[str]]
    # Documents with pages (PDF): the 1-based pages the chunk's text comes from.
    page_start: int | None = None
    page_end: int | None = None
    # Facts stored in chunks.metadata besides the wikilink aliases (OCR and its confidence).
    facts: dict[str, Any] | None = None


def note_chunk(*, note: ParsedNote) -> list[ChunkDraft]:
    """Cut a parsed note into chunks of at most MAX_TOKENS, in document order."""
    drafts: list[ChunkDraft] = []
    for section in note.sections:
        for span in _section_spans(section):
            content = span.text(section.source)
            links = wikilinks_extract(text=span.text(section.code_masked), mask_code=False)
            content_hash = hashlib.sha256(content.encode("utf-8")).hexdigest()
            drafts.append(ChunkDraft(
                chunk_index=len(drafts), content=content, heading_path=list(section.heading_path),
                token_count=span.tokens, content_hash=content_hash, wikilinks=links.targets,
                wikilink_aliases=links.aliases))
    return drafts


def blocks_chunk(*, blocks: Sequence[Block],
                 ocr_confidence: Mapping[int, float] | None = None) -> list[ChunkDraft]:
    """Cut the blocks of a PDF, DOCX or TXT document into chunks, in order, by the same rules
    as a note's sections (paragraphs or lines, then sentences, then windows; a table block by
    rows); each chunk records the pages its text comes from and, for pages read by OCR, the
    mean confidence."""
    drafts: list[ChunkDraft] = []
    # A table is not cut at page breaks: its pieces would lose the head they repeat.
    for block in (part for whole in blocks
                  for part in ([whole] if whole.table else _page_groups(whole))):
        spans = tables.table_block_spans(block.text) if block.table else None
        if spans is None:
            section = Section(heading_path=list(block.heading_path), level=0, line=1,
                              source=block.text, heading_source=block.text[:block.lead],
                              block_offsets=block.breaks, code_masked=block.text)
            spans = _section_spans(section)
        for span in spans:
            content = span.text(block.text)
            page_start = page_end = None
            facts = None
            if block.pages:
                # The pages of the chunk's own text; a repeated head is not its evidence.
                page_start = _page_at(block.pages, span.start)
                page_end = _page_at(block.pages, span.end - 1)
                facts = _ocr_facts(ocr_confidence or {}, page_start, page_end)
            drafts.append(ChunkDraft(
                chunk_index=len(drafts), content=content, heading_path=list(block.heading_path),
                token_count=span.tokens,
                content_hash=hashlib.sha256(content.encode()).hexdigest(),
                wikilinks=[], wikilink_aliases={}, page_start=page_start, page_end=page_end,
                facts=facts))
    return drafts


def _page_groups(block: Block) -> list[Block]:
    """A block spanning pages, cut at page breaks into runs of whole pages: a run ends at the
    first page break after it holds PAGE_GROUP_MIN_TOKENS tokens. Chunks then cross a page
    break only where pages are nearly empty, and a citation names the page, not a range."""
    if len(block.pages) < 2:
        return [block]
    ends = [offset for offset, _ in block.pages[1:]] + [len(block.text)]
    groups: list[Block] = []
    pages: list[tuple[int, int]] = []
    start, tokens = 0, 0
    for (offset, page), end in zip(block.pages, ends):
        if pages and tokens >= PAGE_GROUP_MIN_TOKENS:
            groups.append(_block_part(block, start, offset, pages))
            start, tokens, pages = offset, 0, []
        pages.append((offset - start, page))
        tokens += tokens_count(block.text[offset:end])
    groups.append(_block_part(block, start, len(block.text), pages))
    return groups


def _block_part(block: Block, start: int, end: int, pages: list[tuple[int, int]]) -> Block:
    return Block(text=block.text[start:end], heading_path=block.heading_path,
                 pages=tuple(pages), lead=block.lead if start == 0 else 0,
                 breaks=tuple(offset - start for offset in block.breaks if start < offset < end))


def _page_at(pages: tuple[tuple[int, int], ...], offset: int) -> int:
    """The page number holding `offset` of a block's text."""
    return pages[max(0, bisect_right(pages, (offset, float("inf"))) - 1)][1]


def _ocr_facts(confidence: Mapping[int, float], first: int, last: int) -> dict[str, Any] | None:
    scores = [confidence[page] for page in range(first, last + 1) if page in confidence]
    if not scores:
        return None
    return {"ocr": True, "ocr_confidence": confidence_mean(scores)}


def _section_spans(section: Section) -> list[Span]:
    """The chunks of one section, as offsets into its source."""
    source = section.source
    # A heading with no body of its own yields no chunk.
    if not section.body.strip():
        return []
    heading = bool(section.heading_source)
    cut = tables.tables_to_cut(section)
    if not cut:
        return _prose_spans(source, 0, len(source), section.block_offsets, heading=heading)
    spans: list[Span] = []
    position = 0
    for table in cut:
        lead_start, lead_end = trim(source, position, table.head_start, keep_indent=True)
        lead_tokens = tokens_count(source[lead_start:lead_end])
        if lead_tokens > tables.TABLE_LEAD_MAX_TOKENS:
            spans.extend(_prose_spans(source, position, table.head_start,
                                      section.block_offsets, heading=heading and position == 0))
            lead_start, lead_tokens = table.head_start, 0
        spans.extend(tables.table_spans(source, table, lead_start=lead_start,
                                        lead_tokens=lead_tokens))
        position = table.end
    tail_start, tail_end = trim(source, position, len(source), keep_indent=True)
    if tail_start < tail_end:
        last = spans[-1]
        joined = tokens_count(last.text(source) + source[last.end:tail_end])
        if tokens_count(source[tail_start:tail_end]) <= tables.TABLE_LEAD_MAX_TOKENS \
                and joined <= MAX_TOKENS:
            spans[-1] = last._replace(end=tail_end, tokens=joined)
        else:
            spans.extend(_prose_spans(source, position, len(source), section.block_offsets,
                                      heading=False))
    return spans


def _prose_spans(source: str, start: int, end: int, offsets: Sequence[int], *,
                 heading: bool) -> list[Span]:
    """The chunks of source[start:end], cut at `offsets` (block starts) where needed;
    `heading`: it starts with the section's heading, which is never a chunk of its own."""
    first, last = trim(source, start, end, keep_indent=True)
    if first >= last:
        return []
    tokens = tokens_count(source[first:last])
    if tokens <= TARGET_TOKENS:
        return [Span(first, last, tokens)]
    inner = offsets[bisect_right(offsets, start):bisect_left(offsets, end)]
    units = _units(source, (start, *inner, end))
    if heading:
        units = _heading_glued(units)
    groups = _rebalance(units, _pack(units))
    spans = []
    previous_start = start
    for number, (first_unit, last_unit) in enumerate(groups):
        own_start = units[first_unit].start
        chunk_start = (own_start if number == 0
                       else _overlap_start(source, previous_start, own_start))
        previous_start = chunk_start
        chunk_end = units[last_unit - 1].end
        # A unit of nothing but whitespace would make a chunk that only repeats the overlap.
        if not source[own_start:chunk_end].strip():
            continue
        spans.extend(bounded(source, *trim(source, chunk_start, chunk_end,
                                             keep_indent=number == 0)))
    return spans


def _units(source: str, bounds: tuple[int, ...]) -> list[Unit]:
    """Tile the source with units of at most TARGET_TOKENS: blocks, else sentences, else windows."""
    units = []
    for start, end in zip(bounds, bounds[1:]):
        if start >= end:
            continue
        tokens = tokens_count(source[start:end])
        if tokens <= TARGET_TOKENS:
            units.append(Unit(start, end, tokens))
            continue
        for sentence_start, sentence_end in _sentences(source, start, end):
            tokens = tokens_count(source[sentence_start:sentence_end])
            if tokens <= TARGET_TOKENS:
                units.append(Unit(sentence_start, sentence_end, tokens))
            else:
                units.extend(windows(source, sentence_start, sentence_end, tokens))
    return units


def _heading_glued(units: list[Unit]) -> list[Unit]:
    """Join the heading unit to the one after it, so that no chunk is a bare heading."""
    if len(units) < 2 or units[0].tokens + units[1].tokens > MAX_TOKENS - OVERLAP_TOKENS:
        return units
    return [Unit(units[0].start, units[1].end, units[0].tokens + units[1].tokens), *units[2:]]


def _sentences(source: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    position = start
    for match in _SENTENCE_END.finditer(source, start, end):
        spans.append((position, match.end()))
        position = match.end()
    if position < end:
        spans.append((position, end))
    return spans


def _pack(units: list[Unit]) -> list[tuple[int, int]]:
    """Greedy groups [first, last) of units; every group holds at least one unit."""
    groups: list[tuple[int, int]] = []
    first = 0
    while first < len(units):
        # Continuation chunks start with the overlap, so they pack that much less.
        budget = TARGET_TOKENS - (OVERLAP_TOKENS if groups else 0)
        last, total = first + 1, units[first].tokens
        while last < len(units) and total + units[last].tokens <= budget:
            total += units[last].tokens
            last += 1
        groups.append((first, last))
        first = last
    return groups


def _rebalance(units: list[Unit], groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Move units from the second-to-last group into a small last group while it stays smaller."""
    while len(groups) >= 2:
        (first, middle), (_, last) = groups[-2], groups[-1]
        if middle - first < 2:
            break
        tail = sum(unit.tokens for unit in units[middle:last])
        head = sum(unit.tokens for unit in units[first:middle])
        moved = units[middle - 1].tokens
        if tail >= MIN_TOKENS or tail + moved > head - moved:
            break
        groups[-2:] = [(first, middle - 1), (middle - 1, last)]
    return groups


def _overlap_start(source: str, floor: int, end: int) -> int:
    """Where a continuation chunk begins: the last OVERLAP_TOKENS tokens before `end`."""
    window_start = max(floor, end - OVERLAP_TOKENS * _MAX_CHARS_PER_TOKEN)
    tail = source[window_start:end]
    tokens = encode(tail)
    if len(tokens) <= OVERLAP_TOKENS:
        return window_start
    start = end - len(tail) * OVERLAP_TOKENS // len(tokens)
    # A token boundary can fall inside a multi-byte character; a token or two more reaches one.
    for extra in range(4):
        text = decode(tokens[-(OVERLAP_TOKENS + extra):])
        if tail.endswith(text):
            start = end - len(text)
            break
    # A token may begin inside a word; start at the next word when one begins close by.
    snap = _SPACE.search(source, start, min(end, start + _SNAP_CHARS))
    return snap.end() if snap else start
