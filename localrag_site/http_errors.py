"""The unified error body outside the API's own handlers: 400, 403 for a refused CSRF check, 404
and 405 (the admin and the workbench keep their HTML pages), 415 for request bodies that are not
JSON, and draining a refused body so the client's keep-alive connection stays usable. Under /v1/
(the OpenAI-compatible endpoints) the same errors take OpenAI's shape, as everything on that
path does."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.csrf import csrf_failure as csrf_failure_page
from django.views.defaults import page_not_found

from conversations.openai_errors import OPENAI_PREFIX, openai_error_body, param_of
from core.config import get_config
from core.errors import error_body

ADMIN_PREFIX = "/admin/"
# The session-and-CSRF sites (the admin and the workbench) post forms and show HTML pages.
HTML_PREFIXES = (ADMIN_PREFIX, "/workbench/")
UPLOAD_PATH = re.compile(r"^/knowledge-bases/[^/]+/documents/?$")
MULTIPART_MEDIA_TYPE = "multipart/form-data"
REINDEX_PATH = re.compile(r"^/documents/\d+/reindex/?$")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
JSON_MEDIA_TYPE = "application/json"
# A refused body up to this size is read and dropped, so the connection can carry the next
# request; gunicorn itself drains only 64 KB and then drops the connection without a word.
DRAIN_LIMIT_BYTES = 64 * 1024 * 1024
_DRAIN_CHUNK = 64 * 1024


def error_json(request: HttpRequest, code: str, message: str, status: int,
               details: dict | None = None) -> JsonResponse:
    """The unified error body, or OpenAI's for a request under OPENAI_PREFIX."""
    body = (openai_error_body(code=code, message=message, status=status, param=param_of(details))
            if request.path.startswith(OPENAI_PREFIX) else error_body(code, message, details))
    return JsonResponse(body, status=status, json_dumps_params={"ensure_ascii": False})


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: JSON for API clients, the usual page inside the admin and the workbench."""
    if request.path.startswith(HTML_PREFIXES):
        return page_not_found(request, exception)
    return error_json(request, "not_found", f"no such endpoint: {request.path}", 404)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the admin's and the workbench's forms keep Django's page; a view
    outside them that is not exempt (ninja's root of each API, the static files), asked with
    DELETE say, gets the error body of its path."""
    if request.path.startswith(HTML_PREFIXES):
        return csrf_failure_page(request, reason)
    return error_json(request, "forbidden", f"forbidden: {request.method} {request.path} was "
                      f"refused ({reason})", 403)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400 (a Host not in RAG_ALLOWED_HOSTS, a malformed request): the unified body."""
    return error_json(request, "bad_request", "bad request: the Host header is not one this "
                      "server answers to (RAG_ALLOWED_HOSTS), or the request is malformed", 400)


def body_drain(request: HttpRequest) -> None:
    """Read and drop the unread part of a refused request body (up to DRAIN_LIMIT_BYTES)."""
    try:
        remaining = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    if remaining > DRAIN_LIMIT_BYTES:
        return
    stream = request.META.get("wsgi.input")
    while stream is not None and remaining > 0:
        chunk = stream.read(min(_DRAIN_CHUNK, remaining))
        if not chunk:
            break
        remaining -= len(chunk)


def json_media_type(content_type: str) -> bool:
    """`application/json`, optionally with a UTF-8 charset parameter."""
    media_type, _, parameters = content_type.partition(";")
    if media_type.strip().lower() != JSON_MEDIA_TYPE:
        return False
    for parameter in filter(None, (part.strip() for part in parameters.split(";"))):
        name, _, value = parameter.partition("=")
        if name.strip().lower() != "charset" or value.strip().strip('"').lower() not in (
                "utf-8", "utf8"):
            return False
    return True


class JsonBodyMiddleware:
    """Request bodies of the API must be JSON (415 unsupported_media_type otherwise). A form or
    text/plain body is what any web page can make a browser send to 127.0.0.1 without a CORS
    preflight; requiring application/json closes that door.

    Two exceptions, both refused when a browser says the request comes from another site
    (`Origin` of another host, or `Sec-Fetch-Site` other than same-origin): a multipart upload
    to /knowledge-bases/{slug}/documents (refused at once with 413 when its declared length is
    past the upload limit, before it is read), and a POST without any body to
/documents/{id}/reindex."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method not in BODY_METHODS or request.path.startswith(HTML_PREFIXES):
            return self.get_response(request)
        content_type = request.META.get("CONTENT_TYPE", "")
        if json_media_type(content_type):
            return self.get_response(request)
        upload = (request.method == "POST" and UPLOAD_PATH.match(request.path) is not None
                  and content_type.lower().startswith(MULTIPART_MEDIA_TYPE))
        bodiless = (not content_type and _content_length(request) == 0
                    and REINDEX_PATH.match(request.path) is not None)
        if upload or bodiless:
            if _cross_site(request):
                body_drain(request)
                return error_json(request, "forbidden", "cross-site requests are refused", 403)
            if upload and _content_length(request) > _upload_body_limit():
                return error_json(request, "payload_too_large",
                                  f"the upload is larger than the {_upload_body_limit():,}-"
                                  "byte limit (RAG_DOCUMENT_MAX_MB)", 413)
            return self.get_response(request)
        body_drain(request)
        return error_json(
            request, "unsupported_media_type",
            f"request bodies must be {JSON_MEDIA_TYPE} (got "
            f"{content_type or 'no Content-Type'})", 415)


def _content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _upload_body_limit() -> int:
    """The largest upload body: the file limit plus room for the multipart framing."""
    return get_config().rag_document_max_bytes + 64 * 1024


def _cross_site(request: HttpRequest) -> bool:
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return True
    origin = request.headers.get("Origin")
    if origin is None:
        return False
    return origin.rstrip("/") != f"{request.scheme}://{request.get_host()}"


class MethodNotAllowedMiddleware:
    """django-ninja answers a wrong method with an empty 405; give it the unified body."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or request.path.startswith(HTML_PREFIXES):
            return response
        allowed = response.get("Allow", "")
        refused = error_json(
            request, "method_not_allowed", f"{request.method} is not allowed on {request.path}",
            405, {"allowed": [m.strip() for m in allowed.split(",") if m.strip()]})
        if allowed:
            refused["Allow"] = allowed
        return refused
