"""The one table that maps error codes to HTTP statuses and CLI exit codes, and the base error.

Each code has exactly one error class, defined next to the code that raises it (for example
`LLMTimeout` in answering/llm.py). A class whose code is not in `ERROR_TABLE` fails when it is
defined, so a new error can never silently become a 500. The API's exception handler and the
management commands' base class read the table — nowhere else decides a status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

# CLI exit codes shared by every command.
EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_NOT_READY, EXIT_LLM = 1, 2, 3, 4

# code -> (HTTP status, CLI exit code)
ERROR_TABLE: dict[str, tuple[int, int]] = {
    "invalid_request": (422, EXIT_BAD_INPUT),
    "invalid_config": (500, EXIT_BAD_INPUT),
    "payload_too_large": (413, EXIT_BAD_INPUT),
    "unsupported_media_type": (415, EXIT_BAD_INPUT),
    "unauthorized": (401, EXIT_BAD_INPUT),
    "not_found": (404, EXIT_BAD_INPUT),
    "bad_request": (400, EXIT_BAD_INPUT),
    "forbidden": (403, EXIT_BAD_INPUT),
    "conflict": (409, EXIT_BAD_INPUT),
    "outbound_refused": (403, EXIT_BAD_INPUT),
    "upload_store_error": (503, EXIT_NOT_READY),
    "too_many_requests": (429, EXIT_BAD_INPUT),
    "method_not_allowed": (405, EXIT_BAD_INPUT),
    "vault_not_found": (422, EXIT_BAD_INPUT),
    "archive_invalid": (422, EXIT_BAD_INPUT),
    "restore_refused": (409, EXIT_BAD_INPUT),
    "vault_empty": (409, EXIT_BAD_INPUT),
    "vault_overlap": (409, EXIT_BAD_INPUT),
    "database_unavailable": (503, EXIT_NOT_READY),
    "database_timeout": (503, EXIT_NOT_READY),
    "database_error": (500, EXIT_FAILURE),
    "schema_not_initialized": (503, EXIT_NOT_READY),
    "pgvector_unavailable": (503, EXIT_NOT_READY),
    "retrieval_not_ready": (503, EXIT_NOT_READY),
    "service_not_ready": (503, EXIT_NOT_READY),
    "ingest_locked": (409, EXIT_NOT_READY),
    "embedding_dim_mismatch": (500, EXIT_NOT_READY),
    "embedding_model_unavailable": (503, EXIT_NOT_READY),
    "embedding_runtime_missing": (503, EXIT_NOT_READY),
    "embedding_timeout": (504, EXIT_LLM),
    "embedding_auth_failed": (502, EXIT_LLM),
    "embedding_rate_limited": (503, EXIT_LLM),
    "embedding_upstream_error": (502, EXIT_LLM),
    "embedded_postgres_error": (500, EXIT_NOT_READY),
    "llm_config_missing": (503, EXIT_LLM),
    "llm_timeout": (504, EXIT_LLM),
    "rerank_config_missing": (503, EXIT_NOT_READY),
    "rerank_model_unavailable": (503, EXIT_NOT_READY),
    "rerank_runtime_missing": (503, EXIT_NOT_READY),
    "rerank_request_invalid": (422, EXIT_BAD_INPUT),
    "rerank_timeout": (504, EXIT_LLM),
    "rerank_auth_failed": (502, EXIT_LLM),
    "rerank_rate_limited": (503, EXIT_LLM),
    "rerank_upstream_error": (502, EXIT_LLM),
    "database_not_utf8": (500, EXIT_NOT_READY),
    "llm_auth_failed": (502, EXIT_LLM),
    "llm_rate_limited": (503, EXIT_LLM),
    "llm_busy": (503, EXIT_LLM),
    "llm_upstream_error": (502, EXIT_LLM),
    # A circuit breaker is open (core/breaker.py): the server failed too often just now.
    "llm_unavailable": (503, EXIT_LLM),
    "embedding_unavailable": (503, EXIT_LLM),
    "rerank_unavailable": (503, EXIT_LLM),
    "internal_error": (500, EXIT_FAILURE),
}


class LocalRagError(Exception):
    """Base of every domain error: a stable `code`, a human message and optional details."""

    code = "internal_error"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.code not in ERROR_TABLE:
            raise TypeError(f"{cls.__qualname__}.code = {cls.code!r} is not in core.errors."
                            "ERROR_TABLE; add its HTTP status and exit code there")

    def __init__(self, message: str, *, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        # HTTP response headers that go with the error (e.g. Retry-After on a 503).
        self.headers = headers or {}

    @property
    def http_status(self) -> int:
        return http_status_of(self.code)

    @property
    def exit_code(self) -> int:
        return ERROR_TABLE[self.code][1]

    def as_body(self) -> dict[str, Any]:
        """The unified error body: {"error": {"code", "message", "details"}}."""
        return error_body(self.code, self.message, self.details)


def http_status_of(code: str) -> int:
    """The HTTP status of an error code, for an error known only by its body (an `error`
    event of a stream); a code outside the table is an internal error."""
    return ERROR_TABLE.get(code, ERROR_TABLE["internal_error"])[0]


def first_line(exc: BaseException | None) -> str:
    """The first line of an exception's message, or its class name when it has none (a missing
    `__cause__`, None, reads "None")."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


class InvalidRequest(LocalRagError):
    code = "invalid_request"


def invalid_request_of(errors: Sequence[Mapping[str, Any]], *,
                       field_name: Callable[[tuple], str]) -> InvalidRequest:
    """The one invalid_request of a request schema's validation errors (pydantic's dicts with
    `loc`, `msg`, `type`): every problem in details["errors"], summed up in the message."""
    problems = [{"field": field_name(tuple(error.get("loc", ()))),
                 "msg": error.get("msg", "invalid"), "type": error.get("type", "invalid")}
                for error in errors]
    summary = "; ".join(f"{p['field']}: {p['msg']}" for p in problems)
    return InvalidRequest(f"invalid request: {summary}", details={"errors": problems})


class NotFound(LocalRagError):
    """Something that does not exist, or that the caller may not see: both answer alike, so
    names do not leak."""

    code = "not_found"


class Forbidden(LocalRagError):
    """The caller may see the thing but not do this to it (a reader deleting a document)."""

    code = "forbidden"


class Conflict(LocalRagError):
    code = "conflict"


class Unauthorized(LocalRagError):
    code = "unauthorized"


class PayloadTooLarge(LocalRagError):
    code = "payload_too_large"


class UnsupportedMediaType(LocalRagError):
    code = "unsupported_media_type"
