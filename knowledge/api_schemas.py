"""The contract of the knowledge-base, document and job endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema


class KnowledgeBaseOut(Schema):
    slug: str
    name: str
    description: str
    documents: int
    chunks: int
    # What this caller may do there: "maintainer" (upload, delete, reindex) or "reader".
    role: str


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


class DocumentOut(Schema):
    id: int
    knowledge_base: str
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
