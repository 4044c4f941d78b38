"""LLM_PROVIDER=extractive: a deterministic, offline answerer that writes its answer from the
sentences of the numbered sources, each with its `[n]`, and says what no source covers.

It reads the grounded prompt the pipeline builds (answering/prompts.py `prompt_sources_read`):
the numbered blocks and the question after them, and the conversation's previous question when
there is one. Then, in this order:

1. Units: each block is cut into sentences, list items and table rows, each verbatim
   (answering/extractive_units.py), with the headings it sits under.
2. Scores: the question's terms (answering/extractive_terms.py: the lexical index's analyzer, so
   Chinese and English alike, less the words that only ask) are weighted by how rare they are
   among the context's units, `log(1 + N / (1 + df))`, so a word every unit has counts little. A
   unit's relevance is the weight of the question terms it holds, plus CONTEXT_WEIGHT times those
   only its headings, a row's table header or a link it makes (`[[…]]`, which names where to read
   on) hold, plus HISTORY_WEIGHT times the previous question's terms it holds, over the weight of
   the question terms found anywhere in the context; then RANK_BONUS / the block's rank (block 1
   is retrieval's best). The name of a block's document counts as a heading of each of its
   units, not as their own words (a sentence naming only "Atlas CRM" does not answer a question
   about its SLA), unless the question asks about nothing else.
3. Choice: a unit qualifies when its own text holds at least OWN_FLOOR of that weight, it covers
   at least COVER_FLOOR of one part of the question (the rule of 6, its headings included), its
   relevance reaches RELEVANCE_FLOOR and RELATIVE_FLOOR of the best unit's, and its citation will
   verify (below). The best qualifying units are taken first, skipping one whose terms mostly
   repeat a chosen unit's (DUPLICATE_SHARE), while the quoted text stays within QUOTED_MAX_CHARS
   and UNITS_MAX. A block none of whose units qualify is not cited.
4. Completion: a chosen unit comes with what it needs to be read right. A unit that announces a
   list ("按以下时间线升级。", "as follows:", a trigger before numbered steps), or that belongs to
   one (an item of the list, another sentence of the announcing paragraph), comes with the
   announcing unit and all it announces, in order, up to the first that does not fit: a timeline
   is never shown with a gap (an item whose list is already shown in part is left out rather
   than shown after the gap). A table row comes with its header only, not its table. A sentence
   of a paragraph of at most PARAGRAPH_WHOLE_CHARS comes with the rest of that paragraph.
5. Layout: the chosen units in the sources' order (block, then place in the block), each followed
   by ` [n]`: sentences of one paragraph on one line, list items as a `- ` list, rows as a
   Markdown table under their header (the marker inside the last cell, so the table still
   renders). Units are copied verbatim (a list item without its mark), so the quote check of
   answering/quotes.py finds every one in its block: a unit that check would not support, or
   that holds something read as a citation marker, is never chosen.
6. Gaps: each part of the question (its clauses) that the chosen units, with their headings,
   cover less than PART_COVERED of gets a line of its own, in the question's language:
   "当前知识库证据不足：<part>。" or "The knowledge base does not contain enough evidence about
   <part>." (at most NOTES_MAX). Without any qualifying unit the answer is that one sentence
   about the whole question, without a citation.

Without the sources header (a fallback prompt, which carries no sources) it says, in the
question's language, that it only quotes the knowledge base and had nothing to quote. Streaming
yields small pieces of the same text. Every input is bounded: the prompt's size, the blocks, the
units per block and each unit's length.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import PurePosixPath

from answering.citations import MARKER_PATTERN
from answering.extractive_terms import (
    PART_COVERED,
    clean,
    covered_share,
    part_subject,
    question_is_chinese,
    question_parts,
    text_terms,
)
from answering.extractive_units import UNIT_ITEM, UNIT_ROW, UNIT_SENTENCE, Unit, block_units
from answering.llm_usage import TokenUsage
from answering.prompts import SourceBlock, prompt_sources_read
from answering.quotes import citations_verify
from core.settings_table import MAX_TEXT_CHARS

EXTRACTIVE_MODEL = "extractive-v1"
QUOTED_MAX_CHARS = 800
UNITS_MAX = 16
NOTES_MAX = 2
PART_SHOWN_MAX = 60
CONTEXT_WEIGHT = 0.5
HISTORY_WEIGHT = 0.3
RANK_BONUS = 0.05
OWN_FLOOR = 0.05
RELEVANCE_FLOOR = 0.2
COVER_FLOOR = 0.34
RELATIVE_FLOOR = 0.5
DUPLICATE_SHARE = 0.8
PARAGRAPH_WHOLE_CHARS = 160
PROMPT_MAX_CHARS = 200_000
BLOCKS_MAX = 50
CANDIDATES_MAX = 3000  # units of all blocks together, the best-ranked blocks' first
STREAM_PIECE_CHARS = 6

NO_SOURCES_ZH = "抽取式回答只摘录本地知识库的原文，这个问题没有可摘录的来源。"
NO_SOURCES_EN = ("The extractive answerer only quotes the local knowledge base, and there is no "
                 "source to quote for this question.")
NOTHING_RELEVANT_ZH = "当前知识库证据不足，无法回答这个问题。"
NOTHING_RELEVANT_EN = "The knowledge base does not contain enough evidence to answer this question."
GAP_ZH = "当前知识库证据不足：{part}。"
GAP_EN = "The knowledge base does not contain enough evidence about {part}."
# The longest answer: the quoted units, then the gap lines.
ANSWER_MAX_CHARS = QUOTED_MAX_CHARS + NOTES_MAX * (len(GAP_EN) + PART_SHOWN_MAX + 2)

_MARKER = re.compile(MARKER_PATTERN)
# A link to another note names where to read on, not what this one says.
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]{0,300})\]\]")
_STREAM_PIECE = re.compile(r"\s*\S+\s*|\s+")
_PART_TRIM = " .。?？!！"
_PAGES = re.compile(r", p\. \d+(?:\u2013\d+)?$")


class ExtractiveLLMClient:
    """The extractive answerer as an LLM client (answering/llm.py `LLMClient`)."""

    last_usage: TokenUsage | None = None  # nothing is tokenised here: its tokens are counted

    def complete(self, *, messages: list[dict[str, str]]) -> str:
        """The answer to the last user message (module docstring)."""
        return extractive_answer(messages=messages)

    def stream(self, *, messages: list[dict[str, str]]) -> Generator[str, None, None]:
        """Pieces of at most a word or STREAM_PIECE_CHARS characters whose concatenation is
        exactly `complete()`."""
        yield from answer_pieces(self.complete(messages=messages))


@dataclass
class _Candidate:
    block: SourceBlock
    rank: int  # the block's place in the prompt, from 1
    unit: Unit
    relevance: float = 0.0
    own_share: float = 0.0
    cover: float = 0.0  # the largest share of one part of the question it covers

    @cached_property
    def own(self) -> frozenset[str]:
        return text_terms(_WIKILINK.sub(" ", self.unit.text))

    @cached_property
    def context(self) -> frozenset[str]:
        titles = [*self.unit.headings, self.block.heading, self.unit.header,
                  *_WIKILINK.findall(self.unit.text)]
        return frozenset().union(*(text_terms(title) for title in titles if title))

    @cached_property
    def topic(self) -> frozenset[str]:
        return _document_terms(self.block.source)

    @property
    def key(self) -> tuple[int, int]:
        return self.rank, self.unit.position

    @cached_property
    def quotable(self) -> bool:
        """Whether the unit, laid out with its marker, is a citation the quote check supports."""
        text = f"{self.unit.text}{self.unit.header}"
        if _MARKER.search(text) or self.unit.text.count("`") % 2:
            return False
        _, unsupported = citations_verify(answer=_shown(self.unit, marker=" [1]"),
                                          block_texts=[self.block.content])
        return unsupported == 0


def extractive_answer(*, messages: Iterable[dict[str, str]]) -> str:
    """The extractive answer to the last user message of `messages` (module docstring)."""
    asked = [str(message.get("content") or "") for message in messages
             if message.get("role") == "user"]
    user = asked[-1][:PROMPT_MAX_CHARS] if asked else ""
    sources = prompt_sources_read(user)
    if sources is None:
        chinese = question_is_chinese(user[:MAX_TEXT_CHARS])
        return NO_SOURCES_ZH if chinese else NO_SOURCES_EN
    question = clean(sources.question[:MAX_TEXT_CHARS])
    chinese = question_is_chinese(question)
    earlier = clean(asked[-2][:MAX_TEXT_CHARS]) if len(asked) > 1 else ""
    candidates = [_Candidate(block=block, rank=rank, unit=unit)
                  for rank, block in enumerate(sources.blocks[:BLOCKS_MAX], start=1)
                  for unit in block_units(block.content)][:CANDIDATES_MAX]
    terms = text_terms(question)
    _score(candidates, question=terms, earlier=text_terms(earlier) - terms,
           parts=question_parts(question) or [question])
    chosen = _choose(candidates)
    if not chosen:
        return NOTHING_RELEVANT_ZH if chinese else NOTHING_RELEVANT_EN
    return _layout(chosen) + _gaps(question, chosen=chosen, chinese=chinese)


def answer_pieces(answer: str) -> list[str]:
    """`answer` cut into stream deltas: words with their blanks, long runs (Chinese has no
    blanks) cut every STREAM_PIECE_CHARS characters."""
    pieces: list[str] = []
    for piece in _STREAM_PIECE.findall(answer):
        pieces.extend(piece[start:start + STREAM_PIECE_CHARS]
                      for start in range(0, len(piece), STREAM_PIECE_CHARS))
    return pieces


def _score(candidates: list[_Candidate], *, question: frozenset[str], earlier: frozenset[str],
           parts: list[str]) -> None:
    """Set each candidate's relevance, own share and cover (module docstring, rules 2-3)."""
    df = Counter(term for candidate in candidates for term in candidate.own & question
                 | candidate.own & earlier)
    count = len(candidates)

    def weight(terms: Iterable[str]) -> float:
        return sum(math.log(1 + count / (1 + df[term])) for term in terms)

    headed = frozenset().union(*(candidate.context | candidate.topic for candidate in candidates))
    present = frozenset(term for term in question if df[term] or term in headed)
    total = weight(present)
    if not total:
        return
    for candidate in candidates:
        # The document's own name says what every unit of it is about, not what one answers;
        # unless the question asks about nothing else.
        topic = candidate.topic & question if present - candidate.topic else frozenset()
        own = (candidate.own & question) - topic
        candidate.own_share = weight(own) / total
        if own:
            held = candidate.own | candidate.context | topic
            candidate.cover = max(covered_share(part, held) for part in parts)
        candidate.relevance = (weight(own)
                               + CONTEXT_WEIGHT * weight(((candidate.context & question) | topic)
                                                         - own)
                               + HISTORY_WEIGHT * weight(candidate.own & earlier)
                               ) / total + RANK_BONUS / candidate.rank


