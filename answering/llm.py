"""LLM clients (offline fake and OpenAI-compatible over httpx) and their domain errors.

The API key is a secret: it goes into the Authorization header and nowhere else — not into
error messages, details, reprs, logs or exception chains.
"""

from __future__ import annotations

import codecs
import json
import logging
import math
import re
from collections.abc import Iterator
from contextlib import closing
from typing import Any, Protocol

import httpx

from answering.llm_usage import (
    STREAM_USAGE_OPTIONS,
    USAGE_REFUSAL_STATUSES,
    TokenUsage,
    stream_usage_refused,
    stream_usage_wanted,
    usage_parse,
    usage_refusal_named,
)
from answering.prompts import QUESTION_HEADER, SOURCES_HEADER
from core.config import Config
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

logger = logging.getLogger("localrag.llm")

Messages = list[dict[str, str]]


class LLMConfigMissing(LocalRagError):
    code = "llm_config_missing"


class LLMTimeout(LocalRagError):
    code = "llm_timeout"


class LLMAuthFailed(LocalRagError):
    code = "llm_auth_failed"


class LLMRateLimited(LocalRagError):
    code = "llm_rate_limited"


class LLMUpstreamError(LocalRagError):
    code = "llm_upstream_error"


class LLMClient(Protocol):
    # The provider's `usage` of the latest complete(), or of the latest stream() once it has
    # ended; None when the server sent none (the caller then counts tokens itself).
    last_usage: TokenUsage | None

    def complete(self, *, messages: Messages) -> str: ...

    def stream(self, *, messages: Messages) -> Iterator[str]: ...


def llm_config_check(*, config: Config) -> None:
    """Raise LLMConfigMissing naming every unset variable the configured provider needs."""
    if config.llm_provider != "openai-compatible":
        return
    required = {"LLM_BASE_URL": config.llm_base_url, "LLM_API_KEY": config.llm_api_key,
                "LLM_MODEL": config.llm_model}
    missing = [name for name, value in required.items() if not value]
    if missing:
        raise LLMConfigMissing(
            f"LLM_PROVIDER=openai-compatible needs {', '.join(missing)} to be set",
            details={"missing": missing})


def get_llm_client(*, config: Config) -> LLMClient:
    """The client for LLM_PROVIDER; validates its settings before any request is made."""
    llm_config_check(config=config)
    if config.llm_provider == "openai-compatible":
        return OpenAICompatibleClient(base_url=config.llm_base_url, model=config.llm_model,
                                      api_key=config.llm_api_key,
                                      timeout_seconds=config.llm_timeout_seconds,
                                      stream_max_seconds=config.llm_stream_max_seconds,
                                      max_retries=config.llm_max_retries,
                                      max_response_bytes=config.llm_max_response_bytes)
    return FakeLLMClient()


# --- fake ---------------------------------------------------------------------------------------

FAKE_FALLBACK_ANSWER = ("This is a general-knowledge answer from the offline fake model; "
                        "it does not draw on any local source.")
FAKE_NO_CONTEXT_ANSWER = "The local knowledge base does not contain the answer to this question."
FAKE_MAX_BLOCKS = 3
FAKE_MAX_SENTENCE_CHARS = 200
_BLOCK_HEADER = re.compile(r"^\[(\d+)\] source: .*\nheading: .*\nscore: .*\ncontent:\n",
                           re.MULTILINE)
_SENTENCE = re.compile(r".+?(?:[.!?](?=\s|$)|[。！？])")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_STREAM_PIECE = re.compile(r"\s*\S+\s*|\s+")
_SSE_OTHER_FIELDS = ("event", "id", "retry")


