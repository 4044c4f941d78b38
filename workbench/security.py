"""The Content-Security-Policy of the workbench and the admin: scripts, styles, images and
connections from this site only — no inline script, no `eval`, no remote origin — so a note or an
answer that carries markup cannot run anything even if it reached the page unescaped. (Django's
admin uses no inline script or style, so the same policy fits it.)"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

WORKBENCH_PREFIX = "/workbench/"
# The pages people and operators sign in to: the policy is sent on every response under these.
PROTECTED_PREFIXES = (WORKBENCH_PREFIX, "/admin/")

POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(PROTECTED_PREFIXES):
            response.setdefault("Content-Security-Policy", POLICY)
            response.setdefault("Referrer-Policy", "same-origin")
            response.setdefault("X-Content-Type-Options", "nosniff")
        return response
