"""The /ask and /ask/stream contract."""

from __future__ import annotations

from typing import Literal

from ninja import Schema

from core.api_schemas import KnowledgeBases, QueryText, StrictRequest, TopK


class AskRequest(StrictRequest):
    question: QueryText
    top_k: TopK = None
    fallback: bool = False
    # Narrows retrieval to these knowledge bases (slugs), as in /search.
    knowledge_bases: KnowledgeBases = None


class CitationOut(Schema):
    source: str
    heading: str
    heading_path: list[str]
    score: float
    chunk_index: int
    # The cited chunk's PDF pages (1-based); null for notes, DOCX and TXT.
    page_start: int | None
    page_end: int | None
    # The cited chunk's knowledge base (slug) and document.
    knowledge_base: str | None
    document_id: int | None


class AskResponse(Schema):
    mode: Literal["rag", "fallback", "no_answer"]
    confidence: float
    answer: str
    citations: list[CitationOut]
    invalid_citations_removed: int
    # The id of this request's trace (also the X-Request-ID header).
    trace_id: str | None = None
