"""Tables cut into chunks by rows, each chunk repeating the table's head.

A table's head is its header row and delimiter row, with the caption right before them when
there is one (a DOCX caption, or a short one-line paragraph right before a note's table). A
table of more than TABLE_TARGET_TOKENS tokens is cut between rows into groups of about that
size, and every chunk starts with the head, so that a row is never read without its column
names and a question that names a row's cells finds a chunk about that row rather than one
holding the whole table, where each row weighs little in the lexical score and in the vector.

Rows are kept whole. A row that alone passes what a chunk may hold beside the head is cut
into windows, each again after the head. A head over TABLE_HEAD_MAX_TOKENS (a table of
thousands of columns) is not repeated: such a table is cut like prose.

parsing/chunking.py finds a note's tables to cut (`tables_to_cut`) and hands the text around
them to the section's usual chunking; a DOCX table is a block of its own (`table_block_spans`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.text_tokens import tokens_count
from parsing.markdown import Section
from parsing.spans import MAX_TOKENS, TARGET_TOKENS, Span, bounded, trim, windows

# The row groups of a cut table: tokens of one chunk, head included. Chosen on the dev split of
# the WikiTableQuestions benchmark (bench/tables.py, docs/benchmarks.md).
TABLE_TARGET_TOKENS = 100
# A longer head is not repeated; with it, a window of a long row still fits under the chunk
# maximum (parsing/chunking.py: MAX_TOKENS 1200 = TARGET_TOKENS 800 + 400).
TABLE_HEAD_MAX_TOKENS = 400
# A one-line paragraph right before a note's table, up to this many tokens, is its caption.
TABLE_CAPTION_MAX_TOKENS = 60
# Text before a cut table (its heading, a sentence about it), up to this many tokens, opens the
# table's first chunk instead of making a small chunk of its own; the same for text after it.
TABLE_LEAD_MAX_TOKENS = 100

# A delimiter row as markdown-it reads one: cells of dashes with optional alignment colons.
_DELIMITER_ROW = re.compile(
    r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$", re.MULTILINE)
_NOT_BLANK = re.compile(r"\S")
# Tokens a head and the text after it may count beyond the sum of their own counts, where the
# tokenizer reads the line break between them together with what follows.
_JOIN_SLACK = 8


@dataclass(frozen=True, slots=True)
class Table:
    """A table cut into row groups: its head (caption, header and delimiter rows) is
    source[head_start:rows_start], its rows source[rows_start:end]."""

    head_start: int
    rows_start: int
    end: int
    head_tokens: int


def head_end(text: str, start: int, end: int) -> int | None:
    """Where the rows of the table in text[start:end] begin: just after its first delimiter
    row; None when there is none."""
    match = _DELIMITER_ROW.search(text, start, end)
    if match is None or "-" not in match.group():
        return None
    newline = text.find("\n", match.end(), end)
    return end if newline == -1 else newline + 1


def second_line_end(text: str, start: int, end: int) -> int:
    """The offset after the second line of text[start:end] (a note table's header and delimiter
    rows, as markdown-it requires them at the start of a table block)."""
    first = text.find("\n", start, end)
    if first == -1:
        return end
    second = text.find("\n", first + 1, end)
    return end if second == -1 else second + 1


def rows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each non-blank line of text[start:end], without its line break and
    trailing white space."""
    bounds = []
    position = start
    while position < end:
        newline = text.find("\n", position, end)
        line_end = end if newline == -1 else newline
        if _NOT_BLANK.search(text, position, line_end):
            last = line_end
            while text[last - 1].isspace():
                last -= 1
            bounds.append((position, last))
        position = line_end + 1
    return bounds


def caption_is(text: str) -> bool:
    """Whether a paragraph right before a table reads as its caption: one short line."""
    stripped = text.strip()
    return (bool(stripped) and "\n" not in stripped
            and tokens_count(stripped) <= TABLE_CAPTION_MAX_TOKENS)


def row_groups(row_tokens: Sequence[int], *, budget: int) -> list[range]:
    """Consecutive rows in groups of at most `budget` tokens (one row at least in each), as
    many as greedy packing makes but of about equal size, so that no last group is a stray
    row or two: the indexes of each group's rows."""
    greedy = 0
    used = budget
    for count in row_tokens:
        if used + count > budget:
            greedy, used = greedy + 1, 0
        used += count
    share = sum(row_tokens) / max(greedy, 1)
    groups: list[range] = []
    first, used, before = 0, 0, 0
    for index, count in enumerate(row_tokens):
        # A row whose middle lies past the next equal share starts a new group.
        if index > first and (used + count > budget
                              or before + count / 2 > share * (len(groups) + 1)):
            groups.append(range(first, index))
            first, used = index, 0
        used += count
        before += count
    if first < len(row_tokens):
        groups.append(range(first, len(row_tokens)))
    return groups


