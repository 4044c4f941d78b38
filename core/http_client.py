"""One client base for every OpenAI-compatible upstream service (chat completions, rerank, and
any later provider): each is a thin subclass that builds its request body and reads its answer.

The base owns what they all share:
- the request: `POST` JSON with the bearer key, `Accept-Encoding: identity` (the size cap then
  counts what arrives, and no compressed body can expand far past it in one read), through a
  client whose every read and connect is bounded by the call's one deadline
  (core/http_deadlines.py) and that takes no proxy from the environment (such a proxy would get
  httpx's own transport, which knows nothing of the deadline);
- the answer: its status mapped to the service's domain errors (401/403 → auth failed, 429 →
  rate limited with the server's Retry-After passed on, any other → upstream error), its body
  read in chunks under the size cap and the deadline;
- retries within the deadline by core/http_retries.py's rules;
- a circuit breaker per service, URL and model (core/breaker.py): every request is counted, and
  while the breaker is open a request fails at once with the service's `unavailable` error.

The API key goes into the Authorization header and nowhere else: not into errors, details, reprs,
logs or exception chains. The URL goes to the log only: error bodies reach API clients, who have
no business knowing it. Bodies are never logged: some servers echo request headers, and with them
the key.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from core.breaker import breaker_for, breaker_limits
from core.errors import LocalRagError
from core.http_deadlines import Deadline, deadline_transport
from core.http_retries import (
    RetryableFailure,
    endpoint_display,
    error_details,
    retry_after_seconds,
    retry_wait,
    status_retryable,
)

T = TypeVar("T")

# A dropped or refused connection may well work the second time; a malformed request will not.
RETRYABLE_ERRORS = (httpx.NetworkError, httpx.RemoteProtocolError)
# What counts against a server in its circuit breaker; an unreadable URL is a setting's fault.
BREAKER_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class UpstreamService:
    """What an upstream service is called in messages, its settings and its domain errors."""

    name: str  # "LLM", "rerank": "the {name} server answered HTTP 502"
    url_setting: str  # the variables named in messages, e.g. LLM_BASE_URL
    key_setting: str
    timeout_setting: str
    timeout: type[LocalRagError]
    auth_failed: type[LocalRagError]
    rate_limited: type[LocalRagError]
    upstream_error: type[LocalRagError]
    size_setting: str | None = None  # the variable that sets the answer's size cap, if any
    # Raised while the endpoint's circuit breaker is open; None: the upstream error is.
    unavailable: type[LocalRagError] | None = None


class OpenAICompatibleHTTP:
    """The shared part of a client of one OpenAI-compatible endpoint (see the module)."""

    service: UpstreamService

    def __init__(self, *, url: str, model: str, api_key: str, timeout_seconds: float,
                 max_retries: int, max_response_bytes: int, logger: logging.Logger) -> None:
        self.url = url
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.max_response_bytes = max_response_bytes
        self.logger = logger
        self._api_key = api_key
        self._display_url = endpoint_display(url, setting=self.service.url_setting)

    def __repr__(self) -> str:
        key = "<set>" if self._api_key else "<unset>"
        return (f"{type(self).__name__}(url={self._display_url!r}, model={self.model!r}, "
                f"timeout_seconds={self.timeout_seconds!r}, api_key={key})")

    def with_retries(self, attempt: Callable[[Deadline], T], *, deadline: Deadline) -> T:
        """`attempt(deadline)`, tried again after each RetryableFailure while retries and the
        deadline allow."""
        retries = 0
        while True:
            try:
                return attempt(deadline)
            except RetryableFailure as failure:
                retry_wait(failure=failure, retries_done=retries, max_retries=self.max_retries,
                           deadline=deadline, logger=self.logger,
                           subject=f"{self.service.name} request")
                retries += 1

    def post_read(self, body: dict[str, Any], *, deadline: Deadline) -> bytes:
        """One POST of `body`: the whole answer's bytes, once its status is a success."""
        with self.exchange(body, deadline=deadline) as response:
            self.status_check(response)
            return b"".join(self.body_chunks(response, deadline=deadline))

    def get_read(self, *, deadline: Deadline) -> bytes:
        """One GET of the endpoint (a list of models): the whole answer's bytes, once its status
        is a success."""
        with self.exchange(None, deadline=deadline) as response:
            self.status_check(response)
            return b"".join(self.body_chunks(response, deadline=deadline))

    @contextlib.contextmanager
    def exchange(self, body: dict[str, Any] | None, *,
                 deadline: Deadline) -> Iterator[httpx.Response]:
        """One POST of `body` (a GET without one), its response open (status not checked yet)
        for the block; every httpx error, also one raised while the block reads, becomes the
        service's own."""
        method = "GET" if body is None else "POST"
        breaker = breaker_for(service=self.service.name, url=self._display_url, model=self.model)
        limits = breaker_limits()
        wait = breaker.before_call(limits)
        if wait is not None:
            raise self._unavailable(wait)
        try:
            with httpx.Client(transport=deadline_transport(deadline=deadline),
                              timeout=httpx.Timeout(self.timeout_seconds),
                              trust_env=False) as client, client.stream(
                    method, self.url, headers=self._headers(), json=body) as response:
                # A 4xx is the server answering: only 5xx counts against it.
                if response.status_code >= 500:
                    breaker.record_failure(limits)
                else:
                    breaker.record_success()
                yield response
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            if isinstance(exc, BREAKER_ERRORS):
                breaker.record_failure(limits)
            raise self._translate(exc, deadline=deadline) from None

    def body_chunks(self, response: httpx.Response, *, deadline: Deadline) -> Iterator[bytes]:
        """The response body in chunks, refused once it passes the size cap or the deadline."""
        limit = self.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_large()
        received = 0
        for chunk in response.iter_bytes():
            received += len(chunk)
            if received > limit:
                raise self._too_large()
            # Every read is bounded already; this also stops data that was buffered in time.
            if deadline.remaining() <= 0:
                raise httpx.ReadTimeout("the call's deadline has passed")
            yield chunk

    def status_check(self, response: httpx.Response) -> None:
        """Nothing for a 2xx; else the service's error, as a RetryableFailure where a retry
        may help (429, 408, 5xx)."""
        status = response.status_code
        if 200 <= status < 300:
            return
        name = self.service.name
        self.logger.warning("%s request failed: HTTP %s from %s", name, status, self._display_url)
        details: dict[str, Any] = {"status": status}
        if status in (401, 403):
            raise self.service.auth_failed(
                f"the {name} server rejected the credentials (HTTP {status}); check "
                f"{self.service.key_setting}", details=details)
        retry_after = retry_after_seconds(headers=response.headers)
        error: LocalRagError
        if status == 429:
            headers = ({"Retry-After": str(math.ceil(retry_after))} if retry_after is not None
                       else None)
            error = self.service.rate_limited(
                f"the {name} server is rate limiting requests (HTTP 429)", details=details,
                headers=headers)
        else:
            error = self.service.upstream_error(f"the {name} server answered HTTP {status}",
                                                details=details)
        if status_retryable(status):
            raise RetryableFailure(error, retry_after=retry_after)
        raise error

    def timeout_message(self, deadline: Deadline) -> str:
        """What a timeout error says; a client with more than one limit says which one."""
        return (f"the {self.service.name} server did not answer within "
                f"{self.service.timeout_setting} ({self.timeout_seconds}s)")

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
        # A server on the team's own network often takes no key: then no Authorization at all
        # (`Bearer ` with nothing after it is not a valid header value).
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _unavailable(self, wait: float) -> LocalRagError:
        name = self.service.name
        self.logger.warning("%s request to %s not sent: its circuit breaker is open",
                            name, self._display_url)
        error = self.service.unavailable or self.service.upstream_error
        return error(f"the {name} server failed RAG_BREAKER_FAILURES times in a row; calls "
                     f"fail fast for RAG_BREAKER_COOLOFF_SECONDS, {math.ceil(wait)}s more",
                     details={"reason": "circuit_open"},
                     headers={"Retry-After": str(max(1, math.ceil(wait)))})

    def _too_large(self) -> LocalRagError:
        limit = self.max_response_bytes
        name = self.service.name
        self.logger.warning("%s response cut off: larger than %s bytes", name, limit)
        cap = (f"{self.service.size_setting} ({limit})" if self.service.size_setting
               else f"{limit} bytes")
        return self.service.upstream_error(
            f"the {name} answer is larger than {cap}",
            details={"reason": "response_too_large", "limit_bytes": limit})

    def _translate(self, exc: httpx.HTTPError | httpx.InvalidURL, *, deadline: Deadline
                   ) -> LocalRagError | RetryableFailure:
        kind = type(exc).__name__
        name = self.service.name
        details = error_details(exc, display_url=self._display_url)
        if isinstance(exc, httpx.TimeoutException):
            message = self.timeout_message(deadline)
            self.logger.warning("%s request to %s timed out: %s", name, self._display_url,
                                message)
            return self.service.timeout(message, details=details)
        self.logger.warning("%s request failed: %s from %s", name, kind, self._display_url)
        error = self.service.upstream_error(f"the request to the {name} server failed ({kind})",
                                            details=details)
        return RetryableFailure(error) if isinstance(exc, RETRYABLE_ERRORS) else error


def upstream_malformed(service: UpstreamService, message: str, *, logger: logging.Logger,
                       reason: str = "malformed_response") -> LocalRagError:
    """The error for an answer that is not what the protocol says."""
    logger.warning("%s response malformed: %s", service.name, message)
    return service.upstream_error(message, details={"reason": reason})
