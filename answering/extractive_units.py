"""A source block's text as the units an extractive answer is made of (answering/extractive.py).

A unit is a piece of the block's text that can stand in an answer as it is:
- a sentence of a paragraph: it ends at 。！？!? or at a full stop before a blank (closing quotes
  and brackets after the mark belong to it). A sentence may run over several
  lines of a hard-wrapped paragraph: it keeps its line breaks, which Markdown reads as spaces;
- a list item (`- `, `* `, `+ `, `1. `, `1) `), without its mark, with its continuation lines;
- a table row, with its table's header row and separator kept beside it (`Unit.header`), so a
  reader knows what its cells mean.
Headings, fenced code, blank lines and a paragraph's run of tags (`#policy #support`) are never
units; a heading names the section of the units
under it (`Unit.headings`), and a table's header row names its rows' cells.

Units are related where one completes another. An announcing unit introduces the list items and
table rows after it (`Unit.followers`): across the rest of its paragraph and any deeper
headings, up to the first paragraph after them or a heading of its own level or above, at most
FOLLOWERS_MAX. A unit announces when it is a sentence or item ending with `:`/`：`, one that says
what follows (以下, 如下, 下列, "as follows", "the following"), or a paragraph's last sentence
right before a numbered list of its section (a trigger, then the steps). Its followers, and the
other sentences of its paragraph, name it as their `announcer`.

Every unit is the block's text verbatim (less a list item's mark), cut to UNIT_MAX_CHARS at a
clause or word boundary when longer (an endless sentence), so a quote check finds it there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from answering.context import ANNOUNCES as _ANNOUNCES
from answering.context import COLON_END as _COLON_END

UNIT_SENTENCE = "sentence"
UNIT_ITEM = "item"
UNIT_ROW = "row"

UNIT_MAX_CHARS = 320
FOLLOWERS_MAX = 12
# A block longer than this is read only up to it: a context is a few thousand tokens, so only a
# hostile prompt reaches it.
BLOCK_MAX_CHARS = 60_000
UNITS_MAX = 600  # per block, for the same reason

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_ITEM = re.compile(r"^(\s*)(?:[-*+•]|(\d{1,3})[.)])[ \t]+")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_QUOTE_MARK = re.compile(r"^\s*(?:>\s?)+")
# The end of a sentence: its mark and the quotes or brackets that close it (not emphasis marks,
# which as often open the next sentence); a full stop only before a blank or the end.
_SENTENCE_END = re.compile(r"(?:[。！？!?]|\.(?=\s|$))[\"'”’」』)）\]]*")
_CLAUSE_BREAK = re.compile(r"[，,；;、：:]|\s")
_TAGS_ONLY = re.compile(r"(?:#[^\s#]+\s*)+")
TRUNCATION_LINE = "[truncated]"


@dataclass
class Unit:
    """One answerable piece of a block; `position` is its order in the block."""

    kind: str
    text: str
    position: int
    headings: tuple[str, ...]  # the headings it is under, outermost first
    level: int  # the level of the heading it is under (0: none in the block)
    header: str = ""  # a row's table header and separator lines, verbatim
    paragraph: int = -1  # sentences of one paragraph share it; -1 for items and rows
    group: int = -1  # items of one list, rows of one table share it
    announcer: int | None = None  # the position of the unit that introduces it
    indent: int = 0  # an item's indentation: deeper items are its own sub-items
    ordered: bool = False  # an item of a numbered list
    followers: list[int] = field(default_factory=list)

    @property
    def announces(self) -> bool:
        text = self.text.rstrip()
        return bool(_COLON_END.search(text) or _ANNOUNCES.search(text[-60:]))


def block_units(content: str) -> list[Unit]:
    """The units of a block's content, in order, with their relations (module docstring)."""
    lines = content[:BLOCK_MAX_CHARS].split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1].strip() == TRUNCATION_LINE:  # answering/context.py's cut mark
        lines.pop()
    units = list(_units(lines))[:UNITS_MAX]
    for index, unit in enumerate(units):
        unit.position = index
    _relations(units)
    return units


def _units(lines: list[str]) -> Iterator[Unit]:
    headings: list[tuple[int, str]] = []
    group = 0  # items of one list share one (blank lines between them do not end it)
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            index = _fence_end(lines, index, fence.group(1))
            group += 1
            continue
        if not line.strip():
            index += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            headings = [(lvl, text) for lvl, text in headings if lvl < level]
            headings.append((level, heading.group(2)))
            group += 1
            index += 1
            continue
        titles = tuple(text for _, text in headings)
        level = headings[-1][0] if headings else 0
        if "|" in line and (index + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[index + 1])
                            or line.lstrip().startswith("|")):
            index, rows = _table(lines, index)
            group += 1
            yield from (Unit(kind=UNIT_ROW, text=row, position=0, headings=titles, level=level,
                             header=header, group=group) for header, row in rows)
            group += 1
            continue
        item = _ITEM.match(line)
        if item:
            index, text = _item(lines, index, item)
            yield Unit(kind=UNIT_ITEM, text=_cut(text), position=0, headings=titles, level=level,
                       group=group, indent=len(item.group(1).expandtabs(4)),
                       ordered=item.group(2) is not None)
            continue
        index, text = _paragraph(lines, index)
        group += 1
        for sentence in _sentences(text):
            if _TAGS_ONLY.fullmatch(sentence):
                continue  # an Obsidian note's tags: metadata, not a statement
            yield Unit(kind=UNIT_SENTENCE, text=sentence, position=0, headings=titles,
                       level=level, paragraph=group)
        group += 1


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    for index in range(start + 1, len(lines)):
        stripped = lines[index].strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            return index + 1
    return len(lines)


