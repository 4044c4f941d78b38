"""Reading the review queue: what a caller may see of it.

Tasks show a document's text, so listing and showing them takes the researcher or maintainer
role on the task's base (Caller.may_research); a base the caller cannot read at all answers
not found, like the task itself.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from access.callers import Caller
from core.db import db_errors_translated, row_as, rows_as
from core.errors import InvalidRequest, NotFound
from review import sql
from review.types import KINDS, STATUSES, ReviewQuery, ReviewTask

PAGE_MAX = 200


def task_get(*, caller: Caller, task_id: int) -> ReviewTask:
    """One task the caller may study; NotFound when hidden, Forbidden for a reader."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TASK_GET, [task_id])
        task = row_as(cursor, ReviewTask.of_row)
    if task is None or not caller.may_read(task.knowledge_base_id):
        raise NotFound(f"review task not found: {task_id}", details={"id": task_id})
    caller.research_check(task.knowledge_base_id, what=f"review task {task_id}")
    return task


def tasks_list(*, caller: Caller, query: ReviewQuery) -> dict[str, Any]:
    """A page of the tasks of the bases the caller may study, with the total."""
    if query.status is not None and query.status not in STATUSES:
        raise InvalidRequest(f"status must be one of {', '.join(STATUSES)}",
                             details={"field": "status"})
    if query.kind is not None and query.kind not in KINDS:
        raise InvalidRequest(f"kind must be one of {', '.join(KINDS)}", details={"field": "kind"})
    if not 1 <= query.limit <= PAGE_MAX or query.offset < 0:
        raise InvalidRequest(f"limit must be 1 to {PAGE_MAX} and offset 0 or more",
                             details={"field": "limit"})
    scope = caller.scope(slugs=[query.knowledge_base] if query.knowledge_base else None)
    if query.knowledge_base:
        caller.research_check(scope.knowledge_base_ids[0],
                              what=f"the review tasks of {query.knowledge_base}")
    bases = [base for base in scope.knowledge_base_ids if caller.may_research(base)]
    params = {"bases": bases, "status": query.status, "kind": query.kind,
              "limit": query.limit, "offset": query.offset}
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TASKS_LIST, params)
        tasks = rows_as(cursor, ReviewTask.of_row)
        cursor.execute(sql.TASKS_COUNT, params)
        total = cursor.fetchone()[0]
    return {"tasks": [task.as_dict() for task in tasks], "total": total,
            "limit": query.limit, "offset": query.offset}
