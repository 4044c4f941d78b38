"""Knowledge: the person's knowledge bases, each base's documents (each with a page of its text
as indexed), and for maintainers upload, reindex and delete, with the job's progress polled by
htmx (a full page without JavaScript). A base, document or job the person may not read is
answered like a missing one (404); a reader's change is 403."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from core.config import get_config
from core.errors import Forbidden, LocalRagError, NotFound
from knowledge.selectors import kb_list_visible
from workbench.answer_texts import error_shown
from workbench.auth import PersonRequest, person_view
from workbench.pages import knowledge as knowledge_pages
from workbench.pages.knowledge import Outcome


@require_GET
@person_view
def knowledge(request: PersonRequest) -> HttpResponse:
    return render(request, "workbench/knowledge.html",
                  {"bases": kb_list_visible(caller=request.caller)})


@require_GET
@person_view
def knowledge_base(request: PersonRequest, slug: str) -> HttpResponse:
    return _base_page(request, slug, outcome=None)


@require_POST
@person_view
def knowledge_upload(request: PersonRequest, slug: str) -> HttpResponse:
    try:
        outcome = knowledge_pages.kb_upload(caller=request.caller, slug=slug,
                                            file=request.FILES.get("file"), config=get_config())
    except (NotFound, Forbidden):
        raise
    except LocalRagError as exc:  # too large, not what its extension says, ...
        outcome = Outcome(action="error", status=exc.http_status, error=error_shown(exc))
    return _base_page(request, slug, outcome=outcome)


@require_POST
@person_view
def document_change(request: PersonRequest, document_id: int, action: str) -> HttpResponse:
    """Reindex or delete (`action`, from the route) one document."""
    slug, outcome = knowledge_pages.document_change(caller=request.caller,
                                                    document_id=document_id, action=action)
    return _base_page(request, slug, outcome=outcome)


@require_GET
@person_view
def document(request: PersonRequest, document_id: int) -> HttpResponse:
    page = knowledge_pages.document_page(caller=request.caller, document_id=document_id)
    return render(request, "workbench/document.html", {"page": page})


@require_GET
@person_view
def job(request: PersonRequest, job_id: int) -> HttpResponse:
    view = knowledge_pages.job_view(caller=request.caller, job_id=job_id)
    # htmx polls for the fragment alone; a browser without JavaScript gets the whole page.
    template = "workbench/_job.html" if request.htmx else "workbench/knowledge_job.html"
    return render(request, template, {"job": view})


def _base_page(request: PersonRequest, slug: str, *, outcome: Outcome | None) -> HttpResponse:
    page = knowledge_pages.kb_page(caller=request.caller, slug=slug,
                                   page=request.GET.get("page"), config=get_config())
    return render(request, "workbench/knowledge_base.html", {"page": page, "outcome": outcome},
                  status=outcome.status if outcome else 200)


urlpatterns = [
    path("knowledge/", knowledge, name="knowledge"),
    path("knowledge/<slug:slug>/", knowledge_base, name="knowledge-base"),
    path("knowledge/<slug:slug>/upload/", knowledge_upload, name="knowledge-upload"),
    path("documents/<int:document_id>/", document, name="document"),
    path("documents/<int:document_id>/reindex/", document_change, {"action": "reindex"},
         name="document-reindex"),
    path("documents/<int:document_id>/delete/", document_change, {"action": "delete"},
         name="document-delete"),
    path("jobs/<int:job_id>/", job, name="job"),
]
