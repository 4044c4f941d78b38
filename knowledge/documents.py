"""Documents through the API: upload into a knowledge base's upload area, look up, delete,
reindex; and the background jobs that do the work.

An upload is streamed to a hidden file in the base's upload area while its SHA-256 is computed,
checked (size, extension against content), then renamed to a server-generated name. The
client's file name, made safe and unique within the base, is the document's source name
(knowledge/upload_names.py): what its chunks, results and citations are known by, and its title
when the file has none. The document row is created `queued` together with its job in one
transaction, and the job ingests the upload area like any vault, so every format, limit and
guarantee of vault ingest applies. The same content uploaded to the same base again returns the
existing document.
"""

from __future__ import annotations

import hashlib
import os
import uuid
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from access.callers import Caller
from audit.records import AuditEvent, audit_record
from core.config import Config, get_config
from core.db import db_errors_translated, row_as
from core.errors import Conflict, NotFound, PayloadTooLarge, UnsupportedMediaType
from embeddings.outbound import OutboundRefused
from jobs.queue import job_enqueue, job_get
from jobs.worker import JobContext, JobPermanentError, LeaseLost
from knowledge import sql
from knowledge.bases import kb_get_visible, uploads_folder
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.outbound import outbound_check
from knowledge.signals import chunks_committed
from knowledge.upload_names import source_name_clean, source_name_unique
from knowledge.upload_store import (
    LOST_REASONS,
    UploadStoreError,
    bucket_endpoint,
    store_is_bucket,
    upload_ensure,
    upload_limit,
    upload_put,
    upload_remove,
    upload_remove_quietly,
)
from parsing.formats import NOTE_SUFFIX, format_name, suffix_of
from parsing.formats.base import FormatRejected
from parsing.formats.plain_text import text_decode

JOB_INGEST = "document_ingest"
JOB_DELETE = "document_delete"
JOB_REINDEX = "document_reindex"
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Upload:
    document_id: int
    job_id: int | None
    created: bool  # False: the same content was in this base already


def document_upload(*, caller: Caller, slug: str, filename: str | None,
                    chunks: Iterable[bytes], config: Config | None = None) -> Upload:
    """Store an uploaded file in the base's upload area and queue its ingest."""
    config = config or get_config()
    base = kb_get_visible(caller, slug)
    caller.maintain_check(base.id, what=f"knowledge base {slug}")
    name = source_name_clean(filename)
    suffix = suffix_of(name)
    if format_name(name) == "markdown" and suffix != NOTE_SUFFIX:
        raise UnsupportedMediaType(
            f"{name or 'the file'}: only .md, .pdf, .docx and .txt files can be uploaded",
            details={"filename": name})
    limit = upload_limit(name, config=config)
    folder = uploads_folder(config=config, base=base)
    partial = folder / f".upload-{uuid.uuid4().hex}"
    digest = hashlib.sha256()
    size = 0
    try:
        with open(partial, "xb") as handle:
            os.chmod(partial, 0o600)
            for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"{name}: larger than the {limit:,}-byte limit",
                                          details={"limit_bytes": limit})
                digest.update(chunk)
                handle.write(chunk)
        content_check(partial, suffix=suffix, name=name)
        content_hash = digest.hexdigest()
        final = folder / f"{uuid.uuid4().hex}{suffix}"
        if store_is_bucket(config):
            # A bucket is outside this machine unless its host is listed as local: a
            # local-only base's files are not put there (embeddings/outbound.py).
            outbound_check(config=config, url=bucket_endpoint(config),
                           what="keeping this upload in the upload bucket",
                           knowledge_base_ids=[base.id])
        # In the bucket before the row commits: a put that fails stores nothing at all.
        upload_put(partial, stored_at=final, config=config, sha256=content_hash)
        try:
            with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
                # One upload of this content per base at a time: the check and the insert
                # below would otherwise race with a second, identical upload.
                cursor.execute(sql.UPLOAD_LOCK, [f"{base.id}:{content_hash}"])
                cursor.execute(sql.DOCUMENT_BY_HASH, [base.id, content_hash])
                row = cursor.fetchone()
                if row is not None:
                    document_id, job_id, status = row
                    if status == "failed":  # the same file again: try it once more
                        cursor.execute(sql.DOCUMENT_STATUS_SET, ["queued", document_id])
                        job_id = _enqueue(JOB_INGEST, document_id, base.id)
                    duplicate = Upload(document_id=document_id, job_id=job_id, created=False)
                    _upload_audit(cursor, document_id, name, size=size, created=False)
                else:
                    duplicate = None
                    cursor.execute(sql.UPLOAD_NAMES_LOCK, [str(base.id)])
                    source_name = source_name_unique(cursor, knowledge_base_id=base.id,
                                                     name=name)
                    cursor.execute(sql.DOCUMENT_UPLOAD_INSERT, [
                        str(folder), base.id, final.name, str(final), content_hash, size,
                        format_name(name), Path(filename or "").name, source_name])
                    document_id = cursor.fetchone()[0]
                    job_id = _enqueue(JOB_INGEST, document_id, base.id)
                    _upload_audit(cursor, document_id, name, size=size, created=True)
                    # Last: until the row and its job are in, the file is not in the upload
                    # area (where an ingest would index it as a document of its own).
                    os.replace(partial, final)
        except BaseException:
            final.unlink(missing_ok=True)  # the transaction did not commit: no file either
            upload_remove_quietly(final, config=config)
            raise
        if duplicate is not None:  # the file that is already there stays the one kept
            upload_remove_quietly(final, config=config)
            return duplicate
        return Upload(document_id=document_id, job_id=job_id, created=True)
    finally:
        partial.unlink(missing_ok=True)


