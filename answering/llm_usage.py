"""The token usage an OpenAI-compatible server reports in a response's `usage`.

Streams ask for it with `stream_options.include_usage` (OpenAI's way, which vLLM, Ollama and
llama.cpp follow; servers that do not know the option mostly ignore it). A strict server
answers 400/422 naming the option instead: the client sends that request again without it,
and the endpoint is remembered here (for this process), so its later streams do not pay a
refused request each. Such a stream simply has no usage, and its tokens are counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

STREAM_USAGE_OPTIONS = {"include_usage": True}
USAGE_REFUSAL_STATUSES = (400, 422)
# (chat completions URL, model) of the servers that refused `stream_options`.
_STREAM_USAGE_REFUSED: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class TokenUsage:
    """Token counts as the LLM server reported them in a response's `usage`."""

    prompt_tokens: int
    completion_tokens: int


def usage_parse(payload: Any) -> TokenUsage | None:
    """The `usage` of a completion or stream chunk, with both counts as non-negative integers;
    None for anything less (servers send `null`, `{}` or only `total_tokens`), which is not
    worth failing an answer over."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if _is_count(prompt) and _is_count(completion):
        return TokenUsage(prompt_tokens=prompt, completion_tokens=completion)
    return None


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def stream_usage_wanted(*, url: str, model: str) -> bool:
    """Whether a stream to this endpoint asks for usage: yes, unless it refused once."""
    return (url, model) not in _STREAM_USAGE_REFUSED


def stream_usage_refused(*, url: str, model: str) -> None:
    """Remember that this endpoint refuses `stream_options`."""
    _STREAM_USAGE_REFUSED.add((url, model))


def usage_refusal_named(body: bytes) -> bool:
    """Whether an error answer (one of USAGE_REFUSAL_STATUSES) refuses the option by name. Any
    other 400 is the request's own fault: sending it again would not help."""
    return b"stream_options" in body or b"include_usage" in body
