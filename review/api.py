"""The review queue's API: `/review/tasks` (a page of tasks), `/review/tasks/{id}` (one), and
`/review/tasks/{id}/accept|fix|exclude` (a maintainer's decision)."""

from __future__ import annotations

from typing import Any

from ninja import Query, Router

from access.auth import CallerRequest
from core.api_schemas import ErrorBody
from review.api_schemas import (
    ReviewDecision,
    ReviewFixIn,
    ReviewKind,
    ReviewStatus,
    ReviewTaskOut,
    ReviewTaskPage,
)
from review.selectors import PAGE_MAX, task_get, tasks_list
from review.services import review_accept, review_exclude, review_fix
from review.types import ReviewAction, ReviewFix, ReviewQuery, ReviewTask

router = Router(tags=["review"])

ERRORS = {code: ErrorBody for code in (400, 401, 403, 404, 409, 422, 503)}


@router.get("/review/tasks", response={200: ReviewTaskPage, **ERRORS},
            summary="A page of review tasks of the bases the caller may study, oldest first")
def tasks_view(request: CallerRequest, knowledge_base: str | None = None,
               status: ReviewStatus | None = None, kind: ReviewKind | None = None,
               limit: int = Query(50, ge=1, le=PAGE_MAX),
               offset: int = Query(0, ge=0)) -> dict[str, Any]:
    return tasks_list(caller=request.auth, query=ReviewQuery(
        knowledge_base=knowledge_base, status=status, kind=kind, limit=limit, offset=offset))


@router.get("/review/tasks/{task_id}", response={200: ReviewTaskOut, **ERRORS},
            summary="One review task: the page's text, table rows, flagged cells")
def task_view(request: CallerRequest, task_id: int) -> ReviewTask:
    return task_get(caller=request.auth, task_id=task_id)


@router.post("/review/tasks/{task_id}/accept", response={200: ReviewTaskOut, **ERRORS},
             summary="Accept the page as indexed (maintainers)")
def accept_view(request: CallerRequest, task_id: int,
                payload: ReviewDecision | None = None) -> ReviewTask:
    return review_accept(request=ReviewAction(task_id=task_id,
                                              note=payload.note if payload else None),
                         caller=request.auth)


@router.post("/review/tasks/{task_id}/exclude", response={200: ReviewTaskOut, **ERRORS},
             summary="Take the page out of search (maintainers); a job applies it")
def exclude_view(request: CallerRequest, task_id: int,
                 payload: ReviewDecision | None = None) -> ReviewTask:
    return review_exclude(request=ReviewAction(task_id=task_id,
                                               note=payload.note if payload else None),
                          caller=request.auth)


@router.post("/review/tasks/{task_id}/fix", response={200: ReviewTaskOut, **ERRORS},
             summary="Correct the page's text (maintainers); a job builds the new version")
def fix_view(request: CallerRequest, task_id: int, payload: ReviewFixIn) -> ReviewTask:
    return review_fix(request=ReviewFix(task_id=task_id, text=payload.text, note=payload.note),
                      caller=request.auth)