def _upload_audit(cursor: CursorWrapper, document_id: int, name: str, *, size: int,
                  created: bool) -> None:
    # created False: the same content was there already, and that document is the one kept.
    cursor.execute(sql.DOCUMENT_AUDIT_NAME, [document_id])
    source_name, slug = cursor.fetchone()
    audit_record(AuditEvent(action="document.upload", object_type="document",
                            object_id=document_id, object_name=source_name,
                            changes={"knowledge_base": slug, "uploaded_as": name,
                                     "size_bytes": size, "created": created}))


def _enqueue(job_type: str, document_id: int, knowledge_base_id: int) -> int:
    # The base travels with the job, so its status stays visible (to the same callers) after
    # a delete job has removed the document.
    return job_enqueue(type=job_type, resource=f"document:{document_id}",
                       payload={"document_id": document_id,
                                "knowledge_base_id": knowledge_base_id})


def content_check(path: Path, *, suffix: str, name: str) -> None:
    """The content must be what the extension says: a PDF starts with %PDF-, a DOCX is a ZIP
    holding word/document.xml, text is text."""
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    problem = None
    if suffix == ".pdf":
        problem = None if b"%PDF-" in head[:1024] else "is not a PDF"
    elif suffix == ".docx":
        try:
            with zipfile.ZipFile(path) as archive:
                problem = None if "word/document.xml" in archive.namelist() else (
                    "is a ZIP archive but not a Word document")
        except zipfile.BadZipFile:
            problem = "is not a DOCX (Word) file"
    elif b"\x00" in head:
        problem = "is binary, not text"
    else:
        data = path.read_bytes()
        try:
            if suffix == NOTE_SUFFIX:
                data.decode("utf-8")
            else:
                text_decode(data)
        except (UnicodeDecodeError, FormatRejected):
            problem = "is not UTF-8 text" if suffix == NOTE_SUFFIX else (
                "is neither UTF-8 nor GB18030 text")
    if problem:
        raise UnsupportedMediaType(f"{name}: the content {problem}, which its extension "
                                   f"{suffix} says it should be", details={"filename": name})


