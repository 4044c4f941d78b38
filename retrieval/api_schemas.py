"""The /search contract."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from core.api_schemas import KnowledgeBases, QueryText, StrictRequest, TopK
from retrieval.filters import (
    FORMATS,
    MAX_FIELDS,
    MAX_TEXT,
    MAX_VALUES,
    DocumentFilter,
    filters_parse,
)
from retrieval.types import SearchOutcome

FilterText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
FilterValue = FilterText | int | float | bool
FilterValues = Annotated[list[FilterValue], Field(min_length=1, max_length=MAX_VALUES)]
FilterBound = FilterText | int | float


class FieldCondition(StrictRequest):
    """A frontmatter field's range and/or equality; every given operator must hold."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    eq: FilterValue | None = None
    in_: FilterValues | None = Field(default=None, alias="in")
    gte: FilterBound | None = None
    gt: FilterBound | None = None
    lte: FilterBound | None = None
    lt: FilterBound | None = None


class DateRange(StrictRequest):
    """ISO dates or date-times (UTC when no offset is given)."""

    gte: FilterText | None = None
    gt: FilterText | None = None
    lte: FilterText | None = None
    lt: FilterText | None = None


class SearchFilters(StrictRequest):
    """Which documents a search may return; every given key narrows it (retrieval/filters.py,
    docs/search.md "Filters")."""

    # {field: value} equality, {field: [values]} one of, {field: {gte, lt, ...}} a range.
    frontmatter: Annotated[dict[str, FilterValue | FilterValues | FieldCondition] | None,
                           Field(default=None, max_length=MAX_FIELDS)] = None
    tags: FilterValues | None = None  # every one of these tags
    tags_any: FilterValues | None = None  # one of these tags
    format: Annotated[list[Literal[FORMATS]] | None,  # type: ignore[valid-type]
                      Field(default=None, min_length=1)] = None
    folder: FilterText | Annotated[list[FilterText], Field(min_length=1,
                                                           max_length=MAX_VALUES)] | None = None
    title: FilterText | None = None  # the title holds this text, ignoring case
    ingested: DateRange | None = None  # when the document was first indexed
    updated: DateRange | None = None  # when it was last stored


def filters_plain(filters: SearchFilters | None) -> dict[str, Any] | None:
    """A request's filters as plain JSON, as given (what a conversation keeps)."""
    if filters is None:
        return None
    return filters.model_dump(by_alias=True, exclude_none=True)


def filters_checked(filters: SearchFilters | None) -> DocumentFilter | None:
    """A request's filters, checked and made into conditions (retrieval/filters.py)."""
    return filters_parse(filters_plain(filters))


class SearchRequest(StrictRequest):
    query: QueryText
    top_k: TopK = None
    # Narrows the search to these knowledge bases (slugs); one the caller cannot read is
    # answered 404 like one that does not exist.
    knowledge_bases: KnowledgeBases = None
    # Adds `explain` to the response: each stage's ranks, scores and time. Only for a caller
    # that may research every base searched (researcher, maintainer, admin): 403 otherwise.
    explain: bool = False
    # Only documents matching these (frontmatter fields, tags, format, folder, title, dates),
    # applied before ranking: `top_k` results still come back when that many chunks match.
    filters: SearchFilters | None = None


class SearchResult(Schema):
    content: str
    source: str
    relative_path: str
    heading_path: list[str]
    heading: str
    score: float
    chunk_index: int
    # The chunk's row id, which MCP's get_chunk takes.
    chunk_id: int
    document_id: int
    knowledge_base: str | None = None
    # The PDF pages the chunk's text comes from (1-based, as a PDF viewer numbers them); null
    # for notes, DOCX and TXT.
    page_start: int | None
    page_end: int | None


class ResultExplain(Schema):
    chunk_id: int
    vector_rank: int | None
    cosine: float | None
    lexical_rank: int | None
    bm25: float | None
    matched_share: float | None
    fused_rank: int | None
    rerank_rank: int | None
    rerank_score: float | None


class RefusalSignalsOut(Schema):
    """What the refusal rule reads of the results (retrieval/signals.py)."""

    top: float
    gap: float
    support: int
    coverage: float
    cjk_share: float


class SearchExplain(Schema):
    mode: str
    parameters: dict[str, Any]
    timings_ms: dict[str, float]
    rerank: dict[str, Any] | None
    # Aligned with `results`: entry i explains result i.
    results: list[ResultExplain]
    signals: RefusalSignalsOut | None = None


class SearchResponse(Schema):
    confidence: float
    results: list[SearchResult]
    explain: SearchExplain | None = None
    # The id of this request's trace (also the X-Request-ID header).
    trace_id: str | None = None


def search_body(outcome: SearchOutcome, *, trace_id: str | None) -> dict[str, Any]:
    """The /search body of `outcome` (SearchResponse): `explain` only when it was asked for,
    `trace_id` under a trace; exclude_unset leaves out what is not set."""
    body: dict[str, Any] = {"confidence": outcome.confidence, "results": outcome.results}
    if outcome.explain is not None:
        body["explain"] = outcome.explain
    if trace_id is not None:
        body["trace_id"] = trace_id
    return body
