"""Heading-aware chunking of a parsed note.

Every chunk belongs to exactly one section, so its heading_path is exact. A section over the target
is cut into units (top-level Markdown blocks, then sentences, then token-sized windows), and the
units are packed greedily; each continuation chunk repeats the tail of the one before it. Chunks
are always exact slices of the section source, which lets wikilinks be read from the code-masked
copy of the same slice. Each unit, overlap tail and finished chunk is tokenised once.
"""

from __future__ import annotations

import hashlib
import math
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.text_tokens import decode, encode, tokens_count
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


def note_chunk(*, note: ParsedNote) -> list[ChunkDraft]:
    """Cut a parsed note into chunks of at most MAX_TOKENS, in document order."""
    drafts: list[ChunkDraft] = []
    for section in note.sections:
        for start, end, tokens in _section_spans(section):
            content = section.source[start:end]
            links = wikilinks_extract(text=section.code_masked[start:end], mask_code=False)
            content_hash = hashlib.sha256(content.encode("utf-8")).hexdigest()
            drafts.append(ChunkDraft(
                chunk_index=len(drafts), content=content, heading_path=list(section.heading_path),
                token_count=tokens, content_hash=content_hash, wikilinks=links.targets,
                wikilink_aliases=links.aliases))
    return drafts


def blocks_chunk(*, blocks: Sequence[Block],
                 ocr_confidence: Mapping[int, float] | None = None) -> list[ChunkDraft]:
    """Cut the blocks of a PDF, DOCX or TXT document into chunks, in order, by the same rules
    as a note's sections (paragraphs or lines, then sentences, then windows); each chunk
    records the pages its text comes from and, for pages read by OCR, the mean confidence."""
    drafts: list[ChunkDraft] = []
    for block in (part for whole in blocks for part in _page_groups(whole)):
        if block.table:
            source = block.text
            spans = _bounded(source, *_trim(source, 0, len(source), keep_indent=False))
        else:
            section = Section(heading_path=list(block.heading_path), level=0, line=1,
                              source=block.text, heading_source=block.text[:block.lead],
                              block_offsets=block.breaks, code_masked=block.text)
            spans = _section_spans(section)
        for start, end, tokens in spans:
            content = block.text[start:end]
            page_start = page_end = None
            facts = None
            if block.pages:
                page_start = _page_at(block.pages, start)
                page_end = _page_at(block.pages, end - 1)
                facts = _ocr_facts(ocr_confidence or {}, page_start, page_end)
            drafts.append(ChunkDraft(
                chunk_index=len(drafts), content=content, heading_path=list(block.heading_path),
                token_count=tokens, content_hash=hashlib.sha256(content.encode()).hexdigest(),
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


def _section_spans(section: Section) -> list[tuple[int, int, int]]:
    """(start, end, token count) of each chunk of one section, as offsets into its source."""
    source = section.source
    # A heading with no body of its own yields no chunk.
    if not section.body.strip():
        return []
    start, end = _trim(source, 0, len(source), keep_indent=True)
    tokens = tokens_count(source[start:end])
    if tokens <= TARGET_TOKENS:
        return [(start, end, tokens)]
    units = _units(source, (0, *section.block_offsets, len(source)))
    if section.heading_source:
        units = _heading_glued(units)
    groups = _rebalance(units, _pack(units))
    spans = []
    previous_start = 0
    for number, (first, last) in enumerate(groups):
        own_start = units[first].start
        chunk_start = (own_start if number == 0
                       else _overlap_start(source, previous_start, own_start))
        previous_start = chunk_start
        end = units[last - 1].end
        # A unit of nothing but whitespace would make a chunk that only repeats the overlap.
        if not source[own_start:end].strip():
            continue
        spans.extend(_bounded(source, *_trim(source, chunk_start, end, keep_indent=number == 0)))
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


def _windows(source: str, start: int, end: int, tokens: int) -> list[_Unit]:
    """Cut text without usable sentence breaks into windows of about equal token counts."""
    # Equal windows that leave room for the overlap avoid a tiny last window.
    size = math.ceil(tokens / math.ceil(tokens / (TARGET_TOKENS - OVERLAP_TOKENS)))
    chars_per_token = (end - start) / tokens
    units = []
    position = start
    while position < end:
        cut = min(end, position + max(1, int(size * chars_per_token)))
        if cut < end:
            cut = _break_before(source, position + (cut - position) // 2, cut)
        count = tokens_count(source[position:cut])
        # The character estimate is an average; dense stretches (emoji, CJK) need a shorter cut.
        while count > TARGET_TOKENS:
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


def _bounded(source: str, start: int, end: int) -> list[tuple[int, int, int]]:
    """The final token count, and a split into windows in the rare case it passes MAX_TOKENS."""
    tokens = tokens_count(source[start:end])
    if tokens <= MAX_TOKENS:
        return [(start, end, tokens)]
    spans = []
    for unit in _windows(source, start, end, tokens):
        spans.extend(_bounded(source, *_trim(source, unit.start, unit.end, keep_indent=False)))
    return [span for span in spans if span[0] < span[1]]
