"""Whether and when a failed HTTP request to an upstream service is tried again (OpenAI's own
client is the model); the LLM client and the remote reranker share these rules.

Retried, up to the caller's `max_retries` (LLM_MAX_RETRIES): 429 and 408 (after the server's
Retry-After when it sends one), 5xx and connection errors. Never retried: 400, 401, 403, 404 and
every other 4xx, malformed answers, answers over a size cap, timeouts (the deadline is spent by
then), and anything once a stream has handed a delta to its caller. Every wait happens inside the
call's deadline: a wait that would not end before it ends the call with the error right away.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from core.dburl import url_password_mask
from core.errors import LocalRagError
from core.http_deadlines import Deadline

_logger = logging.getLogger("localrag.http")

RETRY_STATUSES = frozenset({408, 429})
BACKOFF_FIRST_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8.0


class RetryableFailure(Exception):
    """A failed attempt that may be tried again; `error` is what the caller gets if it is not."""

    def __init__(self, error: LocalRagError, *, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


def status_retryable(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


def retry_after_seconds(*, headers: Mapping[str, str], now: datetime | None = None
                        ) -> float | None:
    """The server's requested wait (retry-after-ms, or Retry-After in seconds or as an HTTP
    date); None when it sent none or one that cannot be read."""
    milliseconds = _non_negative(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    raw = (headers.get("retry-after") or "").strip()
    if not raw:
        return None
    seconds = _non_negative(raw)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_seconds(*, retry: int) -> float:
    """Exponential backoff with jitter before retry number `retry` (0 for the first)."""
    base = min(BACKOFF_FIRST_SECONDS * 2 ** retry, BACKOFF_MAX_SECONDS)
    # Jitter spreads clients that failed together, so they do not come back together.
    return base * (1 - 0.25 * random.random())


def retry_wait(*, failure: RetryableFailure, retries_done: int, max_retries: int,
               deadline: Deadline, logger: logging.Logger | None = None,
               subject: str = "upstream request") -> None:
    """Sleep before the next attempt, or raise the failure's error when no retry fits; the
    waits are logged to `logger` (the caller's, else `localrag.http`) naming `subject`."""
    log = logger or _logger
    # `from None`: the failed attempt's library error stays out of the chain (it may quote the
    # request, and with it the key).
    if retries_done >= max_retries:
        raise failure.error from None
    delay = failure.retry_after
    if delay is None:
        delay = backoff_seconds(retry=retries_done)
    if delay >= deadline.remaining():
        log.warning("%s not retried: a %.2fs wait does not fit in the %.2fs left",
                    subject, delay, deadline.remaining())
        raise failure.error from None
    log.info("%s failed (%s); retry %d of %d in %.2fs", subject, failure.error.code,
             retries_done + 1, max_retries, delay)
    time.sleep(delay)


def _non_negative(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


# Socket- and URL-level errors: their messages can be passed on. Protocol errors can quote a
# rejected header value — an API key — so theirs never are.
QUOTABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.UnsupportedProtocol)


def endpoint_display(url: str, *, setting: str) -> str:
    """An upstream endpoint with any password in it masked, safe for logs."""
    try:
        return url_password_mask(url)
    except ValueError:
        return f"<unparseable {setting}>"


def error_details(exc: Exception, *, display_url: str) -> dict[str, Any]:
    """What an error body may say about a failed upstream request: the error's class, and its
    message only when it can quote neither a key nor the server."""
    details: dict[str, Any] = {"error": type(exc).__name__}
    reason = str(exc)
    if isinstance(exc, QUOTABLE_ERRORS) and display_url not in reason:
        details["reason"] = reason
    return details
