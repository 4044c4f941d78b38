"""The /search contract."""

from __future__ import annotations

from ninja import Schema

from core.schemas import QueryText, StrictRequest, TopK


class SearchRequest(StrictRequest):
    query: QueryText
    top_k: TopK = None


class SearchResult(Schema):
    content: str
    source: str
    relative_path: str
    heading_path: list[str]
    heading: str
    score: float
    chunk_index: int
    document_id: int


class SearchResponse(Schema):
    confidence: float
    results: list[SearchResult]
