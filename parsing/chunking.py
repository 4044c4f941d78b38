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
import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from core.text_tokens import decode, encode, tokens_count
from parsing import tables
from parsing.formats.base import Block
from parsing.formats.ocr import confidence_mean
from parsing.markdown import ParsedNote, Section, wikilinks_extract

TARGET_TOKENS = 800
MAX_TOKENS = 1200
OVERLAP_TOKENS = 80
# A trailing chunk below this takes units from the chunk before it, when that keeps the order.
MIN_TOKENS = 400
# A PDF page with fewer tokens than this is nearly empty (a cover, a figure with its caption) and
# shares its chunk with the next page (blocks_chunk); any page with a sentence of its own keeps
# its own chunks, so a citation names its page even when the pages are short.
PAGE_GROUP_MIN_TOKENS = 12

_SENTENCE_END = re.compile(r"[.!?]+\s+|[。！？]+\s*")
_LEADING_BLANK_LINES = re.compile(r"(?:[ \t]*\n)*")
_LEADING_SPACE = re.compile(r"\s*")
_SPACE = re.compile(r"\s+")
_SNAP_CHARS = 16
# Enough characters to hold OVERLAP_TOKENS tokens of ordinary prose or code.
_MAX_CHARS_PER_TOKEN = 8
# Where a window or an overlap may start: after a line break, other whitespace, or CJK punctuation.
_BREAK = re.compile(r"\s|[。！？；，、]")
# Tokens a head and the text after it may count beyond the sum of their own counts, where the
# tokenizer reads the line break between them together with what follows.
_JOIN_SLACK = 8


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """One chunk ready to embed and store; `content` is an exact slice of the note's Markdown."""

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


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    tokens: int


class _Span(NamedTuple):
    """One chunk as offsets into its source: source[head_start:head_end] + source[start:end]."""

    start: int
    end: int
    tokens: int
    head_start: int = 0
    head_end: int = 0

    def text(self, source: str) -> str:
        return source[self.head_start:self.head_end] + source[self.start:self.end]


@dataclass(frozen=True, slots=True)
class _Table:
    """A table cut into row groups: its head (caption, header and delimiter rows) is
    source[head_start:rows_start], its rows source[rows_start:end]."""

    head_start: int
    rows_start: int
    end: int
    head_tokens: int


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
        spans = _table_block_spans(block.text) if block.table else None
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


def _section_spans(section: Section) -> list[_Span]:
    """The chunks of one section, as offsets into its source."""
    source = section.source
    # A heading with no body of its own yields no chunk.
    if not section.body.strip():
        return []
    heading = bool(section.heading_source)
    cut = _tables_to_cut(section)
    if not cut:
        return _prose_spans(source, 0, len(source), section.block_offsets, heading=heading)
    spans: list[_Span] = []
    position = 0
    for table in cut:
        lead_start, lead_end = _trim(source, position, table.head_start, keep_indent=True)
        lead_tokens = tokens_count(source[lead_start:lead_end])
        if lead_tokens > tables.TABLE_LEAD_MAX_TOKENS:
            spans.extend(_prose_spans(source, position, table.head_start,
                                      section.block_offsets, heading=heading and position == 0))
            lead_start, lead_tokens = table.head_start, 0
        spans.extend(_table_spans(source, table, lead_start=lead_start, lead_tokens=lead_tokens))
        position = table.end
    tail_start, tail_end = _trim(source, position, len(source), keep_indent=True)
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
                 heading: bool) -> list[_Span]:
    """The chunks of source[start:end], cut at `offsets` (block starts) where needed;
    `heading`: it starts with the section's heading, which is never a chunk of its own."""
    first, last = _trim(source, start, end, keep_indent=True)
    if first >= last:
        return []
    tokens = tokens_count(source[first:last])
    if tokens <= TARGET_TOKENS:
        return [_Span(first, last, tokens)]
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
        spans.extend(_bounded(source, *_trim(source, chunk_start, chunk_end,
                                             keep_indent=number == 0)))
    return spans


