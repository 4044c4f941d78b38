"""Reproducible answers: what an answer's trace keeps of its context, and that context rebuilt
from it (`rag traces show ID --replay`).

What is recorded (`context_record`, by ask_prepare): the trace's `citations`, one entry per
block in block order (`[n]` is entry n-1):
- `chunk_id`, `content_hash`: the block's best chunk, whose source, heading and score its header
  shows;
- `chunks`: every chunk of the block in document order, each `{chunk_id, chunk_index,
  content_hash}` (several where adjacent chunks were merged into one block);
- `document_id`, `source`, `score`: the rest of what the header shows (the date is the
  document's);
- `truncated`: whether the block's text was cut to fit the budget;
- `block_hash`: the SHA-256 of the block's text exactly as the model got it.
With the trace's `prompt_version` and `llm_model` and the `context_token_budget`,
`context_per_document` and `context_neighbours` of its parameters, that is everything the
model's sources depended on (a neighbour a block took on is one of its recorded chunks).

The replay (`context_replay`): each recorded chunk is looked up by id or, where a re-ingest gave
its document new rows, at its place (document id, chunk index). A chunk is `unchanged` when the
text found there has the recorded hash, `changed` when it has another, `deleted` when there is
none. Each block is rebuilt from the chunks found, in the recorded order, with the context's own
block functions (answering/context.py), the recorded score, its document's date now, and cut
again to the recorded budget when it was cut. A block is `unchanged` when its chunks are and the
rebuilt text has the recorded block hash, which also catches a header that changed (a renamed
file, another heading or date); `deleted` when none of its chunks is left; `changed` otherwise.
Each rebuilt block also has the citation the trace's answer gives it now (`citation`): the
block's best chunk with the quote the answer relies on and, quoted, the heading path and pages
of the chunk holding the quote (answering/quote_places.py). The trace records where each quote
is — `quote_chunk_id`, `quote_chunk_index`, and `quote_start`, `quote_end` (offsets into the
block's text, not text, so a trace without its answer's text still has them) and
`quote_support` — and an unchanged block's quote is placed there again: its citation is the
answer's. A changed block's quote is found again in the trace's answer when the trace kept its
text (RAG_TRACE_TEXT), else it has none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from answering.citations import citations_strip
from answering.context import (
    BLOCK_SEPARATOR,
    CitedChunk,
    Context,
    block_chunks,
    block_hit,
    block_text,
    block_truncated,
)
from answering.modes import MODE_FALLBACK, MODE_NO_ANSWER, MODE_RAG
from answering.prompts import PROMPT_VERSION
from answering.quote_places import quote_fields
from answering.quotes import Quote, citations_verify
from knowledge.bases import kb_list
from knowledge.selectors import StoredChunk, StoredChunks, chunks_by_id_or_place, document_dates
from retrieval.types import SearchHit
from traces.selectors import trace_get

UNCHANGED, CHANGED, DELETED = "unchanged", "changed", "deleted"
# A rebuilt block: its best chunk's hit, the hit of the whole block, its chunks' spans.
_Built = tuple[SearchHit, SearchHit, tuple[CitedChunk, ...]]
BEFORE_REPLAY = ("recorded before traces kept each block's chunks, score and hash: its chunks "
                 "are checked, its context is not rebuilt")


def context_record(*, context: Context) -> list[dict[str, Any]]:
    """The trace's `citations` of a context: one entry per block (see the module docstring)."""
    return [{"chunk_id": citation.chunk_id, "content_hash": citation.content_hash,
             "document_id": citation.document_id, "source": citation.source,
             "score": citation.score, "truncated": citation.truncated,
             "block_hash": text_hash(text),
             "chunks": [{"chunk_id": chunk.chunk_id, "chunk_index": chunk.chunk_index,
                         "content_hash": chunk.content_hash} for chunk in citation.chunks]}
            for citation, text in zip(context.citations, context.block_texts, strict=True)]


def text_hash(text: str) -> str:
    """The SHA-256 (hex) of a block's text, as traces record it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChunkReplay:
    """One recorded chunk of a block, and the chunk the index holds in its place now."""

    chunk_id: int | None
    chunk_index: int | None
    content_hash: str
    status: str  # unchanged, changed or deleted
    # The row found: the recorded one, or the one a re-ingest put at its place.
    now_chunk_id: int | None = None
    now_content_hash: str | None = None


@dataclass(frozen=True)
class BlockReplay:
    """One block of the recorded context, rebuilt."""

    number: int
    source: str
    status: str  # unchanged, changed or deleted
    chunks: list[ChunkReplay]
    changes: list[str]  # what differs, in words; empty when unchanged
    text: str | None  # the block as its chunks build it now; None when it cannot be built
    # The block's citation as the trace's answer gives it now, in the API's shape (without the
    # knowledge base, which traces do not record per block); None when it cannot be built.
    citation: dict[str, Any] | None = None


@dataclass(frozen=True)
class Replay:
    """A trace's context rebuilt from its recorded chunks, block by block."""

    replayable: bool
    # Why there is nothing to replay, or why it is partial (BEFORE_REPLAY); "" otherwise.
    reason: str
    prompt_version: str | None  # the trace's
    blocks: list[BlockReplay]
    text: str = ""  # the rebuilt blocks, joined as the context joins them

    @property
    def unchanged(self) -> bool:
        """Whether every block is rebuilt exactly as the model got it."""
        return all(block.status == UNCHANGED for block in self.blocks)

    def as_dict(self) -> dict[str, Any]:
        return {"replayable": self.replayable, "reason": self.reason,
                "unchanged": self.unchanged if self.replayable else None,
                "prompt_version": self.prompt_version, "prompt_version_now": PROMPT_VERSION,
                "text": self.text if self.replayable else None,
                "blocks": [asdict(block) for block in self.blocks]}


