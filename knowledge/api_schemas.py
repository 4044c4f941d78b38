"""The contract of the knowledge-base, document and job endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import AfterValidator, Field

from core.api_schemas import StrictRequest, no_control_characters
from embeddings.outbound import OUTBOUND_POLICIES
from knowledge.selectors import DOCUMENT_FORMATS, DOCUMENT_STATUSES

Outbound = Literal["local-only", "allowed"]
assert set(Outbound.__args__) == set(OUTBOUND_POLICIES)  # type: ignore[attr-defined]


class KnowledgeBaseOut(Schema):
    slug: str
    name: str
    description: str
    # Whether its text may be sent to servers outside this machine (embeddings/outbound.py).
    outbound: Outbound
    documents: int
    chunks: int
    # What this caller may do there: "maintainer" (upload, delete, reindex), "researcher"
    # (scores, explain, the lab, evaluation, traces) or "reader" (search and ask).
    role: Literal["reader", "researcher", "maintainer"]


class UploadOut(Schema):
    document_id: int
    job_id: int | None
    # False when the same content was in this knowledge base already (nothing new queued).
    created: bool


class JobRef(Schema):
    document_id: int
    job_id: int


class VersionOut(Schema):
    id: int
    status: str
    content_hash: str
    config_hash: str
    chunk_count: int
    vector_count: int
    error: str | None
    created_at: datetime
    activated_at: datetime | None


class LastJobOut(Schema):
    id: int
    type: str
    status: str
    stage: str
    progress: float
    attempt: int
    last_error: str | None
    updated_at: datetime


class DocumentFields(Schema):
    """What a document's list entry and its own page both say of it."""

    id: int
    title: str | None
    format: str
    original_name: str | None
    relative_path: str
    status: str  # queued, active, failed or deleting
    page_count: int | None
    ocr_page_count: int
    size_bytes: int | None
    content_hash: str
    error: str | None
    chunks: int


class DocumentOut(DocumentFields):
    knowledge_base: str
    active_version_id: int | None
    created_at: datetime
    updated_at: datetime
    versions: list[VersionOut]
    last_job: LastJobOut | None


class JobOut(Schema):
    id: int
    type: str
    resource: str
    status: str  # queued, running, succeeded, failed or cancelled
    stage: str
    progress: float
    attempt: int
    max_attempts: int
    error: str | None
    result: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or whitespace only")
    return value


KnowledgeBaseName = Annotated[str, Field(min_length=1, max_length=200),
                              AfterValidator(no_control_characters), AfterValidator(_not_blank)]
KnowledgeBaseDescription = Annotated[str, Field(max_length=2000)]


class KnowledgeBaseCreate(StrictRequest):
    # Checked as `rag kb create` checks it (knowledge/bases.py slug_check).
    slug: str
    name: KnowledgeBaseName | None = None  # default: the slug
    description: KnowledgeBaseDescription = ""
    outbound: Outbound = "local-only"


class KnowledgeBaseChange(StrictRequest):
    # Only what is given changes; the slug never does (it names the base in every URL).
    name: KnowledgeBaseName | None = None
    description: KnowledgeBaseDescription | None = None
    outbound: Outbound | None = None


DocumentStatus = Literal["queued", "active", "failed", "deleting"]
DocumentFormat = Literal["markdown", "pdf", "docx", "txt"]
assert set(DocumentStatus.__args__) == set(DOCUMENT_STATUSES)  # type: ignore[attr-defined]
assert set(DocumentFormat.__args__) == set(DOCUMENT_FORMATS)  # type: ignore[attr-defined]


class DocumentSummary(DocumentFields):
    # In the base's upload area: DELETE /documents/{id} can remove it (not a vault file).
    uploaded: bool
    created_at: datetime
    updated_at: datetime


class DocumentPage(Schema):
    knowledge_base: str
    total: int  # documents that match, on every page
    limit: int
    offset: int
    documents: list[DocumentSummary]


class DocumentContentOut(Schema):
    document_id: int
    knowledge_base: str
    title: str | None
    format: str
    status: str
    page_count: int | None
    chunks: int
    # The chunks' text in order, overlaps taken out, `--- page N ---` before each page.
    content: str
    truncated: bool  # cut at max_chars
    max_chars: int
