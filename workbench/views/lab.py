"""Retrieval lab, for researchers: a query and this run's parameters over the bases they study;
the stages' lists come back side by side (an htmx fragment, or the whole page without
JavaScript). Runs are traced by the trace middleware (operation `search`, channel
`workbench`), which is why they post to `lab/run`."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from core.config import get_config
from core.errors import LocalRagError
from knowledge.selectors import kb_list_visible
from traces.recording import measured_of, trace_of, trace_record
from workbench.answer_texts import error_shown
from workbench.auth import PersonRequest, research_view
from workbench.pages.lab import LabForm, lab_run


@require_GET
@research_view
def lab_page(request: PersonRequest) -> HttpResponse:
    bases = kb_list_visible(caller=request.caller.researching())
    form = LabForm(bases=bases, config=get_config())
    return render(request, "workbench/lab.html", {"form": form, "bases": bases})


@require_POST
@research_view
def lab_run_view(request: PersonRequest) -> HttpResponse:
    config = get_config()
    bases = kb_list_visible(caller=request.caller.researching())
    form = LabForm(request.POST, bases=bases, config=config)
    run, error, status = None, None, 200
    if not form.is_valid():
        status = 422
    else:
        try:
            data = form.cleaned_data
            run = lab_run(caller=request.caller, config=config, query=data["query"],
                          mode=data["mode"], top_k=data["top_k"], candidates=data["candidates"],
                          rerank=data["rerank"], knowledge_base=data["knowledge_base"],
                          filters=data["filters"])
            trace_record(trace_of(request), run.measures)
        except LocalRagError as exc:
            trace_record(trace_of(request), *measured_of(exc))
            error, status = exc, exc.http_status
    template = "workbench/_lab_results.html" if request.htmx else "workbench/lab.html"
    return render(request, template, {"form": form, "bases": bases, "run": run,
                                      "error": error, "ran": True,
                                      "error_text": error_shown(error) if error else ""},
                  status=status)


urlpatterns = [
    path("lab/", lab_page, name="lab"),
    path("lab/run", lab_run_view, name="lab-run"),
]
