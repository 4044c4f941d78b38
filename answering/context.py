r"""Deterministic context assembly: ranked hits -> numbered source blocks within a token budget.

The order and the merge rules, in this order:
1. The hits keep the pipeline's final order (fused, reranked): block 1 is the best candidate.
   A chunk seen twice (same source, headings and content) is kept once, at its best place.
2. At most `per_document` (RAG_CONTEXT_PER_DOCUMENT, 3) chunks of one document are kept, the
   best-placed ones, and at most `limit` in all (the answer's top_k): the places the cap frees
   go to the next candidates, so five chunks of one long report leave room for the memo at
   rank 10 (the ask path searches deeper when the cap frees places: answering/context_hits.py).
3. Kept chunks of the same document whose chunk indexes follow each other (4 and 5, or 4, 5
   and 6) become one block, at the place of the best of them, with their texts in document
   order: a fact or a table split across two chunks reaches the model whole. The block's
   citation is that best chunk's (its header names the whole run's pages); it also lists every
   chunk of the run (`Citation.chunks`, in document order) with the chunk's own heading path,
   pages and place in the block's text, which traces record and from which a quote's chunk is
   read (answering/quote_places.py).
4. A kept chunk cut inside a table or a sentence takes on its neighbours (RAG_CONTEXT_NEIGHBOURS
   each way, 1 by default; `neighbour_places` names the chunks to fetch): the next chunk of its
   section while the cut falls inside a table (the chunk ends on a table row and the next begins
   with one) or inside a sentence (it ends on neither sentence nor clause punctuation); the
   previous chunk while it begins inside a table without that table's header row, or inside a
   sentence: it does not open a block (a heading, list item, table row, quote or code fence)
   and the previous chunk ends neither a sentence (. ! ? … 。！？, closing quotes and brackets
   aside) nor a block. A sentence's end is enough after a chunk, its start is not: a kept chunk
   that begins after a `;` or `:` still lacks what the sentence is about. A chunk that
   announces what follows ("按以下时间线升级。", "as follows", a final colon) and shows no list
   item or table row after it takes on the next chunk of its section or of a subsection (steps
   under subheadings of their own), and a chunk after such a one takes it on. A neighbour may
   be a candidate the cap of rule 2 left out. A neighbour only ever
   joins the run of a kept chunk (rule 3), never makes a block of its own, and does not count
   toward rule 2.
5. Blocks are numbered in that order and packed within the budget; `[n]` is `citations[n-1]`.
   A block that does not fit with its neighbours goes without those at its ends (its kept
   chunks are the evidence; a neighbour only completes them); the first block, when even that
   does not fit, is truncated.

`block_hit` and `block_text` (with `block_truncated`) make a block's text from its chunks alone,
without ranking or packing: answering/replay.py rebuilds a recorded context with them.

A block opens with the plain-text header `[n] source: …`, which also names the pages of a chunk
that has them (`[n] source: manual.pdf, p. 12–13`, the label the CLI prints). A note could
imitate that header. Every content line that starts like a header (after any indentation, a
citation marker in any form the citation filter reads, then `source:`) gets a backslash before
its marker: `\[7] source: secret.md`. A backslash is Markdown's own escape for `[`, so the line
still reads the same, while neither the fake model's block parser nor a real model (told so in
the prompt) can take it for a header. The escape is deterministic and idempotent (an escaped line
no longer starts with a marker), and blocks are measured after escaping, so the token budget
counts it. Header fields are kept to one line for the same reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from answering.citations import MARKER_PATTERN
from core.output import page_span_label
from core.text_tokens import decode, encode, tokens_count
from retrieval.types import SearchHit

BLOCK_SEPARATOR = "\n\n"
# How the texts of a run of adjacent chunks are joined into one block's text.
RUN_SEPARATOR = "\n\n"
PER_DOCUMENT_DEFAULT = 3
TRUNCATION_MARKER = "[truncated]"
HEADER_ESCAPE = "\\"

# Every line break str.splitlines() knows: a model may read any of them as a new line.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"
# Blanks that are not line breaks, and zero-width characters a reader does not see.
_INDENT = f"(?:[^\\S{_LINE_BREAKS}]|[\u200b-\u200d\u2060\ufeff])*"
_HEADER_LOOKALIKE = re.compile(
    f"(?P<indent>(?:^|(?<=[{_LINE_BREAKS}])){_INDENT})(?={MARKER_PATTERN}\\s*source\\s*[:：])",
    re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class CitedChunk:
    """One chunk of a block: which row, where in its document, which text (for traces), and
    its own section, pages and characters `[start, end)` of the block's text (the chunks'
    contents joined with RUN_SEPARATOR), which place a quote of the block in its chunk."""

    chunk_id: int | None
    chunk_index: int
    content_hash: str
    heading_path: tuple[str, ...] = ()
    page_start: int | None = None
    page_end: int | None = None
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class Citation:
    """The source behind one numbered block; block n is `citations[n - 1]`."""

    source: str
    heading: str
    heading_path: list[str]
    score: float
    chunk_index: int
    page_start: int | None = None
    page_end: int | None = None
    knowledge_base: str | None = None
    document_id: int | None = None
    # For traces only (not part of the API's citation shape): which chunk, which text.
    chunk_id: int | None = None
    content_hash: str = ""
    # Every chunk of the block in document order (one, or a run of adjacent chunks), and whether
    # its text was cut to fit the budget.
    chunks: tuple[CitedChunk, ...] = ()
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The API shape of a citation."""
        return {
            "source": self.source,
            "heading": self.heading,
            "heading_path": list(self.heading_path),
            "score": self.score,
            "chunk_index": self.chunk_index,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "knowledge_base": self.knowledge_base,
            "document_id": self.document_id,
        }


