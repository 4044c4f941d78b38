"""The /search contract."""

from __future__ import annotations

from typing import Any

from ninja import Schema

from core.api_schemas import KnowledgeBases, QueryText, StrictRequest, TopK


class SearchRequest(StrictRequest):
    query: QueryText
    top_k: TopK = None
    # Narrows the search to these knowledge bases (slugs); one the caller cannot read is
    # answered 404 like one that does not exist.
    knowledge_bases: KnowledgeBases = None
    # Adds `explain` to the response: each stage's ranks, scores and time.
    explain: bool = False


class SearchResult(Schema):
    content: str
    source: str
    relative_path: str
    heading_path: list[str]
    heading: str
    score: float
    chunk_index: int
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


class SearchExplain(Schema):
    mode: str
    parameters: dict[str, Any]
    timings_ms: dict[str, float]
    rerank: dict[str, Any] | None
    # Aligned with `results`: entry i explains result i.
    results: list[ResultExplain]


class SearchResponse(Schema):
    confidence: float
    results: list[SearchResult]
    explain: SearchExplain | None = None
    # The id of this request's trace (also the X-Request-ID header).
    trace_id: str | None = None