def _choose(candidates: list[_Candidate]) -> list[_Candidate]:
    """The units of the answer in the sources' order (module docstring, rules 3 and 4)."""
    qualified = [candidate for candidate in candidates
                 if candidate.own_share >= OWN_FLOOR and candidate.relevance >= RELEVANCE_FLOOR
                 and candidate.cover >= COVER_FLOOR]
    if not qualified:
        return []
    best = max(candidate.relevance for candidate in qualified)
    qualified = sorted((candidate for candidate in qualified
                        if candidate.relevance >= RELATIVE_FLOOR * best),
                       key=lambda candidate: (-candidate.relevance, candidate.key))
    by_key = {candidate.key: candidate for candidate in candidates}
    paragraphs: dict[tuple[int, int], list[_Candidate]] = {}
    for candidate in candidates:
        if candidate.unit.kind == UNIT_SENTENCE:
            paragraphs.setdefault((candidate.rank, candidate.unit.paragraph), []).append(candidate)
    chosen: dict[tuple[int, int], _Candidate] = {}
    for candidate in qualified:
        if len(chosen) >= UNITS_MAX:
            break
        if candidate.key in chosen or _repeats(candidate, chosen.values()) \
                or not candidate.quotable:
            continue
        members = _bundle(candidate, by_key, paragraphs)
        added = _prefix(members, chosen)
        if candidate not in added:
            # Alone, unless what introduces it is already there with a part of its list, or it
            # announces a list (which would then not follow it).
            anchor = candidate.unit.announcer
            if (anchor is not None and (candidate.rank, anchor) in chosen) \
                    or candidate.unit.followers or not _fits(chosen, [candidate]):
                continue
            added = [candidate]
        chosen.update((member.key, member) for member in added)
    return sorted(chosen.values(), key=lambda candidate: candidate.key)