def rows_budget(head_tokens: int) -> int:
    """Tokens of rows one chunk holds beside its head: the target less the head, but never
    below half the target, so that a long head still leaves each chunk a few rows and a table
    makes at most about twice as many chunks as its rows' tokens over the target."""
    return max(TABLE_TARGET_TOKENS - head_tokens, TABLE_TARGET_TOKENS // 2)


def tables_to_cut(section: Section) -> list[Table]:
    """The section's top-level tables of more than TABLE_TARGET_TOKENS, in order, each with
    its caption when the block before it reads as one."""
    source, offsets = section.source, section.block_offsets
    found = []
    for index, kind in enumerate(section.block_types):
        if kind != "table":
            continue
        start = offsets[index]
        end = trim(source, start, offsets[index + 1] if index + 1 < len(offsets)
                   else len(source), keep_indent=True)[1]
        if tokens_count(source[start:end]) <= TABLE_TARGET_TOKENS:
            continue
        rows_start = second_line_end(source, start, end)
        head_start = start
        if index and section.block_types[index - 1] == "paragraph" \
                and caption_is(source[offsets[index - 1]:start]):
            head_start = offsets[index - 1]
        found.append(Table(head_start=head_start, rows_start=rows_start, end=end,
                           head_tokens=tokens_count(source[head_start:rows_start])))
    return found


def table_block_spans(text: str) -> list[Span] | None:
    """The chunks of a DOCX table block (parsing/formats/word.py: the caption, header and
    delimiter rows, then the rows); None for a text that holds no table."""
    rows_start = head_end(text, 0, len(text))
    start, end = trim(text, 0, len(text), keep_indent=False)
    if rows_start is None or start >= end:
        return None
    if tokens_count(text[start:end]) <= TABLE_TARGET_TOKENS:
        return bounded(text, start, end)
    table = Table(head_start=start, rows_start=rows_start, end=end,
                  head_tokens=tokens_count(text[start:rows_start]))
    return table_spans(text, table, lead_start=start, lead_tokens=0)


def table_spans(source: str, table: Table, *, lead_start: int, lead_tokens: int) -> list[Span]:
    """A table's chunks: groups of whole rows, each after the table's head; the first one
    starts at `lead_start` (the short text before the table that it takes along, else the
    head) and holds the head where it is. A head too long to repeat is cut like text, and the
    rows follow without it."""
    head_start, rows_start, head_tokens = table.head_start, table.rows_start, table.head_tokens
    row_bounds = rows(source, rows_start, table.end)
    if not row_bounds:  # a head alone
        return bounded(source, *trim(source, lead_start, table.end, keep_indent=True))
    spans: list[Span] = []
    first_start: int | None = lead_start
    if head_tokens > TABLE_HEAD_MAX_TOKENS:
        spans.extend(bounded(source, *trim(source, lead_start, rows_start, keep_indent=True)))
        head_start, head_tokens, lead_tokens, first_start = rows_start, 0, 0, None
    # A row's count and its line break: the sum is close to the chunk's, which is counted last.
    counts = [tokens_count(source[start:end]) + 1 for start, end in row_bounds]
    # The lead takes room in the first chunk as if it were part of its first row.
    groups = row_groups([counts[0] + lead_tokens, *counts[1:]], budget=rows_budget(head_tokens))
    for number, group in enumerate(groups):
        start, end = row_bounds[group[0]][0], row_bounds[group[-1]][1]
        room = MAX_TOKENS - head_tokens - (lead_tokens if number == 0 else 0) - _JOIN_SLACK
        pieces = [(start, end)]
        if counts[group[0]] > room:  # one row longer than a chunk: windows of it
            cuts = windows(source, start, end, counts[group[0]], target=min(room, TARGET_TOKENS))
            pieces = [piece for piece in (trim(source, unit.start, unit.end, keep_indent=False)
                                          for unit in cuts) if piece[0] < piece[1]]
        for piece_start, piece_end in pieces:
            if first_start is not None:
                span = Span(first_start, piece_end, 0)
                first_start = None
            else:
                span = Span(piece_start, piece_end, 0, head_start, rows_start)
            spans.append(span._replace(tokens=tokens_count(span.text(source))))
    return spans
