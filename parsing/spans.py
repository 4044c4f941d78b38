"""Chunks as offsets into their source text, and the token bounds every chunk keeps.

A chunk is an exact slice of its source, or a repeated head followed by a slice (a table's later
chunks, parsing/tables.py), so it is stored as offsets and its text read from the same slices of
the source and of the code-masked copy the wikilinks are read from. `windows` and `bounded` cut
text that has no usable break into pieces of at most TARGET_TOKENS and MAX_TOKENS.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

from core.text_tokens import tokens_count

TARGET_TOKENS = 800
MAX_TOKENS = 1200
OVERLAP_TOKENS = 80

_LEADING_BLANK_LINES = re.compile(r"(?:[ \t]*\n)*")
_LEADING_SPACE = re.compile(r"\s*")
# Where a window or an overlap may start: after a line break, other whitespace, or CJK punctuation.
_BREAK = re.compile(r"\s|[。！？；，、]")


@dataclass(frozen=True, slots=True)
class Unit:
    """A stretch of the source that chunks are packed from, and its token count."""

    start: int
    end: int
    tokens: int


class Span(NamedTuple):
    """One chunk as offsets into its source: source[head_start:head_end] + source[start:end]."""

    start: int
    end: int
    tokens: int
    head_start: int = 0
    head_end: int = 0

    def text(self, source: str) -> str:
        return source[self.head_start:self.head_end] + source[self.start:self.end]



def windows(source: str, start: int, end: int, tokens: int, *,
             target: int = TARGET_TOKENS) -> list[Unit]:
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
        units.append(Unit(position, cut, count))
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


def trim(source: str, start: int, end: int, *, keep_indent: bool) -> tuple[int, int]:
    """Drop leading and trailing whitespace; `keep_indent` keeps the first line's indentation."""
    # A section's own first line may be indented code; a cut inside a line has no indent.
    pattern = _LEADING_BLANK_LINES if keep_indent else _LEADING_SPACE
    leading = pattern.match(source, start, end)
    assert leading is not None  # either pattern matches the empty string
    start = leading.end()
    while end > start and source[end - 1].isspace():
        end -= 1
    return start, end


def bounded(source: str, start: int, end: int) -> list[Span]:
    """The final token count, and a split into windows in the rare case it passes MAX_TOKENS."""
    tokens = tokens_count(source[start:end])
    if tokens <= MAX_TOKENS:
        return [Span(start, end, tokens)]
    spans = []
    for unit in windows(source, start, end, tokens):
        spans.extend(bounded(source, *trim(source, unit.start, unit.end, keep_indent=False)))
    return [span for span in spans if span[0] < span[1]]
