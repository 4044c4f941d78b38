"""The review queue's pages: what the list and a task's page show (the task, its flagged
numbers marked in its text or table), and the maintainer's decisions passed to review/."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import pgettext_lazy

from access.callers import Caller
from review.selectors import task_get, tasks_list
from review.services import review_accept, review_exclude, review_fix
from review.types import ReviewAction, ReviewFix, ReviewQuery, ReviewTask

LIST_PAGE = 50
# A task's statuses in the person's words ("open" is also a circuit breaker's state, in other
# words: labels.py holds that one).
STATUS_LABELS = {
    "open": pgettext_lazy("review", "open"),
    "accepted": pgettext_lazy("review", "accepted"),
    "fixed": pgettext_lazy("review", "fixed"),
    "excluded": pgettext_lazy("review", "excluded"),
    "superseded": pgettext_lazy("review", "superseded"),
}


@dataclass(frozen=True)
class TaskPage:
    task: ReviewTask
    status_label: str
    maintainer: bool
    # The text shown, cut into (piece, flagged) so the flagged numbers can be marked.
    pieces: list[tuple[str, bool]]
    # A table's rows, each cell as (text, flagged).
    cells: list[list[tuple[str, bool]]]


def queue_page(*, caller: Caller, slug: str | None, status: str | None,
               kind: str | None, offset: int) -> dict[str, Any]:
    """A page of the queue, open tasks unless another status is asked for; each task with its
    status's label."""
    page = tasks_list(caller=caller, query=ReviewQuery(
        knowledge_base=slug or None, status=status or None, kind=kind or None,
        limit=LIST_PAGE, offset=max(0, offset)))
    for task in page["tasks"]:
        task["status_label"] = STATUS_LABELS.get(task["status"], task["status"])
    page["statuses"] = list(STATUS_LABELS.items())
    shown = page["offset"] + len(page["tasks"])
    page["next"] = shown if shown < page["total"] else None
    page["previous"] = max(0, page["offset"] - LIST_PAGE) if page["offset"] else None
    return page


def task_page(*, caller: Caller, task_id: int) -> TaskPage:
    task = task_get(caller=caller, task_id=task_id)
    text = task.corrected_text or task.extracted_text
    return TaskPage(task=task, status_label=str(STATUS_LABELS.get(task.status, task.status)),
                    maintainer=caller.may_maintain(task.knowledge_base_id),
                    pieces=text_pieces(text, task.flags if task.kind == "ocr_page" else []),
                    cells=_cells(task))


def task_decide(*, caller: Caller, task_id: int, action: str, text: str | None,
                note: str | None) -> ReviewTask:
    """Accept, exclude or fix (`action`) the task."""
    if action == "accept":
        return review_accept(request=ReviewAction(task_id=task_id, note=note), caller=caller)
    if action == "exclude":
        return review_exclude(request=ReviewAction(task_id=task_id, note=note), caller=caller)
    return review_fix(request=ReviewFix(task_id=task_id, text=text or "", note=note),
                      caller=caller)


def text_pieces(text: str, flags: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    """`text` cut at the flags' offsets: (piece, whether it is a flagged number)."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for flag in sorted(flags, key=lambda flag: int(flag["start"])):
        start, end = int(flag["start"]), int(flag["end"])
        if start < at or end > len(text):
            continue
        pieces.extend([(text[at:start], False), (text[start:end], True)])
        at = end
    pieces.append((text[at:], False))
    return [piece for piece in pieces if piece[0]]


def _cells(task: ReviewTask) -> list[list[tuple[str, bool]]]:
    flagged = {(int(flag["row"]), int(flag["column"])) for flag in task.flags
               if "row" in flag}
    return [[(cell, (row, column) in flagged) for column, cell in enumerate(cells)]
            for row, cells in enumerate(task.rows or [])]