@dataclass(frozen=True)
class Context:
    """The joined blocks sent to the model and the citations in block order."""

    text: str
    citations: list[Citation]
    # Each block's text as its chunk (or run of adjacent chunks) holds it, unescaped and whole:
    # what answering/quotes.py finds a citation's quote in.
    contents: list[str] = field(default_factory=list)
    # Each block's text exactly as `text` holds it (header, escaping, truncation).
    block_texts: list[str] = field(default_factory=list)

    @property
    def blocks(self) -> int:
        return len(self.citations)


def context_build(*, hits: Sequence[SearchHit], token_budget: int,
                  dates: Mapping[int, str] | None = None,
                  per_document: int = PER_DOCUMENT_DEFAULT,
                  neighbours: Mapping[tuple[int, int], SearchHit] | None = None,
                  neighbour_depth: int = 0, limit: int | None = None) -> Context:
    """Dedupe, cap per document, merge adjacent chunks, number and pack hits (in the pipeline's
    order) into blocks whose joined text fits `token_budget` (see the module docstring).
    `dates` (document id → its date) puts a `date:` line in the header of its blocks, so the
    model can tell sources of different dates apart. `neighbours` ((document id, chunk index) →
    chunk, fetched for `neighbour_places`) are taken on by rule 4, up to `neighbour_depth` each
    way. `limit` bounds the chunks kept (rule 2): `hits` may then run deeper, and its further
    candidates take the places the cap frees; None keeps every hit the cap allows."""
    blocks: list[str] = []
    citations: list[Citation] = []
    contents: list[str] = []
    dates = dates or {}
    unique = _unique(hits)
    kept = _capped(unique, per_document, limit=limit)
    # A candidate the cap left out may still complete a kept chunk (rule 4): `neighbours` holds
    # only the chunks that are not candidates themselves (`neighbour_places`).
    nearby = {(hit.document_id, hit.chunk_index): hit for hit in reversed(unique)}
    joined = _neighbours_joined(kept, {**nearby, **(neighbours or {})}, depth=neighbour_depth)
    evidence = {id(hit) for hit in kept}
    for position, (best, whole) in enumerate(_runs(kept, joined)):
        number = len(blocks) + 1
        date = dates.get(best.document_id, "")
        truncated = False
        # With its neighbours, else its kept chunks alone (rule 5).
        for run in _packings(whole, evidence):
            hit = block_hit(best=best, run=run)
            block = block_text(hit=hit, number=number, date=date)
            # Count the joined text, not block by block: tokens can merge across the separator.
            if tokens_count(BLOCK_SEPARATOR.join([*blocks, block])) <= token_budget:
                break
        else:
            if position > 0:
                continue
            cut = block_truncated(hit=hit, number=number, token_budget=token_budget, date=date)
            if cut is None:
                continue
            block, truncated = cut, True
        blocks.append(block)
        contents.append(hit.content)
        citations.append(Citation(source=hit.source, heading=hit.heading,
                                  heading_path=list(hit.heading_path), score=hit.score,
                                  chunk_index=hit.chunk_index,
                                  # The best chunk's own pages: the exact place of the evidence
                                  # (the header names the whole run's).
                                  page_start=best.page_start, page_end=best.page_end,
                                  knowledge_base=hit.knowledge_base,
                                  document_id=hit.document_id, chunk_id=hit.chunk_id,
                                  content_hash=hit.content_hash,
                                  chunks=block_chunks(run),
                                  truncated=truncated))
    return Context(text=BLOCK_SEPARATOR.join(blocks), citations=citations, contents=contents,
                   block_texts=blocks)


