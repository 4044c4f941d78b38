"""Wall-clock deadlines for outbound HTTP calls (LLM, rerank), enforced on every socket wait.

httpx's timeouts bound each network operation, not a call: an upstream that drips one byte every
quarter second never trips a 2 s read timeout, and keeps a request busy for as long as it likes.
Here every connect, TLS handshake, read and write waits at most the time left to a `Deadline`,
and fails as a timeout once none is left — so no blocking wait outlives the call's budget,
whatever the upstream does, while it sends headers as well as the body. No helper thread is
involved: the calling thread itself is never blocked past the deadline.

httpx takes no network backend, so `deadline_transport` builds httpx's transport again on
httpcore's public API (a connection pool with a deadline-aware backend) and maps httpcore's
errors to httpx's, as httpx's own transport does.
"""

from __future__ import annotations

import functools
import math
import ssl
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

# Writes go out in pieces, so a peer that reads slowly cannot stretch one send past the deadline.
_WRITE_PIECE_BYTES = 64 * 1024

# Most specific first: the first match wins.
_HTTPCORE_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)
_HTTPCORE_ERROR_TYPES = tuple(source for source, _ in _HTTPCORE_ERRORS)


class Deadline:
    """A wall-clock limit `seconds` from now, or from the last `extend()`, never later than
    `cap_seconds` from now (a stream: an idle limit between deltas inside a total cap)."""

    def __init__(self, *, seconds: float, cap_seconds: float | None = None) -> None:
        now = time.monotonic()
        self.seconds = seconds
        self.cap_seconds = cap_seconds
        self._idle_at = now + seconds
        self._cap_at = math.inf if cap_seconds is None else now + cap_seconds

    def extend(self) -> None:
        """Give the idle limit again from now; the cap stays where it is."""
        self._idle_at = time.monotonic() + self.seconds

    def remaining(self) -> float:
        return max(0.0, min(self._idle_at, self._cap_at) - time.monotonic())

    @property
    def capped(self) -> bool:
        """Whether the total cap, rather than the idle limit, is what ends the wait."""
        return self._cap_at <= self._idle_at


def deadline_transport(*, deadline: Deadline) -> httpx.BaseTransport:
    """An httpx transport whose every socket wait is bounded by what is left of `deadline`."""
    return _DeadlineTransport(deadline)


def _bounded(deadline: Deadline, timeout: float | None, error: type[Exception]) -> float:
    remaining = deadline.remaining()
    # A zero timeout would switch the socket to non-blocking mode, which fails as a read error
    # rather than a timeout: say "timeout" ourselves.
    if remaining <= 0:
        raise error("the call's deadline has passed")
    return remaining if timeout is None else min(timeout, remaining)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._stream = stream
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(self._deadline, timeout,
                                                     httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), _WRITE_PIECE_BYTES):
            self._stream.write(buffer[start:start + _WRITE_PIECE_BYTES],
                               _bounded(self._deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        stream = self._stream.start_tls(ssl_context, server_hostname,
                                        _bounded(self._deadline, timeout,
                                                 httpcore.ConnectTimeout))
        return _DeadlineStream(stream, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, deadline: Deadline) -> None:
        self._deadline = deadline
        self._backend = httpcore.SyncBackend()

    # Name resolution inside connect_tcp is the one wait a socket timeout cannot bound.
    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(
            host, port, timeout=_bounded(self._deadline, timeout, httpcore.ConnectTimeout),
            local_address=local_address, socket_options=socket_options)
        return _DeadlineStream(stream, self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        stream = self._backend.connect_unix_socket(
            path, timeout=_bounded(self._deadline, timeout, httpcore.ConnectTimeout),
            socket_options=socket_options)
        return _DeadlineStream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        time.sleep(min(seconds, self._deadline.remaining()))


def _httpx_error(exc: Exception) -> httpx.HTTPError:
    return next(target(str(exc)) for source, target in _HTTPCORE_ERRORS
                if isinstance(exc, source))


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except _HTTPCORE_ERROR_TYPES as exc:
            raise _httpx_error(exc) from None

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """httpx's own TLS settings (certifi, SSL_CERT_FILE/SSL_CERT_DIR), built once per process:
    loading the certificate store takes ~50 ms, which every call paid before. A client
    context is safe to share between threads."""
    return httpx.create_ssl_context()


class _DeadlineTransport(httpx.BaseTransport):
    def __init__(self, deadline: Deadline) -> None:
        # One connection, as each call builds its own transport.
        self._pool = httpcore.ConnectionPool(ssl_context=_ssl_context(),
                                             max_connections=1,
                                             network_backend=_DeadlineBackend(deadline))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        try:
            response = self._pool.handle_request(core_request)
        except _HTTPCORE_ERROR_TYPES as exc:
            raise _httpx_error(exc) from None
        assert isinstance(response.stream, Iterable)  # a sync pool's body, as in httpx's own
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_ResponseStream(response.stream),
                              extensions=response.extensions)

    def close(self) -> None:
        self._pool.close()
