"""The OpenAI error shape of the /v1/ endpoints: `{"error": {"message", "type", "param",
"code"}}`.

OpenAI clients read `type` and the HTTP status (the official client raises BadRequestError,
AuthenticationError, NotFoundError, RateLimitError, InternalServerError… by status), so those
follow OpenAI's conventions; `code` stays local-rag's own error code (docs/api.md), the same
word the traces and the rest of the API use. Used by the /v1/ API's exception handlers
(localrag_site/openai_api.py) and by the site's middleware and 404 handler for paths under
OPENAI_PREFIX (localrag_site/http_errors.py)."""

from __future__ import annotations

from typing import Any

from core.errors import http_status_of

OPENAI_PREFIX = "/v1/"
# OpenAI answers every malformed request 400; the rest of this API says 422 invalid_request.
INVALID_REQUEST_STATUS = 400
_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
          429: "rate_limit_error"}


def openai_error_type(status: int) -> str:
    """OpenAI's error `type` for an HTTP status."""
    if status in _TYPES:
        return _TYPES[status]
    return "server_error" if status >= 500 else "invalid_request_error"


def openai_status(code: str) -> int:
    """The HTTP status of a local-rag error code on the /v1/ endpoints."""
    return INVALID_REQUEST_STATUS if code == "invalid_request" else http_status_of(code)


def openai_error_body(*, code: str, message: str, status: int,
                      param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": openai_error_type(status), "param": param,
                      "code": code}}


def openai_error_of(error: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI body of a unified error (`{"code", "message", "details"}`), e.g. a stream's
    `error` event."""
    code = error.get("code", "internal_error")
    return openai_error_body(code=code, message=error.get("message", ""),
                             status=openai_status(code), param=param_of(error.get("details")))


def param_of(details: dict[str, Any] | None) -> str | None:
    """The request parameter an error is about, when its details name one."""
    details = details or {}
    for key in ("param", "field"):
        if isinstance(details.get(key), str):
            return details[key]
    errors = details.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        field = errors[0].get("field")
        return field if isinstance(field, str) else None
    return None