def trace_report(*, trace_id: str, replay: bool = False) -> dict[str, Any]:
    """One trace as `rag traces show` prints it: every recorded field, its knowledge bases by
    slug, and with `replay` its context rebuilt (`context_replay`); NotFound for no trace."""
    trace = trace_get(trace_id=trace_id)
    ids = trace["knowledge_base_ids"] or []
    slugs = {base.id: base.slug for base in kb_list(ids=ids)} if ids else {}
    report: dict[str, Any] = {
        "trace": {**trace, "knowledge_bases": [slugs.get(base_id, f"#{base_id}")
                                               for base_id in ids]}}
    if replay:
        report["replay"] = context_replay(trace=trace).as_dict()
    return report


def context_replay(*, trace: Mapping[str, Any]) -> Replay:
    """The context of a traced answer rebuilt from the chunks it recorded, and what changed
    since (see the module docstring); nothing to replay for a trace that sent no context."""
    citations: list[dict[str, Any]] = trace.get("citations") or []
    prompt_version = trace.get("prompt_version")
    if trace.get("mode") != MODE_RAG or not citations:
        return Replay(replayable=False, reason=_nothing_to_replay(trace),
                      prompt_version=prompt_version, blocks=[])
    recorded = [_recorded_chunks(entry) for entry in citations]
    found = chunks_by_id_or_place(
        chunk_ids=[chunk["chunk_id"] for chunks in recorded for chunk in chunks
                   if isinstance(chunk.get("chunk_id"), int)],
        places=[place for entry, chunks in zip(citations, recorded, strict=True)
                for place in _places(entry, chunks)])
    dates = document_dates(document_ids=[chunk.document_id for chunk in found.by_place.values()])
    budget = (trace.get("parameters") or {}).get("context_token_budget")
    rebuilt = [_block_replay(number=number, entry=entry, chunks=chunks, found=found,
                             dates=dates, token_budget=budget)
               for number, (entry, chunks) in enumerate(zip(citations, recorded, strict=True),
                                                        start=1)]
    blocks = _citations_replayed(blocks=[block for block, _ in rebuilt],
                                 built=[made for _, made in rebuilt], entries=citations,
                                 answer=trace.get("answer"))
    text = BLOCK_SEPARATOR.join(block.text for block in blocks if block.text is not None)
    partial = any("chunks" not in entry for entry in citations)
    return Replay(replayable=True, reason=BEFORE_REPLAY if partial else "",
                  prompt_version=prompt_version, blocks=blocks, text=text)


def _nothing_to_replay(trace: Mapping[str, Any]) -> str:
    if trace.get("operation") == "search":
        return "a search makes no answer, so no context reached a model"
    if trace.get("mode") == MODE_NO_ANSWER:
        return "the question was not answered (mode no_answer): no context reached a model"
    if trace.get("mode") == MODE_FALLBACK:
        return "a fallback answer from general knowledge: no context reached a model"
    return "this trace recorded no context"