class FakeLLMClient:
    """Deterministic, offline: quotes the first sentence of the top blocks with their markers."""

    last_usage: TokenUsage | None = None  # a fake has no tokenizer: its tokens are counted

    def complete(self, *, messages: Messages) -> str:
        """The answer built from the last user message."""
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        if not user.startswith(SOURCES_HEADER):
            return FAKE_FALLBACK_ANSWER
        end = user.rfind(QUESTION_HEADER)
        context = user[len(SOURCES_HEADER):end if end >= 0 else len(user)]
        parts = []
        for number, content in _fake_blocks(context)[:FAKE_MAX_BLOCKS]:
            sentence = _fake_first_sentence(content)
            if sentence:
                parts.append(f"{sentence} [{number}]")
        return " ".join(parts) or FAKE_NO_CONTEXT_ANSWER

    def stream(self, *, messages: Messages) -> Iterator[str]:
        """Word-sized deltas whose concatenation is exactly `complete()`."""
        yield from _STREAM_PIECE.findall(self.complete(messages=messages))


def _fake_blocks(context: str) -> list[tuple[int, str]]:
    headers = list(_BLOCK_HEADER.finditer(context))
    blocks = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(context)
        blocks.append((int(header.group(1)), context[header.end():end]))
    return blocks


def _fake_first_sentence(content: str) -> str:
    lines = content.strip().splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)
    # List markers ("- ", "3. ") are layout, not the start of a sentence.
    lines = [_LIST_MARKER.sub("", line) for line in lines]
    text = " ".join(" ".join(lines).split())
    match = _SENTENCE.match(text)
    sentence = match.group(0) if match else text
    return sentence[:FAKE_MAX_SENTENCE_CHARS].rstrip()


# --- openai-compatible --------------------------------------------------------------------------


# A dropped or refused connection may well work the second time; a malformed request will not.
_RETRYABLE_ERRORS = (httpx.NetworkError, httpx.RemoteProtocolError)


class _StreamUsageRefused(Exception):
    """The server refused `stream_options` (answering/llm_usage.py)."""