def _prefix(members: list[_Candidate],
            chosen: dict[tuple[int, int], _Candidate]) -> list[_Candidate]:
    """The members to add, in order, up to the first that does not fit; none when one past
    that is already chosen: a timeline without its middle step would mislead."""
    added: list[_Candidate] = []
    for index, member in enumerate(members):
        if member.key in chosen or not member.quotable:
            continue
        if not _fits(chosen, [*added, member]):
            if any(later.key in chosen for later in members[index + 1:]):
                return []
            break
        added.append(member)
    return added


def _bundle(candidate: _Candidate, by_key: dict[tuple[int, int], _Candidate],
            paragraphs: dict[tuple[int, int], list[_Candidate]]) -> list[_Candidate]:
    """What a chosen unit brings (rule 4), in block order: the unit that introduces it or that
    it is (not for a table row), with everything that one introduces; a short paragraph's
    other sentences."""
    unit = candidate.unit
    positions = {unit.position}
    # A table's rows are records of their own: a row comes with its header, not its table.
    anchor = unit.position if unit.followers else (
        unit.announcer if unit.kind != UNIT_ROW else None)
    if anchor is not None:
        head = by_key[(candidate.rank, anchor)].unit
        positions.update((anchor, *head.followers))
    if unit.kind == UNIT_SENTENCE:
        mates = paragraphs[(candidate.rank, unit.paragraph)]
        if sum(len(mate.unit.text) for mate in mates) <= PARAGRAPH_WHOLE_CHARS:
            positions.update(mate.unit.position for mate in mates)
    return [by_key[(candidate.rank, position)] for position in sorted(positions)]


