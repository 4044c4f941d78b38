"""Trying an OpenAI-compatible LLM server before it is relied on: the models it serves
(`GET {base}/models`), one tiny chat completion and one tiny stream, each timed.

Every failure is a ProbeFailed with a code a person can act on (the codes are listed in
docs/llm.md): `llm_unreachable`, `llm_timeout`, `llm_auth_failed`, `llm_not_found` (a wrong
base path), `llm_not_json`, `llm_bad_response`, `llm_too_large`, `llm_no_models`,
`llm_model_choice` (several models and none named), `llm_model_not_served`, `llm_rate_limited`,
`llm_stream_broken`, `llm_upstream_error`. Requests go through the LLM client itself
(answering/llm.py on core/http_client.py), so a probe meets the same deadlines, size caps and
error mapping as an answer, and the key goes nowhere but the Authorization header; messages
name where the key comes from (`key_label`), never the key.

`rag llm use` runs the whole probe before it writes a setting (ops/llm_switch.py); /health and
the status page list the models alone (answering/llm_health.py), which spends no tokens.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

from answering.llm import (
    LLM_SERVICE,
    LLMAuthFailed,
    LLMRateLimited,
    LLMTimeout,
    Messages,
    OpenAICompatibleClient,
)
from core.config_parse import endpoint_shown
from core.errors import LocalRagError
from core.http_client import OpenAICompatibleHTTP
from core.http_deadlines import Deadline

logger = logging.getLogger("localrag.llm")

T = TypeVar("T")

PROBE_MESSAGES: Messages = [{"role": "user", "content": "Reply with the single word: ok"}]
PROBE_MAX_TOKENS = 8
PROBE_MAX_RESPONSE_BYTES = 256 * 1024
# Some servers describe every model at length (hundreds of entries with prices and context
# windows); a list larger than this is refused rather than read.
MODELS_MAX_BYTES = 4 * 1024 * 1024
MODELS_KEPT = 1000  # ids kept of a longer list (its length is still counted)
MODEL_ID_MAX_CHARS = 256
MODELS_SHOWN = 20  # ids a message quotes


class ProbeFailed(Exception):
    """A probe's failure: `code` (see the module), a message with what to do, and the HTTP
    status where the server sent one."""

    def __init__(self, code: str, message: str, *, status: int | None = None,
                 choices: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.choices = choices  # the models to choose from, for llm_model_choice


@dataclass(frozen=True)
class ProbeTarget:
    """Where a probe goes, with what key, and how long each request may take."""

    base_url: str
    api_key: str = field(repr=False)
    timeout_seconds: float
    # How messages name the key: "$OPENAI_API_KEY", "the key file /etc/llm.key"; "" for none.
    key_label: str = ""

    @property
    def shown_url(self) -> str:
        return url_shown(self.base_url)


@dataclass(frozen=True)
class ModelsListing:
    ids: tuple[str, ...]  # the first MODELS_KEPT, in the server's order
    total: int  # every model the list names
    owners: frozenset[str]  # their `owned_by`
    latency_ms: int


@dataclass(frozen=True)
class CompletionTried:
    latency_ms: int
    text: str
    max_tokens: int | None  # the limit the server took (None: it refused one)


@dataclass(frozen=True)
class StreamTried:
    first_text_ms: int | None  # until the first text delta; None without one
    latency_ms: int  # until the stream's end
    deltas: int  # text deltas received
    text: str


def url_shown(url: str) -> str:
    """An endpoint as messages may show it (core/config_parse.py `endpoint_shown`), without a
    trailing slash."""
    return endpoint_shown(url).rstrip("/")


class _ModelsClient(OpenAICompatibleHTTP):
    """`GET {base}/models` with the LLM's key, deadline and error mapping."""

    service = LLM_SERVICE


def llm_models_list(target: ProbeTarget) -> ModelsListing:
    """The models the server lists; ProbeFailed when it cannot be read."""
    client = _ModelsClient(url=f"{target.base_url.rstrip('/')}/models", model="",
                           api_key=target.api_key, timeout_seconds=target.timeout_seconds,
                           max_retries=0, max_response_bytes=MODELS_MAX_BYTES, logger=logger)
    started = time.monotonic()
    # With no retry (max_retries=0), a failure that could be retried is raised as it is.
    raw = _translated(target, "models", lambda: client.with_retries(
        lambda deadline: client.get_read(deadline=deadline),
        deadline=Deadline(seconds=target.timeout_seconds)))
    latency_ms = _ms_since(started)
    return _models_parse(raw, target=target, latency_ms=latency_ms)


