"""LLM clients (offline fake and OpenAI-compatible over httpx) and their domain errors.

The API key is a secret: it goes into the Authorization header and nowhere else — not into
error messages, details, reprs, logs or exception chains (core/http_client.py).
"""

from __future__ import annotations

import codecs
import json
import logging
import re
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing
from typing import Any, Protocol

import httpx

from answering.extractive import EXTRACTIVE_MODEL, ExtractiveLLMClient
from answering.llm_usage import (
    STREAM_USAGE_OPTIONS,
    USAGE_REFUSAL_STATUSES,
    TokenUsage,
    stream_usage_refused,
    stream_usage_wanted,
    usage_parse,
    usage_refusal_named,
)
from answering.prompts import prompt_sources_read
from core.config import Config
from core.errors import LocalRagError
from core.http_client import OpenAICompatibleHTTP, UpstreamService, upstream_malformed
from core.http_deadlines import Deadline
from core.http_retries import RetryableFailure, retry_wait
from embeddings.outbound import endpoint_is_local, outbound_record
from knowledge.outbound import outbound_check

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


class LLMUnavailable(LocalRagError):
    """The LLM server's circuit breaker is open (core/breaker.py)."""

    code = "llm_unavailable"


class LLMClient(Protocol):
    # The provider's `usage` of the latest complete(), or of the latest stream() once it has
    # ended; None when the server sent none (the caller then counts tokens itself).
    last_usage: TokenUsage | None

    def complete(self, *, messages: Messages) -> str: ...

    # A generator: closing it ends the upstream request.
    def stream(self, *, messages: Messages) -> Generator[str, None, None]: ...


# The providers that answer in this process, without a model server: nothing leaves the machine,
# no slot is needed, and a conversation's follow-ups are condensed by rule.
IN_PROCESS_PROVIDERS = frozenset({"fake", "extractive"})


def llm_config_check(*, config: Config) -> None:
    """Raise LLMConfigMissing naming every unset variable the configured provider needs."""
    if config.llm_provider != "openai-compatible":
        return
    required = {"LLM_BASE_URL": config.llm_base_url, "LLM_API_KEY": config.llm_api_key,
                "LLM_MODEL": config.llm_model}
    if not llm_key_needed(config=config):
        del required["LLM_API_KEY"]
    missing = [name for name, value in required.items() if not value]
    if missing:
        hint = _key_hint(config) if "LLM_API_KEY" in missing else ""
        raise LLMConfigMissing(
            f"LLM_PROVIDER=openai-compatible needs {', '.join(missing)} to be set{hint}",
            details={"missing": missing})


def llm_key_needed(*, config: Config) -> bool:
    """Whether the LLM server needs a key: always, unless LLM_API_KEY_REQUIRED=false says it
    takes none and it is on this machine (a key that could be left out elsewhere is never
    assumed: a server outside answers everyone who reaches it)."""
    return config.llm_api_key_required or not endpoint_is_local(config.llm_base_url,
                                                                config=config)


def _key_hint(config: Config) -> str:
    if config.llm_api_key_env:
        return f" ({config.llm_api_key_env}, which LLM_API_KEY_ENV names, is not set)"
    if not config.llm_api_key_required:
        return (" (LLM_API_KEY_REQUIRED=false is for a server on this machine, whose host is in "
                "RAG_OUTBOUND_LOCAL_HOSTS)")
    return (" (or LLM_API_KEY_ENV / LLM_API_KEY_FILE; for a server on this machine that takes "
            "no key, LLM_API_KEY_REQUIRED=false)")


def llm_outbound_check(*, config: Config, what: str, knowledge_bases: Iterable[str] = (),
                       knowledge_base_ids: Iterable[int] = ()) -> None:
    """Refuse (OutboundRefused) to send `what`, text of these bases, to an LLM server outside
    this machine when any of them is local-only (embeddings/outbound.py); the fake and the
    extractive answerers are this process."""
    if config.llm_provider == "openai-compatible":
        outbound_check(config=config, url=config.llm_base_url, what=what,
                       knowledge_bases=knowledge_bases, knowledge_base_ids=knowledge_base_ids)


def llm_outbound_record(*, config: Config, messages: Messages, knowledge_bases: Iterable[str] = (),
                        chunk_ids: Iterable[int | None] = ()) -> dict[str, Any] | None:
    """The record of what an LLM server outside this machine is sent (knowledge/outbound.py),
    for the caller to return with what it measured; None for a model on this machine."""
    if config.llm_provider != "openai-compatible":
        return None
    return outbound_record(config=config, url=config.llm_base_url, what="LLM",
                           texts=[message["content"] for message in messages],
                           knowledge_bases=knowledge_bases, chunk_ids=chunk_ids)


