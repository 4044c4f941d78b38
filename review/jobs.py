"""The review queue's background jobs: take an excluded page out of search, and build a fixed
document's new version. Both are idempotent: a rerun deletes nothing more, or builds the same
text again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import connection

from core.config import get_config
from jobs.worker import JobContext
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.signals import chunks_committed
from knowledge.upload_store import upload_ensure
from review import sql

JOB_EXCLUDE = "review_exclude"
JOB_FIX = "review_fix"


def review_exclude_job(context: JobContext) -> dict[str, Any]:
    """Delete the chunks of the excluded page; the search index follows (chunks_committed)."""
    task_id = int(context.payload["task_id"])
    with connection.cursor() as cursor:
        cursor.execute(sql.TASK_EXCLUDED, [task_id])
        row = cursor.fetchone()
        if row is None:
            return {"task_id": task_id, "skipped": "the task is not excluded"}
        document_id, base_id, page = row
        cursor.execute(sql.PAGE_CHUNKS_DELETE, [document_id, page, page])
        removed = cursor.rowcount
    chunks_committed.send(sender=review_exclude_job, knowledge_base_ids=[base_id])
    return {"task_id": task_id, "document_id": document_id, "page": page,
            "chunks_removed": removed}


def review_fix_job(context: JobContext) -> dict[str, Any]:
    """Rebuild the task's document from its file with every page fixed on its content replaced
    by the reviewed text: a new version, the one before kept as superseded."""
    task_id = int(context.payload["task_id"])
    document_id = int(context.payload["document_id"])
    with connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_PLACE, [document_id])
        place = cursor.fetchone()
        if place is None or place[2] == "deleting":
            return {"task_id": task_id, "skipped": "the document is gone"}
        cursor.execute(sql.PAGE_FIXES, [document_id])
        fixes = tuple((page, text) for page, text in cursor.fetchall())
    vault_path, relative_path, _ = place
    config = get_config()
    # An upload kept in a bucket may not be on this worker yet: an ingest that did not find
    # its file would take the document out of the index.
    if upload_ensure(Path(vault_path) / relative_path, config=config):
        context.progress("fetch", 0.05)
    context.progress("ingest", 0.1)
    result = vault_ingest(IngestRequest(vault_path=vault_path, wait_for_lock=True,
                                        prepare_workers=0, only=frozenset({relative_path}),
                                        checkpoint=context.checkpoint, page_texts=fixes),
                          config=config)
    return {"task_id": task_id, "document_id": document_id,
            "pages": [page for page, _ in fixes], "chunks_written": result.chunks_written,
            "warnings": [warning["reason"] for warning in result.warnings][:10]}
