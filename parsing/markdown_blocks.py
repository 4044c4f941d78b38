"""The block-level Markdown parser of notes: markdown-it with block rules only, and paragraphs
whose lines are skipped in jumps instead of one by one.

markdown-it's `paragraph` and `lheading` rules walk a paragraph line by line and, for every
line, call each rule that may interrupt a paragraph (table, fence, blockquote, hr, list,
html_block, heading): about 8 µs a line in Python, so a 5 MB paragraph of short lines took over
10 s. Here both rules first jump to the next line that could matter at all — an empty line, or
one whose first characters could start one of those constructs or a setext underline, or that
holds a `|` — found once per parse with one regular expression. Every other line is a plain
continuation line whatever the rules would say, so the tokens are exactly markdown-it's.

Given a TextBudget, the parser counts every block as it starts it (RAG_DOCUMENT_MAX_PARAGRAPHS):
a note of more blocks is refused at the limit, before the rest is parsed.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.common.utils import mdTrim
from markdown_it.rules_block.state_block import StateBlock
from markdown_it.token import Token

from parsing.formats.base import TextBudget

# A line that may end a paragraph or underline it: empty, or starting (after indentation) like a
# fence, blockquote, thematic break, list item, HTML block, ATX or setext heading; or holding a
# `|` (a table header row). Any line that is not matched here cannot end a paragraph.
_STOP_LINE = re.compile(r"^[ \t]*(?:```|~~~|[>*_+=#<-]|\d{1,9}[.)]|$)|^[^\n|]*\|", re.MULTILINE)
_STOPS_KEY = "_localrag_stop_lines"
_BUDGET_KEY = "_localrag_budget"
# A line that could make a text more than paragraphs: any stop line but an empty one, an indented
# line (code after a blank line), or a link reference definition.
_NOT_PARAGRAPH_LINE = re.compile(
    r"^(?:[ \t]*(?:```|~~~|[>*_+=#<-]|\d{1,9}[.)])|[^\n|]*\||(?: {4}|[ ]{0,3}\t)|[ ]{0,3}\[)",
    re.MULTILINE)
_BLANK_LINE = re.compile(r"^[ \t]*$", re.MULTILINE)


@lru_cache(maxsize=1)
def block_parser() -> MarkdownIt:
    """markdown-it (CommonMark + tables) with block rules only and the jumping paragraph rules."""
    # Inline tokens would cost most of the parse and nothing in ingest reads them.
    parser = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    parser.block.ruler.at("paragraph", _paragraph)
    parser.block.ruler.at("lheading", _lheading)
    parser.block.ruler.before("table", "block_count", _block_count)
    return parser


def blocks_parse(text: str, *, budget: TextBudget | None = None) -> list[Token]:
    """The block tokens of `text`, exactly as block_parser() gives them; with `budget`, each
    block counted as a paragraph as it is parsed. A text of plain paragraphs only (no line that
    could start anything else) is tokenised here directly: for such a text markdown-it's
    per-character set-up is most of the time."""
    if "\r" in text or "\0" in text or _NOT_PARAGRAPH_LINE.search(text):
        return block_parser().parse(text, {_BUDGET_KEY: budget} if budget is not None else None)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # markdown-it counts no line after a final newline
    tokens: list[Token] = []
    first = 0
    for number, line in enumerate(lines) if _BLANK_LINE.search(text) else ():
        if not line.strip(" \t"):
            _paragraph_tokens(tokens, lines, first, number, budget)
            first = number + 1
    _paragraph_tokens(tokens, lines, first, len(lines), budget)
    return tokens


def _paragraph_tokens(tokens: list[Token], lines: list[str], first: int, end: int,
                      budget: TextBudget | None) -> None:
    if first >= end:
        return
    if budget is not None:
        budget.paragraph()
    parts: tuple[tuple[str, str, Literal[-1, 0, 1], int], ...] = (
        ("paragraph_open", "p", 1, 0), ("inline", "", 0, 1), ("paragraph_close", "p", -1, 0))
    for kind, tag, nesting, level in parts:
        token = Token(kind, tag, nesting, level=level, block=True)
        if kind != "paragraph_close":
            token.map = [first, end]
        if kind == "inline":
            token.content = mdTrim("\n".join(lines[first:end]))
            token.children = []
        tokens.append(token)


def _block_count(state: StateBlock, startLine: int, endLine: int, silent: bool) -> bool:
    """The first rule tried where any block starts, at every depth: counts the block in the
    parse's budget, and never matches (the rules after it make the block)."""
    budget = state.env.get(_BUDGET_KEY)
    if budget is not None and not silent:
        budget.paragraph()
    return False