def _unique(hits: Sequence[SearchHit]) -> list[SearchHit]:
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    unique = []
    for hit in hits:
        # A hit without a content hash is keyed by its content so distinct chunks never collapse.
        key = (hit.source, tuple(hit.heading_path), hit.content_hash or hit.content)
        if key not in seen:
            seen.add(key)
            unique.append(hit)
    return unique


def _document(hit: SearchHit) -> tuple[int, str]:
    return hit.document_id, hit.source


def _capped(hits: list[SearchHit], per_document: int, *,
            limit: int | None = None) -> list[SearchHit]:
    kept: dict[tuple[int, str], int] = {}
    capped: list[SearchHit] = []
    for hit in hits:
        if limit is not None and len(capped) >= limit:
            break
        if kept.get(_document(hit), 0) < per_document:
            kept[_document(hit)] = kept.get(_document(hit), 0) + 1
            capped.append(hit)
    return capped


def context_places_freed(*, hits: Sequence[SearchHit], per_document: int) -> int:
    """How many of `hits` the context leaves out (duplicates, and chunks over the per-document
    cap): places that deeper candidates could fill (rule 2)."""
    return len(hits) - len(_capped(_unique(hits), per_document))


def _packings(run: list[SearchHit], evidence: set[int]) -> list[list[SearchHit]]:
    """The ways to pack `run`, best first: whole, then without the neighbours at its ends (from
    its first kept chunk to its last: a neighbour between two kept chunks joins them)."""
    places = [index for index, member in enumerate(run) if id(member) in evidence]
    alone = run[places[0]:places[-1] + 1]
    return [run] if len(alone) == len(run) else [run, alone]


def neighbour_places(hits: Sequence[SearchHit], *, depth: int) -> list[tuple[int, int]]:
    """(document id, chunk index) of the chunks rule 4 may take on for `hits`: up to `depth`
    each way of every hit, those not among the hits themselves."""
    have = {(hit.document_id, hit.chunk_index) for hit in hits}
    places = {(hit.document_id, hit.chunk_index + step) for hit in hits
              for step in (*range(-depth, 0), *range(1, depth + 1))
              if hit.chunk_index + step >= 0}
    return sorted(places - have)


def _neighbours_joined(kept: list[SearchHit], neighbours: Mapping[tuple[int, int], SearchHit],
                       *, depth: int) -> list[SearchHit]:
    """The neighbours rule 4 adds to the runs of `kept`."""
    if depth < 1 or not neighbours:
        return []
    have = {(hit.document_id, hit.chunk_index) for hit in kept}
    joined: dict[tuple[int, int], SearchHit] = {}
    for hit in kept:
        current = hit
        for step in range(1, depth + 1):
            after = neighbours.get((hit.document_id, hit.chunk_index + step))
            if after is None or (hit.document_id, after.chunk_index) in have \
                    or not _cut_inside(current, after):
                break
            joined[(hit.document_id, after.chunk_index)] = current = after
        current = hit
        for step in range(1, depth + 1):
            before = neighbours.get((hit.document_id, hit.chunk_index - step))
            if before is None or (hit.document_id, before.chunk_index) in have \
                    or not _begins_inside(before, current):
                break
            joined[(hit.document_id, before.chunk_index)] = current = before
    return list(joined.values())


