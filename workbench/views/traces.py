"""Traces, for researchers: the latest traces of the bases they study with filters, and one
trace in full."""

from __future__ import annotations

import uuid

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from workbench.auth import PersonRequest, research_view
from workbench.pages.traces import trace_detail, traces_page


@require_GET
@research_view
def traces_list(request: PersonRequest) -> HttpResponse:
    page = traces_page(caller=request.caller, filters=request.GET,
                       page=request.GET.get("page"))
    return render(request, "workbench/traces.html", {"traces": page})


@require_GET
@research_view
def trace_view(request: PersonRequest, trace_id: uuid.UUID) -> HttpResponse:
    detail = trace_detail(caller=request.caller, trace_id=trace_id)
    return render(request, "workbench/traces_detail.html", {"detail": detail})


urlpatterns = [
    path("traces/", traces_list, name="traces"),
    path("traces/<uuid:trace_id>/", trace_view, name="trace"),
]
