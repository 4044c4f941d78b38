"""Every HTTP request runs under an audit context (audit/context.py): its source from its path
(/admin/ the admin, /workbench/ the workbench, anything else the API), its signed-in user as the
actor until the API's authentication names the caller, its client address (behind the TLS proxy
declared by RAG_TLS_PROXY, the address it forwarded), and a request id
(the trace's, when the request is traced) that the response carries as X-Request-ID."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from audit.context import AuditContext, audit_scope, request_id_new
from core.client_address import client_address
from core.config import get_config
from core.logs import trace_id_var

REQUEST_ID_HEADER = "X-Request-ID"


def source_of(path: str) -> str:
    if path.startswith("/admin/"):
        return "admin"
    if path.startswith("/workbench/"):
        return "workbench"
    return "api"


class AuditContextMiddleware:
    """After Django's AuthenticationMiddleware: `request.user` is known (lazily)."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        context = AuditContext(source=source_of(request.path),
                               request_id=trace_id_var.get() or request_id_new(),
                               user=getattr(request, "user", None),
                               address=client_address(request, config=get_config()) or None)
        with audit_scope(context):
            response = self.get_response(request)
        if REQUEST_ID_HEADER not in response:
            response[REQUEST_ID_HEADER] = context.request_id
        return response
