"""The contract of the review queue's endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import Field

from core.api_schemas import StrictRequest
from review.types import FIX_MAX_CHARS, KINDS, NOTE_MAX_CHARS, STATUSES

ReviewKind = Literal["ocr_page", "table"]
ReviewStatus = Literal["open", "accepted", "fixed", "excluded", "superseded"]
assert set(ReviewKind.__args__) == set(KINDS)  # type: ignore[attr-defined]
assert set(ReviewStatus.__args__) == set(STATUSES)  # type: ignore[attr-defined]


class ReviewTaskOut(Schema):
    id: int
    knowledge_base: str
    document_id: int
    document_version_id: int
    source: str
    kind: ReviewKind
    page: int
    table_index: int | None
    bbox: list[float] | None  # a table's [x0, top, x1, bottom] in PDF points
    rows: list[list[str]] | None
    extracted_text: str
    corrected_text: str | None
    # Numbers with units to spot-check: a table's {row, column, text, quantities}, a page's
    # {start, end, text}.
    flags: list[dict[str, Any]]
    confidence: float | None
    status: ReviewStatus
    job_id: int | None
    resolved_by: str | None
    resolved_at: datetime | None
    note: str | None
    created_at: datetime
    current: bool


class ReviewTaskPage(Schema):
    tasks: list[ReviewTaskOut]
    total: int
    limit: int
    offset: int


class ReviewDecision(StrictRequest):
    note: str | None = Field(None, max_length=NOTE_MAX_CHARS)


class ReviewFixIn(StrictRequest):
    text: str = Field(min_length=1, max_length=FIX_MAX_CHARS)
    note: str | None = Field(None, max_length=NOTE_MAX_CHARS)
