"""The review queue: `/review/` lists the tasks of the person's bases, `/review/<id>/` shows
the page image beside the extracted text with the numbers to check marked, and maintainers
accept, fix (corrected text) or exclude the page there. A task the person may not read is
answered like a missing one (404); a reader's view or decision is 403."""

from __future__ import annotations

from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from core.errors import Forbidden, LocalRagError, NotFound
from workbench.answer_texts import error_shown
from workbench.auth import PersonRequest, person_view
from workbench.pages import review as review_pages


@require_GET
@person_view
def queue(request: PersonRequest) -> HttpResponse:
    status = request.GET.get("status", "open")
    try:
        offset = int(request.GET.get("offset", "0"))
    except ValueError:
        offset = 0
    page = review_pages.queue_page(caller=request.caller, slug=request.GET.get("kb"),
                                   status=status, kind=request.GET.get("kind"), offset=offset)
    return render(request, "workbench/review.html",
                  {"page": page, "status": status, "kb": request.GET.get("kb", ""),
})


@require_GET
@person_view
def task(request: PersonRequest, task_id: int) -> HttpResponse:
    return _task_page(request, task_id, error=None, status=200)


@require_POST
@person_view
def decide(request: PersonRequest, task_id: int, action: str) -> HttpResponseBase:
    try:
        review_pages.task_decide(caller=request.caller, task_id=task_id, action=action,
                                 text=request.POST.get("text"), note=request.POST.get("note"))
    except (NotFound, Forbidden):
        raise
    except LocalRagError as exc:  # not open any more, empty text, ...
        return _task_page(request, task_id, error=error_shown(exc), status=exc.http_status)
    return redirect("workbench:review-task", task_id=task_id)


def _task_page(request: PersonRequest, task_id: int, *, error: str | None,
               status: int) -> HttpResponse:
    page = review_pages.task_page(caller=request.caller, task_id=task_id)
    return render(request, "workbench/review_task.html",
                  {"page": page, "task": page.task, "error": error},
                  status=status)


urlpatterns = [
    path("review/", queue, name="review"),
    path("review/<int:task_id>/", task, name="review-task"),
    path("review/<int:task_id>/accept/", decide, {"action": "accept"}, name="review-accept"),
    path("review/<int:task_id>/fix/", decide, {"action": "fix"}, name="review-fix"),
    path("review/<int:task_id>/exclude/", decide, {"action": "exclude"},
         name="review-exclude"),
]