def llm_model_choose(listing: ModelsListing, *, target: ProbeTarget) -> str:
    """The model to use when none is named: the server's only one."""
    if not listing.ids:
        raise ProbeFailed("llm_no_models", f"{target.shown_url} serves no model yet")
    if len(listing.ids) > 1:
        raise ProbeFailed("llm_model_choice",
                          f"{target.shown_url} serves {listing.total} models; name one with "
                          f"--model: {_some(listing.ids, listing.total)}", choices=listing.ids)
    return listing.ids[0]


def llm_model_check(listing: ModelsListing, *, model: str, target: ProbeTarget) -> None:
    """ProbeFailed unless the server lists `model`. Ollama also answers to a name without its
    `:latest` tag, so that counts as listed."""
    if model in listing.ids or f"{model}:latest" in listing.ids:
        return
    if len(listing.ids) < listing.total:
        return  # the list was cut: the model may well be among the rest
    if not listing.ids:
        raise ProbeFailed("llm_no_models", f"{target.shown_url} serves no model yet")
    raise ProbeFailed("llm_model_not_served",
                      f"{target.shown_url} does not serve {model!r}; it serves "
                      f"{_some(listing.ids, listing.total)}", choices=listing.ids)


def llm_completion_try(target: ProbeTarget, *, model: str) -> CompletionTried:
    """One chat completion of at most PROBE_MAX_TOKENS tokens."""
    max_tokens: int | None = PROBE_MAX_TOKENS
    started = time.monotonic()
    try:
        text = _translated(target, "completion", lambda: _client(target, model).complete(
            messages=PROBE_MESSAGES))
    except ProbeFailed as failure:
        if failure.status != 400:
            raise
        # Some models refuse `max_tokens` (OpenAI's reasoning models want another name for
        # it); answers never send it, so the same request without it is the fair test.
        max_tokens = None
        started = time.monotonic()
        text = _translated(target, "completion", lambda: _client(
            target, model, max_tokens=None).complete(messages=PROBE_MESSAGES))
    return CompletionTried(latency_ms=_ms_since(started), text=text, max_tokens=max_tokens)


def llm_stream_try(target: ProbeTarget, *, model: str, max_tokens: int | None = PROBE_MAX_TOKENS
                   ) -> StreamTried:
    """One streamed chat completion, read to its end: how long until the first text and in
    all. Any failure but a timeout is `llm_stream_broken`: the server answers, but not as a
    stream of server-sent events."""
    client = _client(target, model, max_tokens=max_tokens)
    started = time.monotonic()
    first: int | None = None
    pieces: list[str] = []

    def read() -> None:
        nonlocal first
        for delta in client.stream(messages=PROBE_MESSAGES):
            if first is None:
                first = _ms_since(started)
            pieces.append(delta)

    try:
        _translated(target, "stream", read)
    except ProbeFailed as failure:
        if failure.code in ("llm_timeout", "llm_unreachable", "llm_auth_failed"):
            raise
        raise ProbeFailed("llm_stream_broken", f"streaming does not work: {failure.message}",
                          status=failure.status) from None
    return StreamTried(first_text_ms=first, latency_ms=_ms_since(started), deltas=len(pieces),
                       text="".join(pieces))


def _client(target: ProbeTarget, model: str, *,
            max_tokens: int | None = PROBE_MAX_TOKENS) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(base_url=target.base_url, model=model, api_key=target.api_key,
                                  timeout_seconds=target.timeout_seconds,
                                  stream_max_seconds=target.timeout_seconds, max_retries=0,
                                  max_response_bytes=PROBE_MAX_RESPONSE_BYTES,
                                  max_tokens=max_tokens)


