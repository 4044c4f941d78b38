"""LLM clients (offline fake and OpenAI-compatible over httpx) and their domain errors.

The API key is a secret: it goes into the Authorization header and nowhere else — not into
error messages, details, reprs, logs or exception chains.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any, Protocol

import httpx

from answering.prompts import QUESTION_HEADER, SOURCES_HEADER
from core.config import Config
from core.dburl import url_password_mask
from core.errors import LocalRagError

logger = logging.getLogger(__name__)

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
                                      timeout_seconds=config.llm_timeout_seconds)
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


_QUOTABLE_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.UnsupportedProtocol)


class OpenAICompatibleClient:
    """Chat completions over `POST {base_url}/chat/completions`, JSON or SSE."""

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout_seconds: float) -> None:
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self.timeout_seconds = timeout_seconds
        self._api_key = api_key
        self._display_url = _display_url(self.url)

    def __repr__(self) -> str:
        return (f"OpenAICompatibleClient(url={self._display_url!r}, "
                f"model={self.model!r}, timeout_seconds={self.timeout_seconds!r}, api_key=<set>)")

    def complete(self, *, messages: Messages) -> str:
        """The full answer text of one non-streaming completion."""
        try:
            with self._http() as client:
                response = client.post(self.url, headers=self._headers(),
                                       json=self._body(messages=messages, stream=False))
                self._check_status(response.status_code)
                return _message_content(response)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._translate(exc) from None

    def stream(self, *, messages: Messages) -> Iterator[str]:
        """Text deltas from a streaming completion, ending at `data: [DONE]`."""
        try:
            with self._http() as client, client.stream(
                    "POST", self.url, headers=self._headers(),
                    json=self._body(messages=messages, stream=True)) as response:
                self._check_status(response.status_code)
                for line in response.iter_lines():
                    payload = _sse_data(line)
                    if payload is None:
                        continue
                    if payload == "[DONE]":
                        return
                    delta = _delta_content(payload)
                    if delta:
                        yield delta
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._translate(exc) from None

    def _http(self) -> httpx.Client:
        return httpx.Client(timeout=httpx.Timeout(self.timeout_seconds))

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json"}

    def _body(self, *, messages: Messages, stream: bool) -> dict[str, Any]:
        return {"model": self.model, "messages": messages, "temperature": 0, "stream": stream}

    def _check_status(self, status: int) -> None:
        if 200 <= status < 300:
            return
        url = self._display_url
        details: dict[str, Any] = {"status": status, "url": url}
        if status in (401, 403):
            error: LocalRagError = LLMAuthFailed(
                f"the LLM server rejected the credentials (HTTP {status}); check LLM_API_KEY",
                details=details)
        elif status == 429:
            error = LLMRateLimited("the LLM server is rate limiting requests (HTTP 429)",
                                   details=details)
        else:
            error = LLMUpstreamError(f"the LLM server answered HTTP {status}", details=details)
        # Bodies are never logged: some servers echo request headers, and with them the key.
        logger.warning("LLM request failed: HTTP %s from %s", status, url)
        raise error

    def _translate(self, exc: httpx.HTTPError | httpx.InvalidURL) -> LocalRagError:
        url = self._display_url
        details: dict[str, Any] = {"url": url, "error": type(exc).__name__}
        # Protocol errors can quote a rejected header value — the key — so only socket- and
        # URL-level messages are passed on.
        if isinstance(exc, _QUOTABLE_ERRORS):
            details["reason"] = str(exc)
        if isinstance(exc, httpx.TimeoutException):
            logger.warning("LLM request timed out after %ss: %s", self.timeout_seconds, url)
            return LLMTimeout(f"the LLM server did not answer within {self.timeout_seconds}s",
                              details=details)
        logger.warning("LLM request failed: %s from %s", type(exc).__name__, url)
        return LLMUpstreamError(f"the request to the LLM server at {url} failed "
                                f"({type(exc).__name__})", details=details)


def _display_url(url: str) -> str:
    """The endpoint with any password in it masked, safe for messages and logs."""
    try:
        return url_password_mask(url)
    except ValueError:
        return "<unparseable LLM_BASE_URL>"


def _message_content(response: httpx.Response) -> str:
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise _malformed("the LLM response is not a chat completion "
                         "(choices[0].message.content missing or not JSON)") from None
    if not isinstance(content, str):
        raise _malformed("the LLM response has no text in choices[0].message.content")
    return content


def _sse_data(line: str) -> str | None:
    """The payload of an SSE `data:` line; None for blank lines, comments and other fields."""
    if line.startswith("data:"):
        return line[len("data:"):].strip()
    if not line or line.startswith(":") or line.split(":", 1)[0] in _SSE_OTHER_FIELDS:
        return None
    # A JSON body or an HTML error page where an event stream was expected.
    raise _malformed("the LLM stream sent a line that is not a server-sent event")


def _delta_content(payload: str) -> str | None:
    try:
        choices = json.loads(payload)["choices"]
        if choices == []:
            # Some servers send a trailing usage-only chunk with no choices.
            return None
        content = (choices[0].get("delta") or {}).get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise _malformed("the LLM stream sent a data line that is not a chat completion chunk"
                         ) from None
    return content if isinstance(content, str) else None


def _malformed(message: str) -> LLMUpstreamError:
    logger.warning("LLM response malformed: %s", message)
    return LLMUpstreamError(message, details={"reason": "malformed_response"})
