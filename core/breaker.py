"""A circuit breaker per upstream endpoint (LLM, embedding and rerank servers), applied by the
shared client (core/http_client.py) to every request.

A server that is down costs each caller a full timeout and its retries; after
RAG_BREAKER_FAILURES consecutive failures (timeouts, connection errors, 5xx) the breaker opens and
calls fail at once with the service's `*_unavailable` error for RAG_BREAKER_COOLOFF_SECONDS. Then
one trial request is let through (half-open): an answer closes the breaker, a failure opens it
again. A 4xx is an answer — the server is up and refused the request — so it never counts as a
failure and closes the breaker like a success.

Breakers live per process, keyed by (service, url, model), and are thread-safe. Their limits are
read from the configuration at each call, so a changed setting applies without a restart.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from core.config import get_config
from core.config_parse import endpoint_shown

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"
_BREAKERS_KEPT = 64  # endpoints remembered (a process has a few; tests have many)


@dataclass(frozen=True)
class BreakerLimits:
    failures: int  # consecutive failures that open the breaker
    cooloff_seconds: float  # how long it stays open before a trial request


@dataclass(frozen=True)
class BreakerState:
    """One breaker as the status page shows it."""

    service: str
    url: str  # scheme, host, port and path: never a user, password or query (keys hide there)
    model: str
    state: str  # closed, open or half-open
    failures: int  # consecutive failures counted
    reopens_at: datetime | None  # when an open breaker lets a trial through


class CircuitBreaker:
    """Consecutive failures of one endpoint, and whether calls to it may go out now."""

    def __init__(self, *, service: str, url: str, model: str) -> None:
        self.service, self.url, self.model = service, url, model
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None  # time.monotonic() when it opened
        self._trial_at: float | None = None  # when the half-open trial went out

    def before_call(self, limits: BreakerLimits) -> float | None:
        """None when the call may go out; else the seconds until a trial will be let through."""
        now = time.monotonic()
        with self._lock:
            if self._opened_at is None:
                return None
            left = self._opened_at + limits.cooloff_seconds - now
            if left > 0:
                return left
            # One trial at a time; a trial whose outcome never came back (its caller died)
            # gives way to another after a further cool-off.
            if self._trial_at is not None and now - self._trial_at < limits.cooloff_seconds:
                return self._trial_at + limits.cooloff_seconds - now
            self._trial_at = now
            return None

    def record_success(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._trial_at = 0, None, None

    def record_failure(self, limits: BreakerLimits) -> None:
        with self._lock:
            self._failures += 1
            if self._trial_at is not None or self._failures >= limits.failures:
                self._opened_at, self._trial_at = time.monotonic(), None

    def state(self, limits: BreakerLimits) -> BreakerState:
        with self._lock:
            state, reopens_at = CLOSED, None
            if self._opened_at is not None:
                left = self._opened_at + limits.cooloff_seconds - time.monotonic()
                state = OPEN if left > 0 else HALF_OPEN
                if left > 0:
                    reopens_at = datetime.now(UTC) + timedelta(seconds=left)
            return BreakerState(service=self.service, url=endpoint_shown(self.url),
                                model=self.model, state=state, failures=self._failures,
                                reopens_at=reopens_at)


_breakers: dict[tuple[str, str, str], CircuitBreaker] = {}
_registry_lock = threading.Lock()


def breaker_limits() -> BreakerLimits:
    """The limits the configuration sets now."""
    config = get_config()
    return BreakerLimits(failures=config.rag_breaker_failures,
                         cooloff_seconds=config.rag_breaker_cooloff_seconds)


def breaker_for(*, service: str, url: str, model: str) -> CircuitBreaker:
    """This process's breaker of one endpoint, made on first use."""
    key = (service, url, model)
    with _registry_lock:
        breaker = _breakers.get(key)
        if breaker is None:
            breaker = _breakers[key] = CircuitBreaker(service=service, url=url, model=model)
            while len(_breakers) > _BREAKERS_KEPT:
                del _breakers[next(iter(_breakers))]
        return breaker


def breaker_states() -> list[BreakerState]:
    """Every breaker this process has used, in the order first used."""
    limits = breaker_limits()
    with _registry_lock:
        breakers = list(_breakers.values())
    return [breaker.state(limits) for breaker in breakers]


def breakers_reset() -> None:
    """Forget every breaker (tests; a process otherwise keeps them for its life)."""
    with _registry_lock:
        _breakers.clear()