def _next_stop(state: StateBlock, line: int) -> int:
    """The first line at or after `line` that could end the paragraph (or state.lineMax)."""
    stops = state.env.get(_STOPS_KEY)
    if stops is None or stops[0] is not state.src:
        lines, number, previous = [], 0, 0
        for match in _STOP_LINE.finditer(state.src):
            number += state.src.count("\n", previous, match.start())
            previous = match.start()
            lines.append(number)
        stops = (state.src, lines)
        state.env[_STOPS_KEY] = stops
    lines = stops[1]
    index = bisect_left(lines, line)
    return lines[index] if index < len(lines) else state.lineMax


def _interrupted(state: StateBlock, line: int, end: int) -> bool:
    return any(rule(state, line, end, True) for rule in state.md.block.ruler.getRules("paragraph"))


def _paragraph(state: StateBlock, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's paragraph rule, jumping over lines that cannot end the paragraph."""
    next_line = startLine + 1
    end_line = state.lineMax
    old_parent = state.parentType
    state.parentType = "paragraph"
    while next_line < end_line:
        next_line = _next_stop(state, next_line)
        if next_line >= end_line or state.isEmpty(next_line):
            break
        # Indented (a lazy continuation) or already checked by a blockquote: not an end.
        if (state.sCount[next_line] - state.blkIndent > 3 or state.sCount[next_line] < 0
                or not _interrupted(state, next_line, end_line)):
            next_line += 1
            continue
        break
    next_line = min(next_line, end_line)
    content = mdTrim(state.getLines(startLine, next_line, state.blkIndent, False))
    state.line = next_line
    token = state.push("paragraph_open", "p", 1)
    token.map = [startLine, state.line]
    token = state.push("inline", "", 0)
    token.content = content
    token.map = [startLine, state.line]
    token.children = []
    state.push("paragraph_close", "p", -1)
    state.parentType = old_parent
    return True


def _lheading(state: StateBlock, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's setext-heading rule, jumping over lines that cannot end the paragraph."""
    if state.is_code_block(startLine):
        return False
    level = None
    marker = ""
    next_line = startLine + 1
    old_parent = state.parentType
    state.parentType = "paragraph"  # the paragraph's terminator rules apply
    while next_line < endLine:
        next_line = _next_stop(state, next_line)
        if next_line >= endLine or state.isEmpty(next_line):
            break
        if state.sCount[next_line] - state.blkIndent > 3:
            next_line += 1
            continue
        if state.sCount[next_line] >= state.blkIndent:
            position = state.bMarks[next_line] + state.tShift[next_line]
            maximum = state.eMarks[next_line]
            if position < maximum and state.src[position] in ("-", "="):
                marker = state.src[position]
                position = state.skipSpaces(state.skipCharsStr(position, marker))
                if position >= maximum:
                    level = 1 if marker == "=" else 2
                    break
        if state.sCount[next_line] < 0 or not _interrupted(state, next_line, endLine):
            next_line += 1
            continue
        break
    if not level:
        # As markdown-it does: the parent type stays "paragraph" for the paragraph rule next.
        return False
    content = mdTrim(state.getLines(startLine, next_line, state.blkIndent, False))
    state.line = next_line + 1
    token = state.push("heading_open", "h" + str(level), 1)
    token.markup = marker
    token.map = [startLine, state.line]
    token = state.push("inline", "", 0)
    token.content = content
    token.map = [startLine, state.line - 1]
    token.children = []
    token = state.push("heading_close", "h" + str(level), -1)
    token.markup = marker
    state.parentType = old_parent
    return True