def document_get(*, caller: Caller, document_id: int) -> dict[str, Any]:
    """A document's metadata, status, versions and last job; NotFound when hidden."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_DETAIL, [document_id])
        detail: dict[str, Any] | None = row_as(cursor, dict)
        if detail is None or not caller.may_read(detail["knowledge_base_id"]):
            raise NotFound(f"document not found: {document_id}", details={"id": document_id})
        cursor.execute(sql.DOCUMENT_VERSIONS, [document_id])
        versions = [dict(zip([c.name for c in cursor.description], version))
                    for version in cursor.fetchall()]
        cursor.execute(sql.DOCUMENT_LAST_JOB, [f"document:{document_id}"])
        job = cursor.fetchone()
    detail.pop("knowledge_base_id")
    detail["versions"] = versions
    detail["last_job"] = (dict(zip(("id", "type", "status", "stage", "progress", "attempt",
                                    "last_error", "updated_at"), job)) if job else None)
    return detail


def document_delete(*, caller: Caller, document_id: int) -> int:
    """Take an uploaded document out of search at once (one transaction) and queue the removal
    of its file; returns the job id."""
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        base_id, kind, status = _document_for_change(cursor, caller, document_id)
        if kind != "uploads":
            raise Conflict(f"document {document_id} belongs to a vault folder: it leaves the "
                           "index when its file is deleted from the folder and `rag ingest` "
                           "runs", details={"id": document_id})
        if status == "deleting":
            cursor.execute(sql.DOCUMENT_LAST_JOB, [f"document:{document_id}"])
            job = cursor.fetchone()
            if job is not None and job[1] == JOB_DELETE and job[2] in ("queued", "running"):
                return job[0]  # the delete under way
            return _enqueue(JOB_DELETE, document_id, base_id)  # an earlier one gave up
        cursor.execute(sql.DOCUMENT_CHUNKS_DELETE, [document_id])
        cursor.execute(sql.DOCUMENT_STATUS_SET, ["deleting", document_id])
        job_id = _enqueue(JOB_DELETE, document_id, base_id)
        _document_audit(cursor, "document.delete", document_id, job_id)
        return job_id


def document_reindex(*, caller: Caller, document_id: int) -> int:
    """Queue a rebuild of the document from its file; it stays searchable as it is until the
    new version is stored. Returns the job id."""
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        base_id, _, status = _document_for_change(cursor, caller, document_id)
        if status == "deleting":
            raise Conflict(f"document {document_id} is being deleted",
                           details={"id": document_id})
        job_id = _enqueue(JOB_REINDEX, document_id, base_id)
        _document_audit(cursor, "document.reindex", document_id, job_id)
        return job_id


def _document_audit(cursor: CursorWrapper, action: str, document_id: int, job_id: int) -> None:
    cursor.execute(sql.DOCUMENT_AUDIT_NAME, [document_id])
    row = cursor.fetchone()
    source_name, slug = row if row is not None else ("", "")
    audit_record(AuditEvent(action=action, object_type="document", object_id=document_id,
                            object_name=source_name or "",
                            changes={"knowledge_base": slug, "job_id": job_id}))


def _document_for_change(cursor: CursorWrapper, caller: Caller,
                         document_id: int) -> tuple[int, str | None, str]:
    """(base id, source kind, status) of a document the caller may change, its row locked for
    this transaction; NotFound when hidden, Forbidden when only readable."""
    cursor.execute(sql.DOCUMENT_FOR_UPDATE, [document_id])
    row = row_as(cursor, _DocumentLocked)
    if row is None or not caller.may_read(row.knowledge_base_id):
        raise NotFound(f"document not found: {document_id}", details={"id": document_id})
    base_id, kind, status = row.knowledge_base_id, row.kind, row.status
    caller.maintain_check(base_id, what=f"document {document_id}")
    return base_id, kind, status


def job_visible(*, caller: Caller, job_id: int) -> dict[str, Any]:
    """A job's state for the API: visible when its document's base is readable — the base is
    kept in the job, so a delete job stays visible after its document is gone — and jobs of no
    document only to callers who see everything."""
    try:
        job = job_get(job_id)
    except NotFound:
        raise NotFound(f"job not found: {job_id}", details={"id": job_id}) from None
    base_id = None
    if job.resource.startswith("document:"):  # the document's base now, while it exists
        with db_errors_translated(), connection.cursor() as cursor:
            cursor.execute(sql.DOCUMENT_BASE, [int(job.resource.split(":", 1)[1])])
            row = cursor.fetchone()
            base_id = row[0] if row else job.payload.get("knowledge_base_id")
    if not (caller.everything or caller.may_read(base_id)):
        raise NotFound(f"job not found: {job_id}", details={"id": job_id})
    return {"id": job.id, "type": job.type, "resource": job.resource, "status": job.status,
            "stage": job.stage, "progress": job.progress, "attempt": job.attempt,
            "max_attempts": job.max_attempts, "error": job.last_error,
            "result": job.result, "created_at": job.created_at, "updated_at": job.updated_at,
            "finished_at": job.finished_at}


# --- the jobs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _DocumentLocked:
    """A document row locked for a change (sql.DOCUMENT_FOR_UPDATE)."""

    id: int
    knowledge_base_id: int
    kind: str | None  # its source's kind; None for a folder no base lists
    status: str


@dataclass(frozen=True, slots=True)
class _DocumentDeleting:
    """What deleting a document's file needs (sql.DOCUMENT_DELETING_PATH)."""

    file_path: str
    knowledge_base_id: int | None


@dataclass(frozen=True, slots=True)
class _JobDocument:
    """What a document's build job reads of it."""

    vault_path: str
    relative_path: str
    status: str
    uploaded: bool  # its folder is a base's uploads folder


