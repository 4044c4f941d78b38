"""`X-Read-Primary: 1` on a request: its searches read from the primary, never a replica
(core/replicas.py), so a caller sees what it has just written (an upload whose job is done)
without waiting for the replicas to replay it."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from core.replicas import primary_reads

HEADER = "HTTP_X_READ_PRIMARY"


class ReadPrimaryMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.META.get(HEADER, "").strip().lower() in ("1", "true", "yes"):
            with primary_reads():
                return self.get_response(request)
        return self.get_response(request)
