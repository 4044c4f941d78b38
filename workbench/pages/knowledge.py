"""What the knowledge pages show and do: a base's documents, uploads, reindex and delete, and a
job's progress. Every change goes through knowledge/documents.py, the same services as the
HTTP API, so its checks (role, size, content, duplicates, vault documents) apply unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.core.paginator import Page, Paginator
from django.utils.translation import gettext, gettext_lazy

from access.callers import Caller
from core.config import Config
from core.errors import Conflict, InvalidRequest, NotFound
from knowledge.document_text import document_content
from knowledge.documents import (
    JOB_DELETE,
    JOB_INGEST,
    JOB_REINDEX,
    Upload,
    document_delete,
    document_get,
    document_reindex,
    document_upload,
    job_visible,
    kb_get_visible,
)
from knowledge.models import Document
from knowledge.selectors import kb_entry
from workbench.answer_texts import error_shown
from workbench.pages.sources import document_shown, document_title

DOCUMENTS_PER_PAGE = 50
UPLOAD_CHUNK_BYTES = 1024 * 1024
JOB_DONE = ("succeeded", "failed", "cancelled")
JOB_LABELS = {JOB_INGEST: gettext_lazy("Indexing"), JOB_REINDEX: gettext_lazy("Reindexing"),
              JOB_DELETE: gettext_lazy("Deleting")}
_DOCUMENT_FIELDS = ("id", "title", "frontmatter", "original_name", "source_name",
                    "relative_path", "vault_path", "format", "status", "page_count",
                    "ocr_page_count", "metadata", "updated_at")
# The document page shows this much of a document's text (the API's /documents/{id}/content
# gives up to 2,000,000 characters).
DOCUMENT_TEXT_CHARS = 200_000


@dataclass(frozen=True)
class JobView:
    job: dict[str, Any]  # job_visible's answer
    label: str
    done: bool
    document: dict[str, Any] | None  # document_get's answer while the document exists
    document_name: str = ""


@dataclass(frozen=True)
class Outcome:
    """What a maintainer's upload, reindex or delete did, shown above the document list."""

    action: str  # uploaded, duplicate, reindex, delete or error
    status: int
    name: str = ""
    document: dict[str, Any] | None = None
    job: JobView | None = None
    error: str = ""


@dataclass(frozen=True)
class BasePage:
    base: dict[str, Any]  # kb_entry: slug, name, description, counts, role
    # Rows of _DOCUMENT_FIELDS (less vault_path; an upload's source name as its relative_path)
    # with `name`, `uploaded` and `error`.
    documents: Page
    maintainer: bool
    upload_max_mb: float
    researcher: bool = False  # may study the base: its review queue is linked


@dataclass(frozen=True)
class DocumentPage:
    document: dict[str, Any]  # document_get's answer
    name: str  # document_title's
    text: str  # as indexed: its chunks in order, with page markers
    truncated: bool  # the text goes on past DOCUMENT_TEXT_CHARS


def kb_page(*, caller: Caller, slug: str, page: str | int | None,
            config: Config) -> BasePage:
    """A base the caller may read and one page of its documents, newest change first;
    NotFound alike for a missing base and a hidden one."""
    base = kb_get_visible(caller, slug)
    entry = kb_entry(base, caller=caller)
    # Only uploads can be deleted here: a vault document leaves with its file.
    uploads = {source.path for source in base.sources if source.kind == "uploads"}
    query = (Document.objects.filter(knowledge_base_id=base.id)
             .order_by("-updated_at", "-id").values(*_DOCUMENT_FIELDS))
    documents = Paginator(query, DOCUMENTS_PER_PAGE).get_page(page)
    documents.object_list = [_document_row(row, uploads) for row in documents.object_list]
    return BasePage(base=entry, documents=documents, maintainer=entry["role"] == "maintainer",
                    upload_max_mb=config.rag_document_max_mb,
                    researcher=caller.may_research(base.id))


def _document_row(row: dict[str, Any], uploads: set[str]) -> dict[str, Any]:
    # Folders on the server are not the reader's business: the vault path stays here.
    vault_path = row.pop("vault_path")
    metadata = row.pop("metadata") or {}
    row = document_shown(row)
    name = document_title(row)
    row.pop("frontmatter")
    return {**row, "uploaded": vault_path in uploads, "name": name,
            "error": metadata.get("error") if row["status"] == "failed" else None}


def document_page(*, caller: Caller, document_id: int) -> DocumentPage:
    """A document the caller may read with its text as indexed (the first
    DOCUMENT_TEXT_CHARS characters); NotFound alike for a missing one and a hidden one."""
    document = document_get(caller=caller, document_id=document_id)
    frontmatter = (Document.objects.filter(pk=document_id)
                   .values_list("frontmatter", flat=True).first()) or {}
    text = document_content(caller=caller, document_id=document_id,
                            max_chars=DOCUMENT_TEXT_CHARS)
    return DocumentPage(document=document,
                        name=document_title({**document, "frontmatter": frontmatter}),
                        text=text["content"], truncated=text["truncated"])


def kb_upload(*, caller: Caller, slug: str, file: UploadedFile | None,
              config: Config) -> Outcome:
    """Upload a file into the base (maintainers only) and say what became of it: queued with
    its job, or the same content already there. Domain errors raise."""
    base = kb_get_visible(caller, slug)
    # Refused before anything about the file is looked at: a reader learns nothing more.
    caller.maintain_check(base.id, what=f"knowledge base {slug}")
    if file is None:
        raise InvalidRequest(gettext("Choose a file to upload."), details={"field": "file"})
    name = file.name
    assert name is not None  # a request's uploaded files have a name
    upload: Upload = document_upload(caller=caller, slug=slug, filename=name,
                                     chunks=file.chunks(UPLOAD_CHUNK_BYTES), config=config)
    document = document_get(caller=caller, document_id=upload.document_id)
    job = job_view(caller=caller, job_id=upload.job_id) if upload.job_id else None
    if upload.created:
        return Outcome(action="uploaded", status=202, name=name, document=document, job=job)
    return Outcome(action="duplicate", status=200, name=name, document=document, job=job)


def document_change(*, caller: Caller, document_id: int, action: str) -> tuple[str, Outcome]:
    """Reindex or delete a document: (its base's slug, what happened). NotFound and Forbidden
    raise; a conflict (a vault document cannot be deleted, one being deleted cannot be
    reindexed) comes back as the outcome's error."""
    document = document_get(caller=caller, document_id=document_id)
    change = document_reindex if action == "reindex" else document_delete
    try:
        job_id = change(caller=caller, document_id=document_id)
    except Conflict as exc:
        return document["knowledge_base"], Outcome(action="error", status=exc.http_status,
                                                   document=document, error=error_shown(exc))
    return document["knowledge_base"], Outcome(action=action, status=202, document=document,
                                               job=job_view(caller=caller, job_id=job_id))


def job_view(*, caller: Caller, job_id: int) -> JobView:
    """A job the caller may see, with its document while that exists; NotFound otherwise."""
    job = job_visible(caller=caller, job_id=job_id)
    document = None
    kind, _, number = job["resource"].partition(":")
    if kind == "document" and number.isdigit():
        try:
            document = document_get(caller=caller, document_id=int(number))
        except NotFound:  # a delete job outlives its document
            document = None
    return JobView(job=job, label=str(JOB_LABELS.get(job["type"], job["type"])),
                   done=job["status"] in JOB_DONE, document=document,
                   document_name=document_title(document) if document else "")
