"""The second NinjaAPI, mounted at /v1/: the OpenAI-compatible endpoints
(conversations/openai_api.py), with the same bearer tokens as the main API and every error in
OpenAI's shape (conversations/openai_errors.py). The main API, its /openapi.json and its
unified error body are untouched by it."""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.db import Error as DjangoDatabaseError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError

from access.auth import caller_auth
from conversations.openai_api import router
from conversations.openai_errors import (
    INVALID_REQUEST_STATUS,
    openai_error_body,
    openai_status,
    param_of,
)
from core.db import database_error
from core.errors import LocalRagError, invalid_request_of
from localrag_site.api import Utf8JSONRenderer
from localrag_site.http_errors import body_drain
from localrag_site.parsers import TextJSONParser
from traces.recording import measured_of, trace_of, trace_record

logger = logging.getLogger("localrag.api")

openai_api = NinjaAPI(
    renderer=Utf8JSONRenderer(),
    parser=TextJSONParser(),
    title="local-rag OpenAI-compatible API",
    version="0.1.0",
    description="The knowledge bases as models of the OpenAI chat completions API.",
    docs_url=None,
    openapi_url="/openapi.json",
    urls_namespace="openai",
    auth=caller_auth,
)
openai_api.add_router("", router)


def _error(request: HttpRequest, *, code: str, message: str, status: int,
           param: str | None = None) -> HttpResponse:
    return openai_api.create_response(
        request, openai_error_body(code=code, message=message, status=status, param=param),
        status=status)


@openai_api.exception_handler(LocalRagError)
def on_domain_error(request: HttpRequest, exc: LocalRagError) -> HttpResponse:
    # As the main API's: what was measured before the error goes into the request's trace.
    trace_record(trace_of(request), *measured_of(exc))
    response = _error(request, code=exc.code, message=exc.message,
                      status=openai_status(exc.code), param=param_of(exc.details))
    for name, value in exc.headers.items():
        response[name] = value
    return response


@openai_api.exception_handler(NinjaValidationError)
def on_validation_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    refusal = invalid_request_of(exc.errors, field_name=_param)
    return _error(request, code=refusal.code, message=refusal.message,
                  status=INVALID_REQUEST_STATUS, param=refusal.details["errors"][0]["field"])


def _param(loc: tuple[str | int, ...]) -> str:
    # ninja reports ("body", "payload", "messages", 0, "content"); OpenAI says
    # "messages[0].content".
    parts = list(loc)
    if [str(part) for part in parts[:2]] == ["body", "payload"]:
        parts = parts[2:]
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else f"{'.' if name else ''}{part}"
    return name or "body"


@openai_api.exception_handler(RequestDataTooBig)
def on_too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    body_drain(request)  # as the main API does: keep the keep-alive connection usable
    return _error(request, code="payload_too_large", message="request body is larger than 1 MB",
                  status=413)


@openai_api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, LocalRagError):  # refused by the body parser (parsers.py)
        return on_domain_error(request, exc.__cause__)
    if exc.status_code == 400:  # ninja's "Cannot parse request body": not valid JSON
        return _error(request, code="invalid_request", message="request body is not valid JSON",
                      status=INVALID_REQUEST_STATUS)
    code = "invalid_request" if exc.status_code < 500 else "internal_error"
    return _error(request, code=code, message=str(exc), status=exc.status_code)


@openai_api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = _error(request, code="unauthorized", status=401,
                      message="a valid API token is required as the API key (a token from "
                              "`rag token create`, or RAG_API_TOKEN), sent as "
                              "`Authorization: Bearer <token>`")
    response["WWW-Authenticate"] = "Bearer"
    return response


@openai_api.exception_handler(DjangoDatabaseError)
def on_database_error(request: HttpRequest, exc: DjangoDatabaseError) -> HttpResponse:
    error = database_error(exc)  # as the main API: a lost server is database_unavailable
    if error is None:
        return on_unhandled(request, exc)
    trace_record(trace_of(request), *measured_of(exc))
    return on_domain_error(request, error)


@openai_api.exception_handler(Exception)
def on_unhandled(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unhandled error on %s %s", request.method, request.path)
    trace_record(trace_of(request), *measured_of(exc))
    return _error(request, code="internal_error",
                  message="internal server error; see the server log", status=500)