def _tables_to_cut(section: Section) -> list[_Table]:
    """The section's top-level tables of more than TABLE_TARGET_TOKENS, in order."""
    source, offsets = section.source, section.block_offsets
    found = []
    for index, kind in enumerate(section.block_types):
        if kind != "table":
            continue
        start = offsets[index]
        end = _trim(source, start, offsets[index + 1] if index + 1 < len(offsets)
                    else len(source), keep_indent=True)[1]
        if tokens_count(source[start:end]) <= tables.TABLE_TARGET_TOKENS:
            continue
        rows_start = tables.second_line_end(source, start, end)
        head_start = start
        if index and section.block_types[index - 1] == "paragraph" \
                and tables.caption_is(source[offsets[index - 1]:start]):
            head_start = offsets[index - 1]
        found.append(_Table(head_start=head_start, rows_start=rows_start, end=end,
                            head_tokens=tokens_count(source[head_start:rows_start])))
    return found


def _table_block_spans(text: str) -> list[_Span] | None:
    """The chunks of a DOCX table block (parsing/formats/word.py: the caption, header and
    delimiter rows, then the rows); None for a text that holds no table."""
    rows_start = tables.head_end(text, 0, len(text))
    start, end = _trim(text, 0, len(text), keep_indent=False)
    if rows_start is None or start >= end:
        return None
    if tokens_count(text[start:end]) <= tables.TABLE_TARGET_TOKENS:
        return _bounded(text, start, end)
    table = _Table(head_start=start, rows_start=rows_start, end=end,
                   head_tokens=tokens_count(text[start:rows_start]))
    return _table_spans(text, table, lead_start=start, lead_tokens=0)


def _table_spans(source: str, table: _Table, *, lead_start: int,
                 lead_tokens: int) -> list[_Span]:
    """A table's chunks: groups of whole rows, each after the table's head; the first one
    starts at `lead_start` (the short text before the table that it takes along, else the
    head) and holds the head where it is. A head too long to repeat is cut like text, and the
    rows follow without it."""
    head_start, head_end, head_tokens = table.head_start, table.rows_start, table.head_tokens
    row_bounds = tables.rows(source, head_end, table.end)
    if not row_bounds:  # a head alone
        return _bounded(source, *_trim(source, lead_start, table.end, keep_indent=True))
    spans: list[_Span] = []
    first_start: int | None = lead_start
    if head_tokens > tables.TABLE_HEAD_MAX_TOKENS:
        spans.extend(_bounded(source, *_trim(source, lead_start, head_end, keep_indent=True)))
        head_start, head_tokens, lead_tokens, first_start = head_end, 0, 0, None
    # A row's count and its line break: the sum is close to the chunk's, which is counted last.
    counts = [tokens_count(source[start:end]) + 1 for start, end in row_bounds]
    # The lead takes room in the first chunk as if it were part of its first row.
    groups = tables.row_groups([counts[0] + lead_tokens, *counts[1:]],
                               budget=tables.rows_budget(head_tokens))
    for number, group in enumerate(groups):
        start, end = row_bounds[group[0]][0], row_bounds[group[-1]][1]
        room = MAX_TOKENS - head_tokens - (lead_tokens if number == 0 else 0) - _JOIN_SLACK
        pieces = [(start, end)]
        if counts[group[0]] > room:  # one row longer than a chunk: windows of it
            windows = _windows(source, start, end, counts[group[0]],
                               target=min(room, TARGET_TOKENS))
            pieces = [piece for piece in (_trim(source, unit.start, unit.end, keep_indent=False)
                                          for unit in windows) if piece[0] < piece[1]]
        for piece_start, piece_end in pieces:
            if first_start is not None:
                span = _Span(first_start, piece_end, 0)
                first_start = None
            else:
                span = _Span(piece_start, piece_end, 0, head_start, head_end)
            spans.append(span._replace(tokens=tokens_count(span.text(source))))
    return spans