# A line of a Markdown table, and its header's separator row (`| --- | :-: |`).
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
# Where a sentence or clause may end; a chunk ending on anything else was cut inside one.
_SENTENCE_ENDS = frozenset(".!?;:。！？；：…\"'”’」』)）]】>*`|")
# Where a sentence ends, and what may close it after its mark (quotes, brackets, emphasis).
_SENTENCE_FINAL = frozenset(".!?…。！？．｡")
_SENTENCE_CLOSERS = "\"'”’」』)）]】*_`"
# A line that opens a Markdown block of its own: heading, list item, quote, table row, fence,
# rule. A chunk beginning with one begins at a block, not inside a sentence.
_BLOCK_START = re.compile(r"^\s*(?:#{1,6}(?:\s|$)|[-*+•]\s|\d{1,3}[.)]\s|>|\||```|~~~|-{3,}\s*$)")


# What announces a list or table after it: a sentence naming what follows, or a final colon.
ANNOUNCES = re.compile(r"以下|如下|下列|下面|as follows|the following|following (?:steps|items)",
                       re.IGNORECASE)
COLON_END = re.compile(r"[:：][\"'”’」』)）*_]*$")


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _announces_unshown(hit: SearchHit) -> bool:
    """The chunk announces what follows ("按以下时间线升级。", "as follows:") and holds no list
    item or table row after its last announcing line: what it announces is in the next chunk,
    often under a subheading of its section (a timeline whose steps have headings of their
    own)."""
    lines = _lines(hit.content)
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].rstrip()
        if _BLOCK_START.match(line) and not line.lstrip().startswith("#"):
            return False  # a list, table or quote after the announcement shows it here
        if COLON_END.search(line) or ANNOUNCES.search(line):
            return True
    return False


def _within(section: SearchHit, hit: SearchHit) -> bool:
    """`hit` is in the section of `section` or in one of its subsections."""
    path = list(section.heading_path)
    return list(hit.heading_path)[:len(path)] == path


def _table_cut(before: SearchHit, after: SearchHit) -> bool:
    """The chunks part inside a table: `before` ends on a table row, `after` begins with one."""
    first, last = _lines(after.content), _lines(before.content)
    return bool(first and last and _TABLE_ROW.match(last[-1]) and _TABLE_ROW.match(first[0]))


def _table_headless(hit: SearchHit) -> bool:
    """The chunk begins inside a table whose header row (and separator) it does not hold."""
    lines = _lines(hit.content)
    return bool(lines and _TABLE_ROW.match(lines[0])
                and not any(_TABLE_SEPARATOR.match(line) for line in lines[1:3]))


def _begins_inside(before: SearchHit, after: SearchHit) -> bool:
    """`after` goes on with what `before` began: inside a table without its header row, or,
    in the same section, inside a sentence `before` left unfinished."""
    if _table_headless(after) and _table_cut(before, after):
        return True
    if _announces_unshown(before) and _within(before, after):
        return True
    if list(before.heading_path) != list(after.heading_path):
        return False
    first, last = _lines(after.content), _lines(before.content)
    if not first or not last or _BLOCK_START.match(first[0]) or _BLOCK_START.match(last[-1]):
        return False
    ending = last[-1].rstrip().rstrip(_SENTENCE_CLOSERS)
    return bool(ending) and ending[-1] not in _SENTENCE_FINAL


def _cut_inside(before: SearchHit, after: SearchHit) -> bool:
    """`after` goes on what `before` left unfinished: the same section, cut inside a table or a
    sentence; or what `before` announces, in its section or a subsection of it."""
    if _announces_unshown(before) and _within(before, after):
        return True
    if list(before.heading_path) != list(after.heading_path):
        return False
    if _table_cut(before, after):
        return True
    text = before.content.rstrip()
    return bool(text) and text[-1] not in _SENTENCE_ENDS and not _lines(text)[-1].lstrip() \
        .startswith("#")


def _runs(hits: list[SearchHit],
          joined: Sequence[SearchHit] = ()) -> list[tuple[SearchHit, list[SearchHit]]]:
    """Runs of adjacent chunks of one document, each as (its best hit, the run in document
    order), at the place of the run's best hit (the first of the run in `hits`); `joined`
    chunks only ever extend a run."""
    by_chunk: dict[tuple[tuple[int, str], int], SearchHit] = {}
    for hit in [*hits, *joined]:
        by_chunk.setdefault((_document(hit), hit.chunk_index), hit)
    placed: set[int] = set()  # id() of the hits already in a block
    runs = []
    for hit in hits:
        if id(hit) in placed:
            continue
        document = _document(hit)
        if by_chunk[(document, hit.chunk_index)] is not hit:
            runs.append((hit, [hit]))  # the same chunk index twice (not from one index): apart
            continue
        start = end = hit.chunk_index
        while _free(by_chunk, placed, (document, start - 1)):
            start -= 1
        while _free(by_chunk, placed, (document, end + 1)):
            end += 1
        run = [by_chunk[(document, index)] for index in range(start, end + 1)]
        placed.update(id(member) for member in run)
        runs.append((hit, run))
    return runs


