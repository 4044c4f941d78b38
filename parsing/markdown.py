"""Obsidian note parsing: YAML frontmatter, heading sections, tags and wikilinks.

Pure functions over already-decoded text. Reading files, hashing, size limits and paths belong to
parsing.vault. Headings and code blocks come from the markdown-it-py token stream (block level
only, which is all that is needed and several times faster than a full parse); code is then
blanked out of a same-length copy of the text so that tags and wikilinks inside code are never
seen.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler
from markdown_it import MarkdownIt
from markdown_it.token import Token

from parsing.formats.base import TextBudget
from parsing.markdown_blocks import blocks_parse

# A YAML alias bomb expands to billions of values while staying a few hundred bytes long.
FRONTMATTER_VALUE_LIMIT = 10_000

_YAML = YAMLHandler()
_NEWLINE = re.compile(r"\r\n?")
_WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")  # an embed is the same with a leading `!`
# Backtick runs, captured so that splitting on them keeps them; a blank line ends any code span.
_BACKTICK_RUN = re.compile(r"(`+)")
_BLANK_LINE_START = re.compile(r"(?=\n[ \t]*\n)")
# Wikilinks (`[[#Heading]]`) and link destinations (`](#anchor)`) hold `#` that are not tags.
_TAG_NOISE = re.compile(r"\[\[[^\[\]\n]*\]\]|\]\([^()\n]*\)")
# Obsidian only starts a tag at the start of a line or after whitespace or an opening bracket,
# which keeps URL fragments (`page#section`) and entities (`&#123;`) out. For str patterns `\s` is
# exactly str.isspace() (both are Py_UNICODE_ISSPACE), so the lookbehind is that rule, run in C.
_INLINE_TAG = re.compile(r"(?<![^\s(\[{])#([\w/-]+)")
_TAG = re.compile(r"[\w/-]+")
_TAG_SEPARATORS = re.compile(r"[,\s]+")
_NOT_BLANK = re.compile(r"\S")
# [[target]], [[target#heading]], [[target|alias]] and ![[embeds]] as they read in a heading.
_WIKILINK_DISPLAY = re.compile(r"!?\[\[([^\[\]|#\n]*)(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]*))?\]\]")
# Characters that may start inline Markdown; headings without them are taken as they are.
_INLINE_MARKUP = re.compile(r"[*_`\[\]<>&\\!]")
HEADING_PARSE_LIMIT = 2000
_CODE_TOKENS = frozenset({"fence", "code_block"})


@dataclass(frozen=True, slots=True)
class Wikilinks:
    """Link targets in order of first appearance, and the aliases written for each target."""

    targets: list[str]
    aliases: dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class Section:
    """One heading and its own body, up to the next heading of any level."""

    heading_path: list[str]
    level: int  # 1-6, or 0 for the text before the first heading
    line: int  # 1-based line of the section's first line in the note text
    source: str  # Markdown source: the heading line(s) followed by the body
    heading_source: str  # the raw heading line(s), "" before the first heading
    block_offsets: tuple[int, ...]  # offsets in `source` where each top-level body block starts
    code_masked: str  # `source` with code blanked to spaces (same length, newlines kept)
    # The markdown-it type of each body block, as block_offsets lists them (`paragraph`,
    # `table`, `fence`, `bullet_list`, ...); empty for text not parsed as Markdown.
    block_types: tuple[str, ...] = ()

    @property
    def body(self) -> str:
        return self.source[len(self.heading_source):]


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """Everything the ingest needs from one note's text."""

    frontmatter: dict[str, Any]
    tags: list[str]
    wikilinks: list[str]
    wikilink_aliases: dict[str, list[str]]
    sections: list[Section]
    warnings: list[str]


class _FrontmatterTooLarge(Exception):
    pass