def _block_start(line: str) -> bool:
    return bool(not line.strip() or _HEADING.match(line) or _FENCE.match(line)
                or _ITEM.match(line) or line.lstrip().startswith("|"))


def _table(lines: list[str], start: int) -> tuple[int, list[tuple[str, str]]]:
    """The rows of the table at `start` with its header (header and separator lines), or with
    no header where the block begins inside a table."""
    header = ""
    index = start
    if index + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[index + 1]):
        header = f"{lines[index].strip()}\n{lines[index + 1].strip()}"
        index += 2
    rows = []
    while index < len(lines) and "|" in lines[index] and lines[index].strip() \
            and not _HEADING.match(lines[index]):
        row = lines[index].strip()
        if not _TABLE_SEPARATOR.match(row) and len(row) <= UNIT_MAX_CHARS:
            rows.append((header, row))
        index += 1
    return index, rows


def _item(lines: list[str], start: int, mark: re.Match[str]) -> tuple[int, str]:
    """An item's text without its mark, with its continuation lines (not another block)."""
    parts = [lines[start][mark.end():]]
    index = start + 1
    while index < len(lines) and not _block_start(lines[index]):
        parts.append(lines[index])
        index += 1
    return index, "\n".join(parts).rstrip()


def _paragraph(lines: list[str], start: int) -> tuple[int, str]:
    parts = []
    index = start
    while index < len(lines) and (index == start or not _block_start(lines[index])):
        parts.append(_QUOTE_MARK.sub("", lines[index]))
        index += 1
    return index, "\n".join(parts)


def _sentences(text: str) -> Iterator[str]:
    start = 0
    for end in _SENTENCE_END.finditer(text):
        sentence = text[start:end.end()].strip()
        start = end.end()
        if sentence:
            yield _cut(sentence)
    rest = text[start:].strip()
    if rest:
        yield _cut(rest)


def _cut(text: str) -> str:
    """`text` within UNIT_MAX_CHARS: cut after the last clause mark or blank in the limit's
    second half (hard at the limit without one)."""
    if len(text) > UNIT_MAX_CHARS:
        head = text[:UNIT_MAX_CHARS]
        breaks = [match.end() for match in _CLAUSE_BREAK.finditer(head)]
        cut = breaks[-1] if breaks and breaks[-1] > UNIT_MAX_CHARS // 2 else UNIT_MAX_CHARS
        text = head[:cut].rstrip()
    return text


def _relations(units: list[Unit]) -> None:
    """Set each announcing unit's followers, and the announcer of the units it introduces: its
    followers and the other sentences of its paragraph (a later, nearer announcer wins)."""
    for index, unit in enumerate(units):
        if unit.kind == UNIT_ROW or not (unit.announces or _procedure_lead(units, index)):
            continue
        unit.followers = _followers(units, index)
        if not unit.followers:
            continue
        mates = [other.position for other in units if unit.kind == UNIT_SENTENCE
                 and other.paragraph == unit.paragraph and other is not unit]
        for position in (*unit.followers, *mates):
            units[position].announcer = index


def _procedure_lead(units: list[Unit], index: int) -> bool:
    """A paragraph's last sentence right before a numbered list of its section: the steps it
    leads to ("触发条件：… 。" then "1. …")."""
    unit = units[index]
    after = units[index + 1] if index + 1 < len(units) else None
    return (unit.kind == UNIT_SENTENCE and after is not None and after.kind == UNIT_ITEM
            and after.ordered and after.headings == unit.headings)


def _followers(units: list[Unit], index: int) -> list[int]:
    """The items and rows an announcing unit introduces (module docstring)."""
    announcer = units[index]
    found: list[int] = []
    for unit in units[index + 1:]:
        if len(unit.headings) < len(announcer.headings) or (
                unit.headings[:len(announcer.headings)] != announcer.headings):
            break  # a heading of its own level or above: another section
        if announcer.kind == UNIT_ITEM and (unit.kind != UNIT_ITEM
                                            or unit.indent <= announcer.indent):
            break  # an announcing item takes its own sub-items only
        if unit.kind == UNIT_SENTENCE:
            if found or unit.paragraph != announcer.paragraph or announcer.kind != UNIT_SENTENCE:
                break
            continue  # the rest of the announcing sentence's paragraph
        found.append(unit.position)
        if len(found) >= FOLLOWERS_MAX:
            break
    return found