class OpenAICompatibleClient:
    """Chat completions over `POST {base_url}/chat/completions`, JSON or SSE.

    Each call keeps one wall-clock deadline (core/http_deadlines.py), retries within it by
    core/http_retries.py's rules, and refuses an answer over `max_response_bytes`. The URL goes
    to the log only: error bodies reach API clients, who have no business knowing it.
    """

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout_seconds: float,
                 stream_max_seconds: float = 300.0, max_retries: int = 2,
                 max_response_bytes: int = 2 * 1024 * 1024) -> None:
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.stream_max_seconds = stream_max_seconds
        self.max_retries = max_retries
        self.max_response_bytes = max_response_bytes
        self._api_key = api_key
        self._display_url = endpoint_display(self.url, setting="LLM_BASE_URL")
        self.last_usage: TokenUsage | None = None

    def __repr__(self) -> str:
        return (f"OpenAICompatibleClient(url={self._display_url!r}, "
                f"model={self.model!r}, timeout_seconds={self.timeout_seconds!r}, api_key=<set>)")

    def complete(self, *, messages: Messages) -> str:
        """The full answer text of one non-streaming completion, all within the timeout."""
        deadline = Deadline(seconds=self.timeout_seconds)
        body = self._body(messages=messages, stream=False)
        self.last_usage = None
        retries = 0
        while True:
            try:
                return self._complete_once(body=body, deadline=deadline)
            except RetryableFailure as failure:
                retry_wait(failure=failure, retries_done=retries, max_retries=self.max_retries,
                           deadline=deadline)
                retries += 1

    def stream(self, *, messages: Messages) -> Iterator[str]:
        """Text deltas from a streaming completion, ending at `data: [DONE]`: at most the timeout
        until the first delta and between two deltas, and at most the stream cap in all."""
        deadline = Deadline(seconds=self.timeout_seconds, cap_seconds=self.stream_max_seconds)
        body = self._body(messages=messages, stream=True)
        self.last_usage = None
        retries = 0
        while True:
            yielded = False
            try:
                with closing(self._stream_once(body=body, deadline=deadline)) as deltas:
                    for delta in deltas:
                        yielded = True
                        yield delta
                        # The idle limit restarts once the caller is done with the delta: its
                        # own time is not the upstream's silence.
                        deadline.extend()
                return
            except _StreamUsageRefused:
                # Refused before any delta: the same request without the option, not a retry.
                stream_usage_refused(url=self.url, model=self.model)
                logger.info("LLM server refused stream_options; streaming without usage")
                body = self._body(messages=messages, stream=True)
            except RetryableFailure as failure:
                # The caller already holds part of this answer; a retry would repeat it.
                if yielded:
                    raise failure.error from None
                retry_wait(failure=failure, retries_done=retries, max_retries=self.max_retries,
                           deadline=deadline)
                retries += 1

    def _complete_once(self, *, body: dict[str, Any], deadline: Deadline) -> str:
        try:
            with self._http(deadline) as client, client.stream(
                    "POST", self.url, headers=self._headers(), json=body) as response:
                self._check_status(response)
                raw = b"".join(self._body_chunks(response, deadline=deadline))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._translate(exc, deadline=deadline) from None
        content, self.last_usage = _completion_parse(raw)
        return content

    def _stream_once(self, *, body: dict[str, Any], deadline: Deadline) -> Iterator[str]:
        try:
            with self._http(deadline) as client, client.stream(
                    "POST", self.url, headers=self._headers(), json=body) as response:
                if "stream_options" in body and self._usage_refused(response, deadline):
                    raise _StreamUsageRefused
                self._check_status(response)
                for line in _lines(self._body_chunks(response, deadline=deadline)):
                    payload = _sse_data(line)
                    if payload is None:
                        continue
                    if payload == "[DONE]":
                        return
                    delta, usage = _chunk_parse(payload)
                    if usage is not None:
                        self.last_usage = usage
                    if delta:
                        yield delta
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._translate(exc, deadline=deadline) from None

    def _http(self, deadline: Deadline) -> httpx.Client:
        # trust_env=False: a proxy taken from the environment would get httpx's own transport,
        # which knows nothing of the deadline.
        return httpx.Client(transport=deadline_transport(deadline=deadline),
                            timeout=httpx.Timeout(self.timeout_seconds), trust_env=False)

    def _headers(self) -> dict[str, str]:
        # identity: the size cap then counts what arrives, and no compressed body can expand
        # far past it in one read.
        return {"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json",
                "Accept-Encoding": "identity"}

    def _body(self, *, messages: Messages, stream: bool) -> dict[str, Any]:
        body = {"model": self.model, "messages": messages, "temperature": 0, "stream": stream}
        if stream and stream_usage_wanted(url=self.url, model=self.model):
            body["stream_options"] = dict(STREAM_USAGE_OPTIONS)
        return body

    def _usage_refused(self, response: httpx.Response, deadline: Deadline) -> bool:
        if response.status_code not in USAGE_REFUSAL_STATUSES:
            return False
        return usage_refusal_named(b"".join(self._body_chunks(response, deadline=deadline)))

    def _body_chunks(self, response: httpx.Response, *, deadline: Deadline) -> Iterator[bytes]:
        limit = self.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        received = 0
        for chunk in response.iter_bytes():
            received += len(chunk)
            if received > limit:
                raise _too_large(limit)
            # Every read is bounded already; this also stops data that was buffered in time.
            if deadline.remaining() <= 0:
                raise httpx.ReadTimeout("the call's deadline has passed")
            yield chunk

    def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        # Bodies are never logged: some servers echo request headers, and with them the key.
        logger.warning("LLM request failed: HTTP %s from %s", status, self._display_url)
        details: dict[str, Any] = {"status": status}
        if status in (401, 403):
            raise LLMAuthFailed(
                f"the LLM server rejected the credentials (HTTP {status}); check LLM_API_KEY",
                details=details)
        retry_after = retry_after_seconds(headers=response.headers)
        if status == 429:
            headers = {"Retry-After": str(math.ceil(retry_after))} if retry_after else None
            error: LocalRagError = LLMRateLimited(
                "the LLM server is rate limiting requests (HTTP 429)", details=details,
                headers=headers)
        else:
            error = LLMUpstreamError(f"the LLM server answered HTTP {status}", details=details)
        if status_retryable(status):
            raise RetryableFailure(error, retry_after=retry_after)
        raise error

    def _translate(self, exc: httpx.HTTPError | httpx.InvalidURL, *, deadline: Deadline
                   ) -> LocalRagError | RetryableFailure:
        name = type(exc).__name__
        details = error_details(exc, display_url=self._display_url)
        if isinstance(exc, httpx.TimeoutException):
            message = self._timeout_message(deadline)
            logger.warning("LLM request to %s timed out: %s", self._display_url, message)
            return LLMTimeout(message, details=details)
        logger.warning("LLM request failed: %s from %s", name, self._display_url)
        error = LLMUpstreamError(f"the request to the LLM server failed ({name})",
                                 details=details)
        return RetryableFailure(error) if isinstance(exc, _RETRYABLE_ERRORS) else error

    def _timeout_message(self, deadline: Deadline) -> str:
        if deadline.cap_seconds is None:
            return (f"the LLM server did not answer within LLM_TIMEOUT_SECONDS "
                    f"({self.timeout_seconds}s)")
        if deadline.capped:
            return (f"the LLM stream did not finish within LLM_STREAM_MAX_SECONDS "
                    f"({self.stream_max_seconds}s)")
        return f"the LLM stream sent no text for LLM_TIMEOUT_SECONDS ({self.timeout_seconds}s)"