@lru_cache(maxsize=256)
def _document_terms(source: str) -> frozenset[str]:
    """The terms of a block's document name: its file name without folder, extension or the
    pages the header adds."""
    return text_terms(PurePosixPath(_PAGES.sub("", source)).stem)


def _repeats(candidate: _Candidate, chosen: Iterable[_Candidate]) -> bool:
    own = candidate.own
    return any(len(own & other.own) >= DUPLICATE_SHARE * len(own) for other in chosen)


def _fits(chosen: dict[tuple[int, int], _Candidate], bundle: list[_Candidate]) -> bool:
    together = sorted([*chosen.values(), *bundle], key=lambda candidate: candidate.key)
    return len(together) <= UNITS_MAX and len(_layout(together)) <= QUOTED_MAX_CHARS


def _shown(unit: Unit, *, marker: str) -> str:
    """A unit as the answer shows it, with its marker (a row without its header)."""
    if unit.kind == UNIT_ITEM:
        return f"- {unit.text}{marker}"
    if unit.kind == UNIT_ROW and unit.text.endswith("|"):
        return f"{unit.text[:-1].rstrip()}{marker} |"
    return f"{unit.text}{marker}"


def _layout(chosen: list[_Candidate]) -> str:
    """The chosen units as Markdown (module docstring, rule 5)."""
    pieces: list[str] = []
    previous: _Candidate | None = None
    for candidate in chosen:
        unit = candidate.unit
        text = _shown(unit, marker=f" [{candidate.block.number}]")
        together = (previous is not None and previous.rank == candidate.rank
                    and previous.unit.kind == unit.kind
                    and (previous.unit.paragraph == unit.paragraph if unit.kind == UNIT_SENTENCE
                         else previous.unit.group == unit.group))
        if together:
            pieces.append((" " if unit.kind == UNIT_SENTENCE else "\n") + text)
        else:
            if unit.kind == UNIT_ROW and unit.header:
                text = f"{unit.header}\n{text}"
            pieces.append(("\n\n" if pieces else "") + text)
        previous = candidate
    return "".join(pieces)


def _gaps(question: str, *, chosen: list[_Candidate], chinese: bool) -> str:
    """A line for each part of the question the chosen units do not cover (rule 6)."""
    held = frozenset().union(*(candidate.own | candidate.context | candidate.topic
                               for candidate in chosen))
    missing = [part for part in question_parts(question)
               if covered_share(part, held) < PART_COVERED]
    template = GAP_ZH if chinese else GAP_EN
    return "".join(f"\n\n{template.format(part=_part_shown(part))}"
                   for part in missing[:NOTES_MAX])


def _part_shown(part: str) -> str:
    part = part_subject(part.strip(_PART_TRIM))
    return part if len(part) <= PART_SHOWN_MAX else f"{part[:PART_SHOWN_MAX].rstrip()}…"