def _document_row(document_id: int) -> _JobDocument | None:
    with connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_JOB_ROW, [document_id])
        return row_as(cursor, _JobDocument)


def document_ingest_job(context: JobContext) -> dict[str, Any]:
    """Build a queued document (or rebuild one, for a reindex): ingest its file, the rest of
    its folder untouched."""
    document_id = int(context.payload["document_id"])
    row = _document_row(document_id)
    if row is None:
        return {"skipped": "the document no longer exists"}
    vault_path, relative_path, status = row.vault_path, row.relative_path, row.status
    uploaded = row.uploaded
    if status == "deleting":
        return {"skipped": "the document is being deleted"}
    config = get_config()
    if uploaded and (status == "queued" or context.type == JOB_REINDEX):
        # A worker elsewhere may not hold the file yet: an ingest that did not find it would
        # take the document out of the index. Refused when the bucket has lost it.
        file = Path(vault_path) / relative_path
        try:
            if upload_ensure(file, config=config):
                context.progress("fetch", 0.05)
        except UploadStoreError as exc:
            lost = exc.details.get("reason") in LOST_REASONS
            if lost or context.attempt >= context.max_attempts:
                _document_settle(document_id, reason=exc.message)
            if lost:
                raise JobPermanentError(exc.message) from exc
            raise  # the bucket did not answer as it should: a later attempt may
    if status == "queued" or context.type == JOB_REINDEX:
        if context.type == JOB_REINDEX:
            with connection.cursor() as cursor:
                cursor.execute(sql.DOCUMENT_REINDEX_MARK, [document_id])
                if cursor.rowcount == 0:  # deleted since the row was read
                    return {"skipped": "the document is being deleted"}
        context.progress("ingest", 0.1)
        try:
            # This document's file only: the rest of its folder is not read again.
            # A cancelled job (or one whose lease another worker took) stops at the ingest's
            # next safe point, before anything of it is written: LeaseLost is raised there.
            result = vault_ingest(IngestRequest(vault_path=vault_path, wait_for_lock=True,
                                                prepare_workers=0,
                                                only=frozenset({relative_path}),
                                                checkpoint=context.checkpoint),
                                  config=config)
        except LeaseLost:
            # Cancelled: the build stopped with nothing written, and no retry will come. (A job
            # another worker took over after its lease expired is that worker's to finish.)
            if job_get(context.id).status == "cancelled":
                _document_settle(document_id, reason="the job was cancelled")
            raise
        except OutboundRefused as exc:
            # The base's policy forbids sending its text to this embedding server: no retry
            # changes that, so the job fails now, with the policy's reason.
            _document_settle(document_id, reason=exc.message)
            raise JobPermanentError(exc.message) from exc
        except BaseException as exc:
            if context.attempt >= context.max_attempts:  # the job ends here: so does the wait
                _document_settle(document_id, reason=f"{type(exc).__name__}: {exc}")
            raise
        context.progress("ingest", 0.9)
        problems = [warning["reason"] for warning in result.warnings
                    if warning["file"] == relative_path]
        row = _document_row(document_id)
        if row is not None and row.status == "queued":
            reason = problems[0] if problems else "the file could not be indexed"
            _document_settle(document_id, reason=reason)
            raise JobPermanentError(reason)
    with connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_CHUNK_COUNT, [document_id])
        chunks = cursor.fetchone()[0]
    return {"document_id": document_id, "chunks": chunks}


def _document_settle(document_id: int, *, reason: str) -> None:
    """A build that will not happen: a document that still has its chunks (a failed reindex)
    stays active as it was; one that never had any is `failed`, with the reason."""
    with connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_SETTLE, [reason, document_id])


def document_delete_job(context: JobContext) -> dict[str, Any]:
    """Remove a deleted document's file, then its row (idempotent: a rerun finds either gone)."""
    document_id = int(context.payload["document_id"])
    with connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_DELETING_PATH, [document_id])
        deleting = row_as(cursor, _DocumentDeleting)
    if deleting is None:
        return {"document_id": document_id, "removed": False}
    upload_remove(Path(deleting.file_path), config=get_config())  # the bucket's object too
    with connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_DELETING_DELETE, [document_id])
    if deleting.knowledge_base_id is not None:
        chunks_committed.send(sender=document_delete_job,
                              knowledge_base_ids=[deleting.knowledge_base_id])
    return {"document_id": document_id, "removed": True}

