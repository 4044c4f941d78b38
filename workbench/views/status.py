"""System status: health checks, providers (never a key), index sizes and the vector search
path, counted within the knowledge bases the person may read."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from core.config import get_config
from workbench.auth import PersonRequest, person_view
from workbench.pages.status import system_status


@require_GET
@person_view
def status(request: PersonRequest) -> HttpResponse:
    staff = request.user.is_staff or request.user.is_superuser
    report = system_status(caller=request.caller, config=get_config(), usage=staff)
    return render(request, "workbench/status.html", {"report": report},
                  status=503 if report.status == "unavailable" else 200)


urlpatterns = [path("status/", status, name="status")]