def _translated(target: ProbeTarget, stage: str, call: Callable[[], T]) -> T:
    """`call()`, its LLM errors turned into ProbeFailed with what to do about each."""
    try:
        return call()
    except LocalRagError as exc:
        raise _failure(exc, target=target, stage=stage) from None


def _failure(exc: LocalRagError, *, target: ProbeTarget, stage: str) -> ProbeFailed:
    status = exc.details.get("status")
    url = target.shown_url
    if isinstance(exc, LLMTimeout):
        return ProbeFailed("llm_timeout", f"{url} did not answer within "
                           f"{target.timeout_seconds:g}s ({stage}); a model that is still "
                           "loading may need a longer --timeout")
    if isinstance(exc, LLMAuthFailed):
        if target.key_label:
            message = (f"{url} rejected the key from {target.key_label} (HTTP {status}); check "
                       "that it is the key for this server")
        else:
            message = (f"{url} wants a key (HTTP {status}) and none was sent: name where it is "
                       "with --key-env VAR or --key-file PATH")
        return ProbeFailed("llm_auth_failed", message, status=status)
    if isinstance(exc, LLMRateLimited):
        return ProbeFailed("llm_rate_limited", f"{url} is rate limiting requests (HTTP 429); "
                           "try again later, or check the account's quota", status=status)
    error = exc.details.get("error", "")
    reason = exc.details.get("reason", "")
    if reason == "circuit_open":
        return ProbeFailed("llm_unavailable", f"{url} failed too often just now: {exc.message}")
    if status == 404:
        return ProbeFailed("llm_not_found", f"{url} answered HTTP 404 to the {stage} request: "
                           f"{_base_path_hint(target.base_url)}", status=404)
    if error == "ConnectError":
        return ProbeFailed("llm_unreachable", f"nothing answers at {url} ({error}): is the "
                           "server running, on that host and port?")
    if reason == "response_too_large":
        return ProbeFailed("llm_too_large", f"the {stage} answer of {url} is larger than "
                           f"{exc.details.get('limit_bytes')} bytes")
    if reason == "malformed_response":
        return ProbeFailed("llm_bad_response", f"{url} answered the {stage} request with "
                           f"something that is not an OpenAI-compatible answer: {exc.message}")
    if status is not None:
        return ProbeFailed("llm_upstream_error", f"{url} answered HTTP {status} to the {stage} "
                           "request", status=status)
    return ProbeFailed("llm_upstream_error", f"the {stage} request to {url} failed "
                       f"({error or exc.code})")


def _base_path_hint(base_url: str) -> str:
    path = urlsplit(base_url).path.rstrip("/")
    if not path.endswith("/v1"):
        return (f"OpenAI-compatible servers are usually under /v1; try "
                f"{url_shown(base_url)}/v1")
    return "is this the API's base URL? check the server's documentation for it"


def _models_parse(raw: bytes, *, target: ProbeTarget, latency_ms: int) -> ModelsListing:
    url = f"{target.shown_url}/models"
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError):
        page = " (a web page?)" if raw.lstrip()[:1] == b"<" else ""
        raise ProbeFailed("llm_not_json", f"{url} answered with something that is not JSON"
                          f"{page}: is {target.shown_url} the API's base URL?") from None
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise ProbeFailed("llm_bad_response", f"{url} answered JSON that is not a list of "
                          "models (no `data` array)")
    ids: list[str] = []
    owners: set[str] = set()
    total = 0
    for entry in data:
        model = entry.get("id") if isinstance(entry, dict) else None
        if not (isinstance(model, str) and model.strip() and len(model) <= MODEL_ID_MAX_CHARS
                and model.isprintable()):
            continue
        total += 1
        if len(ids) < MODELS_KEPT:
            ids.append(model)
            owner = entry.get("owned_by")
            if isinstance(owner, str) and len(owners) < MODELS_KEPT:
                owners.add(owner[:MODEL_ID_MAX_CHARS])
    return ModelsListing(ids=tuple(ids), total=total, owners=frozenset(owners),
                         latency_ms=latency_ms)


def _some(ids: tuple[str, ...], total: int) -> str:
    shown = ", ".join(ids[:MODELS_SHOWN])
    return shown + (f" and {total - MODELS_SHOWN} more" if total > MODELS_SHOWN else "")


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