def note_parse(*, text: str, budget: TextBudget | None = None) -> ParsedNote:
    """Parse one note's text into frontmatter, tags, wikilinks and heading sections; with
    `budget`, its blocks are counted as paragraphs while they are parsed (FormatRejected at the
    limit)."""
    # markdown-it counts lines after the same newline normalisation; slices must agree with it.
    text = _NEWLINE.sub("\n", text.removeprefix("\ufeff"))
    warnings: list[str] = []
    frontmatter, body, line_offset = _frontmatter_split(text=text, warnings=warnings)
    tokens = blocks_parse(body, budget=budget)
    line_starts = _line_starts(body)
    masked = _code_mask(text=body, tokens=tokens, line_starts=line_starts)
    sections = _sections_build(body=body, masked=masked, tokens=tokens,
                               line_starts=line_starts, line_offset=line_offset)
    tags = _tags_dedupe([*_frontmatter_tags(frontmatter=frontmatter, warnings=warnings),
                         *tags_extract(text=masked, mask_code=False)])
    links = wikilinks_extract(text=masked, mask_code=False)
    return ParsedNote(frontmatter=frontmatter, tags=tags, wikilinks=links.targets,
                      wikilink_aliases=links.aliases, sections=sections, warnings=warnings)


def wikilinks_extract(*, text: str, mask_code: bool = True) -> Wikilinks:
    """Wikilinks and embeds of a Markdown fragment; mask_code=False if code is already blanked."""
    if mask_code:
        text = code_mask(text=text)
    targets: dict[str, None] = {}
    # Ordered sets, not lists: a list's `in` is quadratic in the number of aliases of one target.
    aliases: dict[str, dict[str, None]] = {}
    # Each distinct link text once, in order of first appearance, which keeps every order below.
    for inner in dict.fromkeys(_WIKILINK.findall(text)):
        link, _, alias = inner.partition("|")
        # Inside tables the pipe is written `\|`, which leaves a backslash on the target.
        target = link.removesuffix("\\").partition("#")[0].strip()
        if not target:
            continue
        targets.setdefault(target)
        alias = alias.strip()
        if alias:
            aliases.setdefault(target, {}).setdefault(alias)
    return Wikilinks(targets=list(targets),
                     aliases={target: list(names) for target, names in aliases.items()})


def tags_extract(*, text: str, mask_code: bool = True) -> list[str]:
    """Inline `#tags` of a Markdown fragment, without `#`, deduplicated case-insensitively."""
    if mask_code:
        text = code_mask(text=text)
    # Only the tags are wanted, not their positions, so one space stands in for each link: like a
    # same-length blank it ends a tag before it and lets one start right after it.
    text = _TAG_NOISE.sub(" ", text)
    # Exact repeats go first, in C. `isdigit` is the numeric-tag rule of _tag_is_valid; the
    # pattern already holds the rest.
    return _tags_dedupe([tag for tag in dict.fromkeys(_INLINE_TAG.findall(text))
                         if not tag.isdigit()])


def code_mask(*, text: str) -> str:
    """`text` with fenced/indented code blocks and code spans replaced by spaces (same length)."""
    text = _NEWLINE.sub("\n", text)
    return _code_mask(text=text, tokens=blocks_parse(text), line_starts=_line_starts(text))


