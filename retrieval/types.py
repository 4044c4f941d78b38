"""What retrieval hands to answering and to the API: ranked chunks and a confidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class SearchOutcome:
    """Results ranked by score desc; `confidence` is the top score, 0.0 when there are none."""

    confidence: float
    results: list[SearchHit]
    # Per-stage ranks, scores and timings; only when the caller asked for it.
    explain: dict[str, Any] | None = None