def llm_model_name(*, config: Config) -> str:
    """`provider/model` as traces and the usage event name the model: the extractive answerer's
    own version, which LLM_MODEL does not set."""
    if config.llm_provider == "extractive":
        return f"extractive/{EXTRACTIVE_MODEL}"
    return f"{config.llm_provider}/{config.llm_model or 'fake'}"


def get_llm_client(*, config: Config) -> LLMClient:
    """The client for LLM_PROVIDER; validates its settings before any request is made."""
    llm_config_check(config=config)
    if config.llm_provider == "extractive":
        return ExtractiveLLMClient()
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
        sources = prompt_sources_read(user)
        if sources is None:
            return FAKE_FALLBACK_ANSWER
        parts = []
        for block in sources.blocks[:FAKE_MAX_BLOCKS]:
            sentence = _fake_first_sentence(block.content)
            if sentence:
                parts.append(f"{sentence} [{block.number}]")
        return " ".join(parts) or FAKE_NO_CONTEXT_ANSWER

    def stream(self, *, messages: Messages) -> Generator[str, None, None]:
        """Word-sized deltas whose concatenation is exactly `complete()`."""
        yield from _STREAM_PIECE.findall(self.complete(messages=messages))


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


LLM_SERVICE = UpstreamService(
    name="LLM", url_setting="LLM_BASE_URL", key_setting="LLM_API_KEY",
    timeout_setting="LLM_TIMEOUT_SECONDS", size_setting="LLM_MAX_RESPONSE_BYTES",
    timeout=LLMTimeout, auth_failed=LLMAuthFailed, rate_limited=LLMRateLimited,
    upstream_error=LLMUpstreamError, unavailable=LLMUnavailable)


class _StreamUsageRefused(Exception):
    """The server refused `stream_options` (answering/llm_usage.py)."""


class OpenAICompatibleClient(OpenAICompatibleHTTP):
    """Chat completions over `POST {base_url}/chat/completions`, JSON or SSE.

    Each call keeps one wall-clock deadline, retries within it and refuses an answer over
    `max_response_bytes`: core/http_client.py, which every OpenAI-compatible client shares.
    """

    service = LLM_SERVICE

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout_seconds: float,
                 stream_max_seconds: float = 300.0, max_retries: int = 2,
                 max_response_bytes: int = 2 * 1024 * 1024,
                 max_tokens: int | None = None) -> None:
        super().__init__(url=f"{base_url.rstrip('/')}/chat/completions", model=model,
                         api_key=api_key, timeout_seconds=timeout_seconds,
                         max_retries=max_retries, max_response_bytes=max_response_bytes,
                         logger=logger)
        self.stream_max_seconds = stream_max_seconds
        # None: the model's own limit (answers); a probe (answering/llm_probe.py) asks for a few.
        self.max_tokens = max_tokens
        self.last_usage: TokenUsage | None = None

    def complete(self, *, messages: Messages) -> str:
        """The full answer text of one non-streaming completion, all within the timeout."""
        deadline = Deadline(seconds=self.timeout_seconds)
        body = self._body(messages=messages, stream=False)
        self.last_usage = None
        raw = self.with_retries(lambda attempt: self.post_read(body, deadline=attempt),
                                deadline=deadline)
        content, self.last_usage = _completion_parse(raw)
        return content

    def stream(self, *, messages: Messages) -> Generator[str, None, None]:
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
                           deadline=deadline, logger=logger, subject="LLM request")
                retries += 1

    def timeout_message(self, deadline: Deadline) -> str:
        if deadline.cap_seconds is None:
            return super().timeout_message(deadline)
        if deadline.capped:
            return (f"the LLM stream did not finish within LLM_STREAM_MAX_SECONDS "
                    f"({self.stream_max_seconds}s)")
        return f"the LLM stream sent no text for LLM_TIMEOUT_SECONDS ({self.timeout_seconds}s)"

    def _stream_once(self, *, body: dict[str, Any],
                     deadline: Deadline) -> Generator[str, None, None]:
        with self.exchange(body, deadline=deadline) as response:
            if "stream_options" in body and self._usage_refused(response, deadline):
                raise _StreamUsageRefused
            self.status_check(response)
            for line in _lines(self.body_chunks(response, deadline=deadline)):
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

    def _body(self, *, messages: Messages, stream: bool) -> dict[str, Any]:
        body = {"model": self.model, "messages": messages, "temperature": 0, "stream": stream}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if stream and stream_usage_wanted(url=self.url, model=self.model):
            body["stream_options"] = dict(STREAM_USAGE_OPTIONS)
        return body

    def _usage_refused(self, response: httpx.Response, deadline: Deadline) -> bool:
        if response.status_code not in USAGE_REFUSAL_STATUSES:
            return False
        return usage_refusal_named(b"".join(self.body_chunks(response, deadline=deadline)))


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


def _malformed(message: str) -> LocalRagError:
    return upstream_malformed(LLM_SERVICE, message, logger=logger)
