"""The /ask and /ask/stream contract."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema

from answering.services import Answer
from core.api_schemas import KnowledgeBases, QueryText, StrictRequest, TopK
from retrieval.api_schemas import RefusalSignalsOut, SearchFilters


class AskRequest(StrictRequest):
    question: QueryText
    top_k: TopK = None
    fallback: bool = False
    # Narrows retrieval to these knowledge bases (slugs), as in /search.
    knowledge_bases: KnowledgeBases = None
    # "sources": when retrieval succeeded but the language model fails, answer 200 with the
    # sources and a `notice` (code llm_unavailable) instead of the model's error.
    on_llm_error: Literal["error", "sources"] = "error"
    # Only documents matching these are searched, as in /search.
    filters: SearchFilters | None = None


class CitationOut(Schema):
    source: str
    # The section and pages of the chunk holding the quote when there is one, else of the
    # block's best chunk (answering/quote_places.py).
    heading: str
    heading_path: list[str]
    # The block's best chunk: its score and its index in the document.
    score: float
    chunk_index: int
    # PDF pages (1-based); null for notes, DOCX and TXT.
    page_start: int | None
    page_end: int | None
    # The cited chunk's knowledge base (slug) and document.
    knowledge_base: str | None
    document_id: int | None
    # The span of the cited block the answer relies on (answering/quotes.py): its plain-text
    # reading (Markdown's marks removed), its character offsets into the block's text, and the
    # share of the citing sentence's terms it holds. Null when the answer does not cite the
    # block, or cites it without support.
    quote: str | None = None
    quote_start: int | None = None
    quote_end: int | None = None
    quote_support: float | None = None
    # The span as the block's text holds it (`text[quote_start:quote_end]`), and the chunk it
    # begins in: its index in the document and the span's offsets into that chunk's own text.
    quote_raw: str | None = None
    quote_chunk_index: int | None = None
    quote_chunk_start: int | None = None
    quote_chunk_end: int | None = None


class Notice(Schema):
    # withheld: a stored answer citing a base its reader can no longer read (conversations);
    # interrupted: a stored answer whose stream the client left before it ended.
    code: Literal["llm_unavailable", "withheld", "interrupted"]
    # The model's error code (e.g. llm_timeout) and a message for people.
    cause: str
    message: str


class RefusalOut(Schema):
    """How the answer mode was decided (answering/refusal.py, RAG_REFUSAL)."""

    rule: Literal["threshold", "signals"]
    grounded: bool
    probability: float | None
    threshold: float | None
    signals: RefusalSignalsOut


class AskResponse(Schema):
    mode: Literal["rag", "fallback", "no_answer"]
    confidence: float
    answer: str
    citations: list[CitationOut]
    invalid_citations_removed: int
    # Markers whose sentence shares too little with the block they name.
    unsupported_citations: int = 0
    # The id of this request's trace (also the X-Request-ID header).
    trace_id: str | None = None
    # How the mode was decided: the rule, its probability or threshold, the signals it read.
    refusal: RefusalOut | None = None


class AskResponseWithNotice(AskResponse):
    """An answer the model could not give (`on_llm_error: sources`): the sources and why."""

    notice: Notice


# The notice is a field only of the answers that have one: every other body stays as it was.
AskOutcome = AskResponseWithNotice | AskResponse


def ask_body(answer: Answer, *, trace_id: str | None) -> dict[str, Any]:
    """The /ask body of `answer` (AskOutcome): `notice` only when the model failed and its
    sources were answered instead, `trace_id` under a trace."""
    body: dict[str, Any] = {"mode": answer.mode, "confidence": answer.confidence,
                            "answer": answer.answer, "citations": answer.citations,
                            "invalid_citations_removed": answer.invalid_citations_removed,
                            "unsupported_citations": answer.unsupported_citations,
                            "refusal": answer.refusal}
    if answer.notice is not None:
        body["notice"] = answer.notice
    if trace_id is not None:
        body["trace_id"] = trace_id
    return body
