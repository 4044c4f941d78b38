"""What a maintainer decides about a review task: accept it, fix its page's text, or exclude
its page from search. Each takes a typed request and the caller, checks the maintainer role on
the task's base, and records the decision in one transaction; exclusion and fix queue a job
(review/jobs.py) that does the work, so the decision returns at once and the worker applies it
within seconds."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from access.callers import Caller
from audit.records import AuditEvent, audit_record
from core.db import db_errors_translated, row_as
from core.errors import Conflict, InvalidRequest, NotFound
from jobs.queue import job_enqueue
from review import sql
from review.jobs import JOB_EXCLUDE, JOB_FIX
from review.selectors import task_get
from review.types import FIX_MAX_CHARS, NOTE_MAX_CHARS, ReviewAction, ReviewFix, ReviewTask


def review_accept(*, request: ReviewAction, caller: Caller) -> ReviewTask:
    """Mark an open task accepted: the page stays as indexed."""
    note = _note(request.note)
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        task = _task_open(cursor, caller, request.task_id)
        cursor.execute(sql.TASK_RESOLVE, ["accepted", _who(caller), note, None, request.task_id])
        _audit("accepted", task, note=note)
    return task_get(caller=caller, task_id=request.task_id)


def review_exclude(*, request: ReviewAction, caller: Caller) -> ReviewTask:
    """Mark the task's page excluded and queue the job that takes it out of search."""
    note = _note(request.note)
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        task = _task_open(cursor, caller, request.task_id)
        cursor.execute(sql.TASK_RESOLVE, ["excluded", _who(caller), note, None, request.task_id])
        job_id = job_enqueue(type=JOB_EXCLUDE, resource=f"document:{task.document_id}",
                             payload={"task_id": task.id, "document_id": task.document_id,
                                      "knowledge_base_id": task.knowledge_base_id})
        cursor.execute(sql.TASK_JOB_SET, [job_id, request.task_id])
        _audit("excluded", task, note=note, job_id=job_id)
    return task_get(caller=caller, task_id=request.task_id)


def review_fix(*, request: ReviewFix, caller: Caller) -> ReviewTask:
    """Record the page's corrected text and queue the job that builds the document's new
    version with it (the version the task belongs to is kept, superseded)."""
    text = request.text.replace("\x00", "").strip()
    if not text:
        raise InvalidRequest("the corrected text is empty; to take the page out of search, "
                             "exclude it", details={"field": "text"})
    if len(text) > FIX_MAX_CHARS:
        raise InvalidRequest(f"the corrected text is longer than {FIX_MAX_CHARS:,} characters",
                             details={"field": "text", "max_chars": FIX_MAX_CHARS})
    note = _note(request.note)
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        task = _task_open(cursor, caller, request.task_id)
        if task.format != "pdf":
            raise Conflict(f"review task {task.id} is not of a PDF page: fix its file instead",
                           details={"id": task.id})
        cursor.execute(sql.TASK_RESOLVE, ["fixed", _who(caller), note, text, request.task_id])
        job_id = job_enqueue(type=JOB_FIX, resource=f"document:{task.document_id}",
                             payload={"task_id": task.id, "document_id": task.document_id,
                                      "knowledge_base_id": task.knowledge_base_id})
        cursor.execute(sql.TASK_JOB_SET, [job_id, request.task_id])
        _audit("fixed", task, note=note, job_id=job_id, corrected_chars=len(text))
    return task_get(caller=caller, task_id=request.task_id)


def _audit(status: str, task: ReviewTask, **changes: object) -> None:
    """One audit entry per decision, `review.accept|exclude|fix` (the job it queues records
    none of its own)."""
    where = f"page {task.page}" + (f", table {task.table_index + 1}"
                                   if task.table_index is not None else "")
    action = {"accepted": "review.accept", "excluded": "review.exclude",
              "fixed": "review.fix"}[status]
    audit_record(AuditEvent(action=action, object_type="review_task", object_id=task.id,
                            object_name=f"{task.source}, {where}",
                            changes={"knowledge_base": task.knowledge_base, "kind": task.kind,
                                     "document_id": task.document_id,
                                     "status": {"before": "open", "after": status},
                                     **changes}))


def _task_open(cursor: CursorWrapper, caller: Caller, task_id: int) -> ReviewTask:
    """The task, its row locked, when the caller maintains its base and it is still open."""
    cursor.execute(sql.TASK_FOR_UPDATE, [task_id])
    task = row_as(cursor, ReviewTask.of_row)
    if task is None or not caller.may_read(task.knowledge_base_id):
        raise NotFound(f"review task not found: {task_id}", details={"id": task_id})
    caller.maintain_check(task.knowledge_base_id, what=f"review task {task_id}")
    if task.status != "open":
        raise Conflict(f"review task {task_id} is {task.status}, not open",
                       details={"id": task_id, "status": task.status})
    return task


def _note(note: str | None) -> str | None:
    if note is not None and len(note) > NOTE_MAX_CHARS:
        raise InvalidRequest(f"the note is longer than {NOTE_MAX_CHARS:,} characters",
                             details={"field": "note", "max_chars": NOTE_MAX_CHARS})
    return note.strip() or None if note is not None else None


def _who(caller: Caller) -> str:
    return caller.username or caller.label