def _recorded_chunks(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chunks of one recorded block; a trace from before blocks listed theirs has the best
    chunk alone."""
    chunks = entry.get("chunks")
    if chunks:
        return list(chunks)
    return [{"chunk_id": entry.get("chunk_id"), "chunk_index": None,
             "content_hash": entry.get("content_hash", "")}]


def _places(entry: Mapping[str, Any], chunks: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    document_id = entry.get("document_id")
    if not isinstance(document_id, int):
        return []
    return [(document_id, chunk["chunk_index"]) for chunk in chunks
            if isinstance(chunk.get("chunk_index"), int)]


def _now(chunk: Mapping[str, Any], *, document_id: Any, found: StoredChunks) -> StoredChunk | None:
    """The chunk the index holds for a recorded one: its own row, else the row at its place."""
    chunk_id = chunk.get("chunk_id")
    if isinstance(chunk_id, int) and chunk_id in found.by_id:
        return found.by_id[chunk_id]
    index = chunk.get("chunk_index")
    if isinstance(document_id, int) and isinstance(index, int):
        return found.by_place.get((document_id, index))
    return None


def _block_replay(*, number: int, entry: Mapping[str, Any], chunks: list[dict[str, Any]],
                  found: StoredChunks, dates: Mapping[int, str],
                  token_budget: int | None) -> tuple[BlockReplay, _Built | None]:
    """The block rebuilt, and what it was built of (None when it could not be)."""
    replays: list[ChunkReplay] = []
    rows: list[StoredChunk] = []
    best: StoredChunk | None = None
    changes: list[str] = []
    for chunk in chunks:
        row = _now(chunk, document_id=entry.get("document_id"), found=found)
        recorded_hash = chunk.get("content_hash") or ""
        if row is None:
            status = DELETED
            changes.append(f"chunk {chunk.get('chunk_id')} deleted")
        else:
            status = UNCHANGED if row.content_hash == recorded_hash else CHANGED
            rows.append(row)
            if chunk.get("chunk_id") == entry.get("chunk_id"):
                best = row
            if status == CHANGED:
                now = f" (now chunk {row.id})" if row.id != chunk.get("chunk_id") else ""
                changes.append(f"chunk {chunk.get('chunk_id')} changed{now}")
        replays.append(ChunkReplay(
            chunk_id=chunk.get("chunk_id"), chunk_index=chunk.get("chunk_index"),
            content_hash=recorded_hash, status=status,
            now_chunk_id=row.id if row is not None else None,
            now_content_hash=row.content_hash if row is not None else None))
    built = _block_built(rows=rows, best=best, score=entry.get("score"))
    text = _block_rebuilt(number=number, entry=entry, built=built, dates=dates,
                          token_budget=token_budget)
    if (not changes and text is not None and entry.get("block_hash")
            and text_hash(text) != entry["block_hash"]):
        changes.append("its header changed (source, heading, pages or date)")
    if not rows:
        status = DELETED
    else:
        status = CHANGED if changes else UNCHANGED
    source = entry.get("source") or (rows[0].relative_path if rows else "")
    return BlockReplay(number=number, source=source, status=status, chunks=replays,
                       changes=changes, text=text), built if text is not None else None


def _block_built(*, rows: list[StoredChunk], best: StoredChunk | None,
                 score: Any) -> _Built | None:
    """The block made of the chunks found, or None: none is left, or the trace predates
    recording the score."""
    if not rows or not isinstance(score, int | float):
        return None
    run = [_hit(row, score=float(score)) for row in rows]
    chosen = run[rows.index(best)] if best is not None else run[0]
    return chosen, block_hit(best=chosen, run=run), block_chunks(run)


def _block_rebuilt(*, number: int, entry: Mapping[str, Any], built: _Built | None,
                   dates: Mapping[int, str], token_budget: int | None) -> str | None:
    """The block's text from the chunks found, or None: it cannot be built, or the trace
    predates recording the budget of a cut block."""
    if built is None:
        return None
    hit = built[1]
    date = dates.get(hit.document_id, "")
    if not entry.get("truncated"):
        return block_text(hit=hit, number=number, date=date)
    if not isinstance(token_budget, int):
        return None
    return block_truncated(hit=hit, number=number, token_budget=token_budget, date=date)


def _citations_replayed(*, blocks: list[BlockReplay], built: list[_Built | None],
                        entries: Sequence[Mapping[str, Any]], answer: Any) -> list[BlockReplay]:
    """The blocks with the citations the trace's answer gives them now: an unchanged block's
    quote where the trace recorded it; a changed block's found again in the trace's answer when
    the trace kept its text (its markers as the answer showed them), else none."""
    contents = [made[1].content if made is not None else "" for made in built]
    found: list[Quote | None] = [None] * len(blocks)
    if isinstance(answer, str):
        shown, _ = citations_strip(text=answer, block_count=len(blocks))
        found, _ = citations_verify(answer=shown, block_texts=contents)
    replayed = []
    for block, made, entry, content, again in zip(blocks, built, entries, contents, found,
                                                  strict=True):
        if made is None:
            replayed.append(block)
            continue
        quote = _quote_recorded(entry, content) if block.status == UNCHANGED else again
        best, hit, chunks = made
        citation = {"source": hit.source, "heading": best.heading,
                    "heading_path": list(best.heading_path), "score": hit.score,
                    "chunk_index": best.chunk_index, "page_start": best.page_start,
                    "page_end": best.page_end, "document_id": hit.document_id,
                    **quote_fields(quote, chunks=chunks)}
        replayed.append(replace(block, citation=citation))
    return replayed


def _quote_recorded(entry: Mapping[str, Any], content: str) -> Quote | None:
    """The quote the trace recorded for a block whose text is `content` (None: none, or a trace
    from before quotes were recorded)."""
    start, end, support = (entry.get("quote_start"), entry.get("quote_end"),
                           entry.get("quote_support"))
    if (type(start) is not int or type(end) is not int or not 0 <= start < end <= len(content)
            or not isinstance(support, int | float)):
        return None
    return Quote(text=content[start:end], start=start, end=end, support=float(support))


def _hit(row: StoredChunk, *, score: float) -> SearchHit:
    return SearchHit.from_row(row, chunk_id=row.id, score=score, knowledge_base=None)
