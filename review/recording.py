"""Review tasks made from the versions an ingest stored (knowledge.signals.versions_stored).

Knowledge sits below this app and does not import it: its ingest announces each stored version
that has something to review, with what the parser found (OCR pages and their confidence,
ruled tables, the text of those pages), and this receiver turns that into tasks: one per OCR
page below RAG_OCR_REVIEW_CONFIDENCE, one per table. A version recorded twice adds nothing
(one task per version, page and table); a new version closes the open tasks of the earlier
ones, the pages excluded on an earlier version of the same file stay excluded, and its pages
fixed there are fixed again (a review_fix job builds the version with those corrections).
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connection, transaction

from core.config import get_config
from core.db import db_errors_translated
from jobs.queue import job_enqueue
from knowledge.signals import ReviewMaterial, StoredVersion, chunks_committed
from parsing.cells import cells_flag, text_flag
from parsing.formats.pdf_tables import table_markdown
from review import sql
from review.jobs import JOB_FIX

# One page's text as a task keeps it: a page is rarely longer; a longer one is cut (the file
# and the index keep all of it).
TEXT_MAX_CHARS = 100_000


def on_versions_stored(sender: Any, *, knowledge_base_id: int, vault_path: str,
                       versions: list[StoredVersion], **_: Any) -> None:
    tasks_record(vault_path=vault_path, versions=versions,
                 threshold=get_config().rag_ocr_review_confidence)


def tasks_record(*, vault_path: str, versions: list[StoredVersion], threshold: float) -> int:
    """Record the review tasks of stored versions; returns how many pages were excluded again
    (carried over from an earlier version of the same file)."""
    excluded_again = 0
    bases: set[int] = set()
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        for version in versions:
            cursor.execute(sql.DOCUMENT_ACTIVE, [vault_path, version.relative_path,
                                                 version.content_hash])
            row = cursor.fetchone()
            if row is None:  # replaced or deleted since: its successor records its own
                continue
            document_id, base_id, version_id = row
            for params in _task_rows(version.review, threshold=threshold):
                cursor.execute(sql.TASK_INSERT, [base_id, document_id, version_id, *params])
            cursor.execute(sql.TASKS_SUPERSEDE, [document_id, version_id])
            cursor.execute(sql.EXCLUSIONS_CARRY, {"version": version_id, "document": document_id,
                                                  "content_hash": version.content_hash})
            for (page,) in cursor.fetchall():
                cursor.execute(sql.PAGE_CHUNKS_DELETE, [document_id, page, page])
                excluded_again += 1
                bases.add(base_id)
            cursor.execute(sql.FIX_TO_CARRY, {"version": version_id, "document": document_id,
                                              "content_hash": version.content_hash})
            fixed_task = cursor.fetchone()[0]
            if fixed_task is not None:
                # The file read again without its corrections: they are applied once more.
                job_enqueue(type=JOB_FIX, resource=f"document:{document_id}",
                            payload={"task_id": fixed_task, "document_id": document_id,
                                     "knowledge_base_id": base_id})
    if bases:
        chunks_committed.send(sender=tasks_record, knowledge_base_ids=sorted(bases))
    return excluded_again


def _task_rows(review: ReviewMaterial, *, threshold: float) -> list[list[Any]]:
    """(kind, page, table_index, bbox, rows, text, flags, confidence) of each task."""
    rows: list[list[Any]] = []
    for page, confidence in sorted(review.ocr_confidence.items()):
        if confidence < threshold:
            text = review.page_texts.get(page, "")[:TEXT_MAX_CHARS]
            rows.append(["ocr_page", page, None, None, None, text,
                         json.dumps(text_flag(text), ensure_ascii=False), confidence])
    for table in review.tables:
        cells = [list(row) for row in table.rows]
        text = review.page_texts.get(table.page) or table_markdown(table.rows)
        rows.append(["table", table.page, table.index, json.dumps(list(table.bbox)),
                     json.dumps(cells, ensure_ascii=False), text[:TEXT_MAX_CHARS],
                     json.dumps(cells_flag(table.rows), ensure_ascii=False),
                     review.ocr_confidence.get(table.page)])
    return rows
