"""404 and 405 outside the API's own handlers, in the unified error shape (the admin keeps its
HTML pages)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found

from core.errors import error_body

ADMIN_PREFIX = "/admin/"


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: JSON for API clients, the usual page inside the admin."""
    if request.path.startswith(ADMIN_PREFIX):
        return page_not_found(request, exception)
    return JsonResponse(error_body("not_found", f"no such endpoint: {request.path}"), status=404,
                        json_dumps_params={"ensure_ascii": False})


class MethodNotAllowedMiddleware:
    """django-ninja answers a wrong method with an empty 405; give it the unified body."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or request.path.startswith(ADMIN_PREFIX):
            return response
        allowed = response.get("Allow", "")
        unified = JsonResponse(
            error_body("method_not_allowed", f"{request.method} is not allowed on {request.path}",
                       {"allowed": [m.strip() for m in allowed.split(",") if m.strip()]}),
            status=405)
        if allowed:
            unified["Allow"] = allowed
        return unified
