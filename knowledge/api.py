"""The knowledge app's API: `/knowledge-bases` (listed by anyone, created, changed and deleted by
admins), `/knowledge-bases/{slug}/documents`, `/documents/{id}` (with its text at
`/documents/{id}/content`) and `/jobs/{id}`: what a caller may see of knowledge bases, uploading
documents, and following their jobs."""

from __future__ import annotations

from typing import Any

from ninja import File, Query, Router, UploadedFile
from ninja.responses import Status

from access.auth import CallerRequest
from core.api_schemas import ErrorBody
from core.config import get_config
from knowledge import bases, documents
from knowledge.api_schemas import (
    DocumentContentOut,
    DocumentFormat,
    DocumentOut,
    DocumentPage,
    DocumentStatus,
    JobOut,
    JobRef,
    KnowledgeBaseChange,
    KnowledgeBaseCreate,
    KnowledgeBaseOut,
    UploadOut,
)
from knowledge.document_text import CONTENT_MAX_CHARS, document_content
from knowledge.documents import Upload
from knowledge.selectors import (
    DOCUMENTS_PAGE_MAX,
    documents_of_base,
    kb_entry,
    kb_list_visible,
)

router = Router(tags=["documents"])


ERRORS = {code: ErrorBody for code in (400, 401, 403, 404, 409, 413, 415, 422, 503)}
UPLOAD_CHUNK_BYTES = 1024 * 1024


@router.get("/knowledge-bases", response={200: list[KnowledgeBaseOut], **ERRORS},
            summary="The knowledge bases the caller may read, with counts and its role")
def knowledge_bases_view(request: CallerRequest) -> list[dict[str, Any]]:
    return kb_list_visible(caller=request.auth)


@router.post("/knowledge-bases", response={201: KnowledgeBaseOut, **ERRORS},
             summary="Create an empty knowledge base (admins)")
def knowledge_base_create_view(request: CallerRequest,
                                payload: KnowledgeBaseCreate) -> Status[dict[str, Any]]:
    base = bases.kb_admin_create(caller=request.auth, slug=payload.slug, name=payload.name,
                                 description=payload.description, outbound=payload.outbound)
    return Status(201, kb_entry(base, caller=request.auth))


@router.patch("/knowledge-bases/{slug}", response={200: KnowledgeBaseOut, **ERRORS},
              summary="Rename a knowledge base or change its description (admins)")
def knowledge_base_change_view(request: CallerRequest, slug: str,
                                payload: KnowledgeBaseChange) -> dict[str, Any]:
    base = bases.kb_admin_update(caller=request.auth, slug=slug, name=payload.name,
                                 description=payload.description, outbound=payload.outbound)
    return kb_entry(base, caller=request.auth)


@router.delete("/knowledge-bases/{slug}", response={204: None, **ERRORS},
               summary="Delete an empty knowledge base (admins); refused while it holds "
                       "documents")
def knowledge_base_delete_view(request: CallerRequest, slug: str) -> Status[None]:
    bases.kb_admin_delete(caller=request.auth, slug=slug)
    return Status(204, None)


@router.get("/knowledge-bases/{slug}/documents", response={200: DocumentPage, **ERRORS},
            summary="A page of a knowledge base's documents, newest change first, by status "
                    "and format")
def documents_view(request: CallerRequest, slug: str, status: DocumentStatus | None = None,
                   format: DocumentFormat | None = None,
                   limit: int = Query(50, ge=1, le=DOCUMENTS_PAGE_MAX),
                   offset: int = Query(0, ge=0)) -> dict[str, Any]:
    return documents_of_base(caller=request.auth, slug=slug, status=status, format=format,
                             limit=limit, offset=offset)


@router.post("/knowledge-bases/{slug}/documents", response={200: UploadOut, 202: UploadOut,
                                                           **ERRORS},
             summary="Upload a document (multipart field `file`): 202 with its job, or 200 "
                     "with the document that has the same content")
def upload_view(request: CallerRequest, slug: str,
                file: UploadedFile = File(...)) -> Status[Upload]:
    upload = documents.document_upload(caller=request.auth, slug=slug, filename=file.name,
                                       chunks=file.chunks(UPLOAD_CHUNK_BYTES),
                                       config=get_config())
    return Status(202 if upload.created else 200, upload)


@router.get("/documents/{document_id}", response={200: DocumentOut, **ERRORS},
            summary="A document's metadata, status, page count, versions and last job")
def document_view(request: CallerRequest, document_id: int) -> dict[str, Any]:
    return documents.document_get(caller=request.auth, document_id=document_id)


@router.get("/documents/{document_id}/content", response={200: DocumentContentOut, **ERRORS},
            summary="A document's text as indexed: its chunks in order, with page markers")
def document_content_view(request: CallerRequest, document_id: int,
                          max_chars: int = Query(CONTENT_MAX_CHARS, ge=1, le=CONTENT_MAX_CHARS)
                          ) -> dict[str, Any]:
    return document_content(caller=request.auth, document_id=document_id, max_chars=max_chars)


@router.delete("/documents/{document_id}", response={202: JobRef, **ERRORS},
               summary="Take an uploaded document out of search now; its file is removed by "
                       "a job")
def document_delete_view(request: CallerRequest, document_id: int) -> Status[dict[str, int]]:
    job_id = documents.document_delete(caller=request.auth, document_id=document_id)
    return Status(202, {"document_id": document_id, "job_id": job_id})


@router.post("/documents/{document_id}/reindex", response={202: JobRef, **ERRORS},
             summary="Rebuild a document from its file (it stays searchable meanwhile)")
def document_reindex_view(request: CallerRequest, document_id: int) -> Status[dict[str, int]]:
    job_id = documents.document_reindex(caller=request.auth, document_id=document_id)
    return Status(202, {"document_id": document_id, "job_id": job_id})


@router.get("/jobs/{job_id}", response={200: JobOut, **ERRORS},
            summary="A background job's status, stage, progress, attempts and error")
def job_view(request: CallerRequest, job_id: int) -> dict[str, Any]:
    return documents.job_visible(caller=request.auth, job_id=job_id)