def _units(source: str, bounds: tuple[int, ...]) -> list[_Unit]:
    """Tile the source with units of at most TARGET_TOKENS: blocks, else sentences, else windows."""
    units = []
    for start, end in zip(bounds, bounds[1:]):
        if start >= end:
            continue
        tokens = tokens_count(source[start:end])
        if tokens <= TARGET_TOKENS:
            units.append(_Unit(start, end, tokens))
            continue
        for sentence_start, sentence_end in _sentences(source, start, end):
            tokens = tokens_count(source[sentence_start:sentence_end])
            if tokens <= TARGET_TOKENS:
                units.append(_Unit(sentence_start, sentence_end, tokens))
            else:
                units.extend(_windows(source, sentence_start, sentence_end, tokens))
    return units


def _heading_glued(units: list[_Unit]) -> list[_Unit]:
    """Join the heading unit to the one after it, so that no chunk is a bare heading."""
    if len(units) < 2 or units[0].tokens + units[1].tokens > MAX_TOKENS - OVERLAP_TOKENS:
        return units
    return [_Unit(units[0].start, units[1].end, units[0].tokens + units[1].tokens), *units[2:]]


def _sentences(source: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    position = start
    for match in _SENTENCE_END.finditer(source, start, end):
        spans.append((position, match.end()))
        position = match.end()
    if position < end:
        spans.append((position, end))
    return spans


def _windows(source: str, start: int, end: int, tokens: int, *,
             target: int = TARGET_TOKENS) -> list[_Unit]:
    """Cut text without usable sentence breaks into windows of about equal token counts, at
    most `target` each."""
    # Equal windows that leave room for the overlap avoid a tiny last window.
    size = math.ceil(tokens / math.ceil(tokens / (target - OVERLAP_TOKENS)))
    chars_per_token = (end - start) / tokens
    units = []
    position = start
    while position < end:
        cut = min(end, position + max(1, int(size * chars_per_token)))
        if cut < end:
            cut = _break_before(source, position + (cut - position) // 2, cut)
        count = tokens_count(source[position:cut])
        # The character estimate is an average; dense stretches (emoji, CJK) need a shorter cut.
        while count > target:
            cut = position + max(1, (cut - position) * size // count)
            count = tokens_count(source[position:cut])
        units.append(_Unit(position, cut, count))
        position = cut
    return units


def _break_before(source: str, low: int, cut: int) -> int:
    """The last break position in (low, cut], else `cut` itself."""
    newline = source.rfind("\n", low, cut)
    if newline != -1:
        return newline + 1
    for position in range(cut - 1, low - 1, -1):
        if _BREAK.match(source, position):
            return position + 1
    return cut


def _pack(units: list[_Unit]) -> list[tuple[int, int]]:
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


def _rebalance(units: list[_Unit], groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
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


def _trim(source: str, start: int, end: int, *, keep_indent: bool) -> tuple[int, int]:
    """Drop leading and trailing whitespace; `keep_indent` keeps the first line's indentation."""
    # A section's own first line may be indented code; a cut inside a line has no indent.
    pattern = _LEADING_BLANK_LINES if keep_indent else _LEADING_SPACE
    leading = pattern.match(source, start, end)
    assert leading is not None  # either pattern matches the empty string
    start = leading.end()
    while end > start and source[end - 1].isspace():
        end -= 1
    return start, end


def _bounded(source: str, start: int, end: int) -> list[_Span]:
    """The final token count, and a split into windows in the rare case it passes MAX_TOKENS."""
    tokens = tokens_count(source[start:end])
    if tokens <= MAX_TOKENS:
        return [_Span(start, end, tokens)]
    spans = []
    for unit in _windows(source, start, end, tokens):
        spans.extend(_bounded(source, *_trim(source, unit.start, unit.end, keep_indent=False)))
    return [span for span in spans if span[0] < span[1]]
