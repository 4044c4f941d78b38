"""Source view: a cited chunk highlighted in its document between its neighbours, and for a PDF
the page it comes from. A chunk or page the person may not read is answered like a missing one."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from workbench.auth import PersonRequest, person_view
from workbench.pages.sources import page_image_png, source_get


@require_GET
@person_view
def source(request: PersonRequest, chunk_id: int) -> HttpResponse:
    view = source_get(caller=request.caller, chunk_id=chunk_id, page=request.GET.get("page"),
                      quote_start=request.GET.get("quote_start"),
                      quote_end=request.GET.get("quote_end"))
    return render(request, "workbench/source.html", {"source": view})


@require_GET
@person_view
def page_image(request: PersonRequest, document_id: int, page: int) -> HttpResponse:
    png = page_image_png(caller=request.caller, document_id=document_id, page=page)
    response = HttpResponse(png, content_type="image/png")
    # Only this person's browser may keep it: another person may not read the document.
    response["Cache-Control"] = "private, max-age=300"
    return response


urlpatterns = [
    path("chunks/<int:chunk_id>/", source, name="source"),
    path("documents/<int:document_id>/pages/<int:page>.png", page_image, name="page-image"),
]