def _too_large(limit: int) -> LLMUpstreamError:
    logger.warning("LLM response cut off: larger than %s bytes", limit)
    return LLMUpstreamError(f"the LLM answer is larger than LLM_MAX_RESPONSE_BYTES ({limit})",
                            details={"reason": "response_too_large", "limit_bytes": limit})


def _lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """The lines of a UTF-8 byte stream, without their line ends."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    for chunk in chunks:
        pending += decoder.decode(chunk)
        *lines, pending = pending.split("\n")
        for line in lines:
            yield line.removesuffix("\r")
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending.removesuffix("\r")


def _completion_parse(raw: bytes) -> tuple[str, TokenUsage | None]:
    """The text of a chat completion and its `usage`, when the server sent one."""
    try:
        completion = json.loads(raw)
        content = completion["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise _malformed("the LLM response is not a chat completion "
                         "(choices[0].message.content missing or not JSON)") from None
    if not isinstance(content, str):
        raise _malformed("the LLM response has no text in choices[0].message.content")
    return content, usage_parse(completion)


def _sse_data(line: str) -> str | None:
    """The payload of an SSE `data:` line; None for blank lines, comments and other fields."""
    if line.startswith("data:"):
        return line[len("data:"):].strip()
    if not line or line.startswith(":") or line.split(":", 1)[0] in _SSE_OTHER_FIELDS:
        return None
    # A JSON body or an HTML error page where an event stream was expected.
    raise _malformed("the LLM stream sent a line that is not a server-sent event")


def _chunk_parse(payload: str) -> tuple[str | None, TokenUsage | None]:
    """The text delta of a stream's chunk, and its `usage` (the last chunk's, when asked for)."""
    try:
        chunk = json.loads(payload)
        choices = chunk["choices"]
        if choices == []:
            # The trailing usage-only chunk has no choices.
            return None, usage_parse(chunk)
        content = (choices[0].get("delta") or {}).get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise _malformed("the LLM stream sent a data line that is not a chat completion chunk"
                         ) from None
    return (content if isinstance(content, str) else None), usage_parse(chunk)


def _malformed(message: str) -> LLMUpstreamError:
    logger.warning("LLM response malformed: %s", message)
    return LLMUpstreamError(message, details={"reason": "malformed_response"})
