"""What retrieval takes and hands to answering and to the API: the request, ranked chunks with a
confidence, and what the search measured for its caller's trace."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from access.callers import Scope
    from retrieval.filters import DocumentFilter
    from traces.recording import Trace


@dataclass(frozen=True)
class ChunkColumns:
    """The columns of a chunk that each channel's rows and hits carry (retrieval/sql.py)."""

    chunk_id: int
    content: str
    relative_path: str
    heading_path: list[str]
    chunk_index: int
    document_id: int
    content_hash: str
    page_start: int | None  # the PDF pages the text comes from; None without pages
    page_end: int | None
    knowledge_base: str  # the slug of the chunk's knowledge base

    def chunk_columns(self) -> dict[str, Any]:
        """These columns by name, to carry them from a row into a hit."""
        return {name: getattr(self, name) for name in _CHUNK_COLUMNS}


# Read once: a channel carries these for each of its up to a few hundred rows per search.
_CHUNK_COLUMNS = tuple(column.name for column in fields(ChunkColumns))


class ChunkRow(Protocol):
    """The columns of a chunk a hit is made of: a channel's row, or a chunk read by id."""

    @property
    def content(self) -> str: ...

    @property
    def relative_path(self) -> str: ...

    @property
    def heading_path(self) -> Sequence[str]: ...

    @property
    def chunk_index(self) -> int: ...

    @property
    def document_id(self) -> int: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def page_start(self) -> int | None: ...

    @property
    def page_end(self) -> int | None: ...


@dataclass(frozen=True)
class SearchHit:
    """One retrieved chunk. `source` == `relative_path`; `heading` is heading_path[-1] or ""."""

    content: str
    source: str
    relative_path: str
    heading_path: list[str]
    heading: str
    score: float
    chunk_index: int
    document_id: int
    content_hash: str = field(default="", compare=False)
    # The pages of a PDF the chunk's text comes from (1-based); None for notes, DOCX and TXT.
    page_start: int | None = None
    page_end: int | None = None
    # The slug of the chunk's knowledge base.
    knowledge_base: str | None = None
    # The chunk's row id: a /search result's `chunk_id`, and what traces record.
    chunk_id: int | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: ChunkRow, *, chunk_id: int, score: float,
                 knowledge_base: str | None) -> SearchHit:
        """The hit of a chunk's row: every hit is made here, whichever channel or read found
        it, so the API's fields (`source`, `heading`) are derived in one place."""
        heading_path = list(row.heading_path)
        return cls(content=row.content, source=row.relative_path,
                   relative_path=row.relative_path, heading_path=heading_path,
                   heading=heading_path[-1] if heading_path else "", score=score,
                   chunk_index=row.chunk_index, document_id=row.document_id,
                   content_hash=row.content_hash, page_start=row.page_start,
                   page_end=row.page_end, knowledge_base=knowledge_base, chunk_id=chunk_id)


@dataclass(frozen=True)
class RetrievalRequest:
    """One search as asked: the query, how many results by which mode (None: RAG_TOP_K,
    RAG_RETRIEVAL), from the knowledge bases of `scope` and, with `filters`, only from the
    documents they admit; `explain` adds each stage's ranks, scores and times. `search` checks
    it and settles the defaults; the pipeline, and the answer's deeper context search, take it
    whole."""

    query: str
    scope: Scope
    top_k: int | None = None
    mode: str | None = None
    explain: bool = False
    filters: DocumentFilter | None = None


@dataclass(frozen=True)
class RetrievalMeasures:
    """What one search measured, for its caller's trace: the scope and models, the parameters
    it ran with, each stage's milliseconds, and what left this machine (the question's
    embedding, the rerank's candidates)."""

    mode: str
    top_k: int
    candidates: int  # RAG_CANDIDATES
    rerank: str  # the reranker that ran: "none" in vector mode or when RAG_RERANK is off
    vector_index: str  # RAG_VECTOR_INDEX
    threshold: float
    knowledge_base_ids: tuple[int, ...]
    embedding_model: str  # provider/model
    timings_ms: dict[str, float]
    # The replica's alias or "primary", when replicas are configured; None without.
    database: str | None = None
    filters: dict[str, Any] | None = None  # the request's filters as described
    outbound: tuple[dict[str, Any], ...] = ()

    def record(self, trace: Trace) -> None:
        trace.knowledge_base_ids = list(self.knowledge_base_ids)
        trace.embedding_model = self.embedding_model
        trace.parameters.update(mode=self.mode, top_k=self.top_k, candidates=self.candidates,
                                rerank=self.rerank, vector_index=self.vector_index,
                                threshold=self.threshold)
        if self.database is not None:
            trace.parameters["database"] = self.database
        if self.filters is not None:
            trace.parameters["filters"] = self.filters
        trace.stages(self.timings_ms)
        trace.outbound_add(self.outbound)
        if trace.operation == "search":
            trace.mode = self.mode


@dataclass(frozen=True)
class OutboundSent:
    """What left this machine before a search failed: recorded with its error."""

    records: tuple[dict[str, Any], ...]

    def record(self, trace: Trace) -> None:
        trace.outbound_add(self.records)


@dataclass(frozen=True)
class SearchOutcome:
    """Results ranked by score desc; `confidence` is the top score, 0.0 when there are none."""

    confidence: float
    results: list[SearchHit]
    # Per-stage ranks, scores and timings; only when the caller asked for it.
    explain: dict[str, Any] | None = None
    # What the search measured (retrieval/services.py); None for an outcome made otherwise.
    measures: RetrievalMeasures | None = field(default=None, compare=False)