def block_hit(*, best: SearchHit, run: Sequence[SearchHit]) -> SearchHit:
    """The hit one block stands for: `best` (its source, heading and score) with the texts of
    `run` (adjacent chunks of its document, in document order) joined and its pages widened to
    the whole run; `best` itself for a run of one."""
    if len(run) <= 1:
        return best
    pages = [page for member in run for page in (member.page_start, member.page_end)
             if page is not None]
    return replace(best, content=RUN_SEPARATOR.join(member.content for member in run),
                   page_start=min(pages) if pages else None,
                   page_end=max(pages) if pages else None)


def block_chunks(run: Sequence[SearchHit]) -> tuple[CitedChunk, ...]:
    """The chunks of a block made of `run` (in document order, as `block_hit` joins them), each
    with its own section and pages and its span of the block's text."""
    chunks = []
    start = 0
    for member in run:
        end = start + len(member.content)
        chunks.append(CitedChunk(chunk_id=member.chunk_id, chunk_index=member.chunk_index,
                                 content_hash=member.content_hash,
                                 heading_path=tuple(member.heading_path),
                                 page_start=member.page_start, page_end=member.page_end,
                                 start=start, end=end))
        start = end + len(RUN_SEPARATOR)
    return tuple(chunks)


def _free(by_chunk: Mapping[tuple[tuple[int, str], int], SearchHit], placed: set[int],
          key: tuple[tuple[int, str], int]) -> bool:
    """Whether a hit of this document and chunk index is there and not yet in a block."""
    neighbour = by_chunk.get(key)
    return neighbour is not None and id(neighbour) not in placed


def block_text(*, hit: SearchHit, number: int, date: str = "") -> str:
    """Block `number` of the context: the header of `hit` (its source and pages, heading,
    `date` when given, score), then its content with header look-alikes escaped."""
    return _block_text(hit=hit, number=number, content=hit.content, date=date)


def _block_text(*, hit: SearchHit, number: int, content: str, date: str = "") -> str:
    source = _one_line(hit.source)
    pages = page_span_label(page_start=hit.page_start, page_end=hit.page_end)
    if pages:
        source = f"{source}, {pages}"
    dated = f"date: {_one_line(date)}\n" if date else ""
    return (f"[{number}] source: {source}\n"
            f"heading: {_one_line(hit.heading)}\n"
            f"{dated}"
            f"score: {hit.score:.4f}\n"
            f"content:\n{_header_lookalikes_escaped(content)}")


def _header_lookalikes_escaped(content: str) -> str:
    return _HEADER_LOOKALIKE.sub(lambda line: f"{line.group('indent')}{HEADER_ESCAPE}", content)


def _one_line(field: str) -> str:
    # A file name may hold a line break; in the header it would start a line of its own.
    return " ".join(field.splitlines())


def block_truncated(*, hit: SearchHit, number: int, token_budget: int,
                    date: str = "") -> str | None:
    """Block `number` with the longest token prefix of its content that fits `token_budget`
    with the truncation marker; None if nothing fits."""

    def candidate(kept: int) -> str:
        # A prefix can end inside a multi-byte character; drop the replacement char it decodes to.
        content = decode(tokens[:kept]).rstrip("\ufffd").rstrip()
        return _block_text(hit=hit, number=number, content=f"{content}\n{TRUNCATION_MARKER}",
                           date=date)

    tokens = encode(hit.content)
    low, high = 0, len(tokens)
    while low < high:
        middle = (low + high + 1) // 2
        if tokens_count(candidate(middle)) <= token_budget:
            low = middle
        else:
            high = middle - 1
    # Decoding a prefix can re-tokenise differently, so the search is not strictly monotonic:
    # re-count and shrink until the block really fits.
    while low >= 0 and tokens_count(candidate(low)) > token_budget:
        low -= 1
    return candidate(low) if low >= 0 else None