@lru_cache(maxsize=1)
def _inline_markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def heading_text(source: str) -> str:
    """The words of a heading without its Markdown: `**Export** [[Atlas CRM|CRM]] limits` ->
    `Export CRM limits` (a wikilink shows its alias, else its target)."""
    source = _WIKILINK_DISPLAY.sub(lambda m: (m.group(2) or m.group(1)).strip(), source)
    if not _INLINE_MARKUP.search(source):
        return source.strip()
    if len(source) > HEADING_PARSE_LIMIT:
        # The inline parser costs up to ~10 µs a character on bracket-heavy text: a heading this
        # long is no real heading, so its markup characters are simply dropped.
        return " ".join(_INLINE_MARKUP.sub(" ", source).split())
    parts = []
    for token in _inline_markdown().parseInline(source)[0].children or []:
        if token.type in ("text", "code_inline", "html_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def _frontmatter_split(*, text: str, warnings: list[str]) -> tuple[dict[str, Any], str, int]:
    """(frontmatter, body, number of lines before the body). Broken frontmatter only warns."""
    if not _YAML.detect(text):
        return {}, text, 0
    try:
        raw, body = _YAML.split(text)
    except ValueError:  # an opening `---` without a closing one: a thematic break, not frontmatter
        return {}, text, 0
    line_offset = text.count("\n", 0, len(text) - len(body))
    return yaml_mapping(raw, what="frontmatter", warnings=warnings), body, line_offset


def yaml_mapping(raw: str, *, what: str, warnings: list[str]) -> dict[str, Any]:
    """A YAML mapping as JSON-safe values ({} with a warning naming `what` when it is broken,
    not a mapping, or expands past FRONTMATTER_VALUE_LIMIT values: an alias bomb)."""
    try:
        loaded = _YAML.load(raw)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        reason = str(getattr(exc, "problem", None) or exc).strip().splitlines()[0][:200]
        warnings.append(f"invalid YAML {what}: {reason}")
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        warnings.append(f"{what} is not a mapping (got {type(loaded).__name__}); ignored")
        return {}
    try:
        return _json_safe(loaded, budget=[FRONTMATTER_VALUE_LIMIT])
    except _FrontmatterTooLarge:
        warnings.append(f"{what} has more than {FRONTMATTER_VALUE_LIMIT} values; ignored")
        return {}


def tags_of(frontmatter: dict[str, Any], *, warnings: list[str]) -> list[str]:
    """The tags a mapping's `tags` / `tag` fields name, as frontmatter tags are read."""
    return _frontmatter_tags(frontmatter=frontmatter, warnings=warnings)


def _json_safe(value: Any, *, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _FrontmatterTooLarge
    if isinstance(value, dict):
        return {_storable(key if isinstance(key, str) else str(_json_safe(key, budget=budget))):
                _json_safe(item, budget=budget) for key, item in value.items()}
    if isinstance(value, (set, frozenset)):
        return [_json_safe(item, budget=budget) for item in sorted(value, key=str)]
    if isinstance(value, (list, tuple)):
        return [_json_safe(item, budget=budget) for item in value]
    if isinstance(value, str):
        return _storable(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return _storable(str(value))


def _storable(text: str) -> str:
    """`text` without what PostgreSQL cannot store: YAML escapes can produce NUL characters
    ("\\0") and lone surrogates ("\\ud800") that no UTF-8 file contains literally."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _frontmatter_tags(*, frontmatter: dict[str, Any], warnings: list[str]) -> list[str]:
    tags = []
    for key in ("tags", "tag"):
        value = frontmatter.get(key)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is None or isinstance(item, (dict, list)):
                continue
            for word in _TAG_SEPARATORS.split(str(item)):
                tag = word.lstrip("#")
                if _tag_is_valid(tag):
                    tags.append(tag)
                elif tag:
                    warnings.append(f"ignored invalid frontmatter tag {word!r}")
    return tags


def _tag_is_valid(tag: str) -> bool:
    # Obsidian rejects purely numeric tags such as #2024.
    return _TAG.fullmatch(tag) is not None and not all(char.isdigit() for char in tag)


def _tags_dedupe(tags: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for tag in tags:
        seen.setdefault(tag.casefold(), tag)
    return list(seen.values())


def _line_starts(text: str) -> list[int]:
    """Offset of every line start, plus len(text) as a sentinel for block ends at the last line."""
    starts = [0]
    position = text.find("\n")
    while position != -1:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    starts.append(len(text))
    return starts


def _offset(line_starts: list[int], line: int) -> int:
    return line_starts[min(line, len(line_starts) - 1)]


def _spaces(text: str) -> str:
    """Same length, newlines kept, everything else a space."""
    if "\n" not in text:
        return " " * len(text)
    return "\n".join(" " * len(line) for line in text.split("\n"))


def _code_mask(*, text: str, tokens: list[Token], line_starts: list[int]) -> str:
    pieces = []
    position = 0
    for token in tokens:
        # Nested code (in lists and quotes) counts too; its map still gives whole lines.
        if token.type in _CODE_TOKENS and token.map:
            start = max(_offset(line_starts, token.map[0]), position)
            end = _offset(line_starts, token.map[1])
            pieces.append(text[position:start])
            pieces.append(_spaces(text[start:end]))
            position = max(position, end)
    pieces.append(text[position:])
    blanked = "".join(pieces)
    # Code spans never cross a block boundary, so they are looked for one top-level block at a time.
    pieces = []
    position = 0
    for token in tokens:
        if token.level == 0 and token.map and token.type not in _CODE_TOKENS:
            start = _offset(line_starts, token.map[0])
            end = _offset(line_starts, token.map[1])
            pieces.append(blanked[position:start])
            block = blanked[start:end]
            pieces.append(_code_spans_blank(block) if "`" in block else block)
            position = end
    pieces.append(blanked[position:])
    return "".join(pieces)


def _code_spans_blank(block: str) -> str:
    """`block` with its code spans blanked. As in CommonMark, a backtick run opens a span that the
    next run of exactly the same length closes, unless a blank line comes first; a run that finds
    no closer is literal text."""
    # No span holds the start of a blank line, so the stretches between them are independent.
    if not _BLANK_LINE_START.search(block):
        return _stretch_code_spans_blank(block)
    return "".join(_stretch_code_spans_blank(stretch) if "`" in stretch else stretch
                   for stretch in _BLANK_LINE_START.split(block))


def _stretch_code_spans_blank(text: str) -> str:
    # One pass over the backtick runs, not a regex: a lazy search on from each run for its closer
    # rescans the rest of the paragraph for every run that has none, quadratic on a long one.
    parts = _BACKTICK_RUN.split(text)  # text, run, text, run, ..., text: run r is parts[2r + 1]
    lengths = list(map(len, parts[1::2]))
    # The next run of the same length is the only one that can close a run.
    closers = [-1] * len(lengths)
    last_of_length: dict[int, int] = {}
    for run in range(len(lengths) - 1, -1, -1):
        closers[run] = last_of_length.get(lengths[run], -1)
        last_of_length[lengths[run]] = run
    run = 0
    while run < len(lengths):
        closer = closers[run]
        if closer < 0:
            run += 1
            continue
        # Blank the span's parts where they are: runs hold no newline, text parts may.
        for index in range(2 * run + 1, 2 * closer + 2):
            part = parts[index]
            parts[index] = " " * len(part) if "\n" not in part else _spaces(part)
        run = closer + 1
    return "".join(parts)


def _sections_build(*, body: str, masked: str, tokens: list[Token], line_starts: list[int],
                    line_offset: int) -> list[Section]:
    # Only top-level headings open sections: one inside a quote or list belongs to that block.
    # Each with its source lines [first, end): its token.map, known here not to be None.
    blocks = [(index, token, token.map) for index, token in enumerate(tokens)
              if token.level == 0 and token.map]
    headings = [position for position, (_, token, _) in enumerate(blocks)
                if token.type == "heading_open"]
    starts = [_offset(line_starts, lines[0]) for _, _, lines in blocks] + [len(body)]
    types = [token.type.removesuffix("_open") for _, token, _ in blocks]
    sections = []
    first_text = _NOT_BLANK.search(body)
    preamble_end = starts[headings[0]] if headings else len(body)
    if first_text is not None and first_text.start() < preamble_end:
        first_line = body.count("\n", 0, first_text.start())
        start = _offset(line_starts, first_line)
        sections.append(_section(
            body=body, masked=masked, starts=starts, types=types,
            line=line_offset + first_line + 1,
            heading_path=[], level=0, span=(start, start, preamble_end),
            blocks=range(headings[0] if headings else len(blocks))))
    stack: list[tuple[int, str]] = []
    for number, position in enumerate(headings):
        index, token, lines = blocks[position]
        level = int(token.tag[1])
        while stack and stack[-1][0] >= level:
            stack.pop()
        # A setext heading may span several lines; a path element is one line of text.
        stack.append((level, heading_text(" ".join(tokens[index + 1].content.split("\n")))))
        following = headings[number + 1] if number + 1 < len(headings) else len(blocks)
        sections.append(_section(
            body=body, masked=masked, starts=starts, types=types, line=line_offset + lines[0] + 1,
            heading_path=[text for _, text in stack], level=level,
            span=(starts[position], _offset(line_starts, lines[1]), starts[following]),
            blocks=range(position + 1, following)))
    return sections


def _section(*, body: str, masked: str, starts: list[int], types: list[str], line: int,
             heading_path: list[str], level: int, span: tuple[int, int, int],
             blocks: range) -> Section:
    start, body_start, end = span
    return Section(
        heading_path=heading_path, level=level, line=line,
        source=body[start:end], heading_source=body[start:body_start],
        block_offsets=tuple(starts[block] - start for block in blocks),
        code_masked=masked[start:end], block_types=tuple(types[block] for block in blocks))
