"""The one NinjaAPI: mounts each app's router and maps every error to the unified body."""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.db import Error as DjangoDatabaseError
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.renderers import JSONRenderer

from access.api import router as access_router
from access.auth import caller_auth
from answering.api import router as answering_router
from conversations.api import router as conversations_router
from core.db import database_error
from core.errors import LocalRagError, error_body, invalid_request_of
from evaluation.api import router as evaluation_router
from knowledge.api import router as knowledge_router
from localrag_site.http_errors import body_drain
from localrag_site.parsers import TextJSONParser
from ops.api import router as ops_router
from retrieval.api import router as retrieval_router
from review.api import router as review_router
from traces.recording import measured_of, trace_of, trace_record

logger = logging.getLogger("localrag.api")

class Utf8JSONRenderer(JSONRenderer):
    """JSON with non-ASCII text as is (the sample vault is Chinese), not as \\u escapes."""

    json_dumps_params = {"ensure_ascii": False}


api = NinjaAPI(
    renderer=Utf8JSONRenderer(),
    parser=TextJSONParser(),
    title="local-rag",
    version="0.1.0",
    description="Answers from a local Markdown / Obsidian knowledge base, with citations.",
    docs_url="/docs",
    openapi_url="/openapi.json",
    # Every operation gets its caller (access/auth.py), or 401; /health opts out.
    auth=caller_auth,
)
api.add_router("", ops_router)
api.add_router("", knowledge_router)
api.add_router("", retrieval_router)
api.add_router("", answering_router)
api.add_router("", conversations_router)
api.add_router("", access_router)
api.add_router("", review_router)
api.add_router("", evaluation_router)


@api.exception_handler(LocalRagError)
def on_domain_error(request: HttpRequest, exc: LocalRagError) -> HttpResponse:
    # What the services measured before they failed goes into the request's trace, which
    # TraceMiddleware then records with this error.
    trace_record(trace_of(request), *measured_of(exc))
    response = api.create_response(request, exc.as_body(), status=exc.http_status)
    for name, value in exc.headers.items():
        response[name] = value
    return response


@api.exception_handler(NinjaValidationError)
def on_validation_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    refusal = invalid_request_of(exc.errors, field_name=_field_name)
    return api.create_response(request, refusal.as_body(), status=refusal.http_status)


# Where ninja says a parameter came from, before its name.
PARAMETER_SOURCES = frozenset({"path", "query", "header", "cookie", "file", "form"})


def _field_name(loc: tuple[str | int, ...]) -> str:
    # ninja reports ("body", "payload", "top_k"), ("path", "document_id"), ("file", "file");
    # the client only knows "top_k", "document_id" and "file".
    parts = [str(part) for part in loc]
    if parts[:2] == ["body", "payload"]:
        parts = parts[2:]
    elif len(parts) > 1 and parts[0] in PARAMETER_SOURCES:
        parts = parts[1:]
    return ".".join(parts) or "body"


@api.exception_handler(RequestDataTooBig)
def on_too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    # Django refused the body before reading it: drop it, or the client's next request on this
    # keep-alive connection would be read from the middle of this body.
    body_drain(request)
    return api.create_response(
        request, error_body("payload_too_large", "request body is larger than 1 MB"), status=413)


@api.exception_handler(MultiPartParserError)
def on_unreadable_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    # Django gives up on a part it will not read, e.g. headers over its 1 KB limit (a file
    # name of about a thousand characters): the client's request, not the server, is at fault.
    return api.create_response(
        request, error_body("bad_request", f"the multipart body could not be read: {exc} (a "
                                           "part's headers, its file name included, may hold "
                                           "at most 1,024 bytes)"), status=400)


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, LocalRagError):  # refused by the body parser (parsers.py)
        return on_domain_error(request, exc.__cause__)
    if exc.status_code == 400:  # ninja's "Cannot parse request body": not valid JSON
        return api.create_response(
            request, error_body("invalid_request", "request body is not valid JSON"), status=422)
    code = "invalid_request" if exc.status_code < 500 else "internal_error"
    return api.create_response(request, error_body(code, str(exc)), status=exc.status_code)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(
        request, error_body("unauthorized", "a valid API token is required: send "
                                            "`Authorization: Bearer <token>` (a token from "
                                            "`rag token create`, or RAG_API_TOKEN)"), status=401)
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(DjangoDatabaseError)
def on_database_error(request: HttpRequest, exc: DjangoDatabaseError) -> HttpResponse:
    # A query of an operation that is not wrapped in db_errors_translated (the ORM's, say) when
    # the server restarts under it: still database_unavailable, never a 500.
    error = database_error(exc)
    if error is None:
        return on_unhandled(request, exc)
    trace_record(trace_of(request), *measured_of(exc))
    return on_domain_error(request, error)


@api.exception_handler(Exception)
def on_unhandled(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unhandled error on %s %s", request.method, request.path)
    trace_record(trace_of(request), *measured_of(exc))
    return api.create_response(
        request, error_body("internal_error", "internal server error; see the server log"),
        status=500)
