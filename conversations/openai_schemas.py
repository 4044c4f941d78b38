"""The OpenAI-compatible contract of /v1/ (conversations/openai_api.py).

Lenient where OpenAI clients differ and strict where an answer would be wrong: parameters that
only tune sampling or bookkeeping (temperature, top_p, max_tokens, max_completion_tokens, stop,
presence_penalty, frequency_penalty, logit_bias, seed, user, metadata, store,
parallel_tool_calls, reasoning_effort, service_tier, and any field this server does not know)
are accepted and ignored — the server's own LLM settings and prompt decide the answer. What
would ask for an answer of another kind (several choices, tool calls, JSON output, log
probabilities, audio or images) is refused with 400, naming the parameter."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from answering.api_schemas import CitationOut, Notice
from core.config import MAX_TEXT_CHARS


def _unsupported(message: str) -> PydanticCustomError:
    return PydanticCustomError("unsupported", message)


class OpenAIRequest(Schema):
    model_config = ConfigDict(extra="ignore")


class ContentPart(OpenAIRequest):
    type: Literal["text"]
    text: str


class ChatMessageIn(OpenAIRequest):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    tool_calls: list[Any] | None = None
    function_call: Any = None

    @field_validator("content", mode="before")
    @classmethod
    def _text_only(cls, content: Any) -> Any:
        # Before the union is tried, so that the error names the part, not each union member.
        for part in content if isinstance(content, list) else ():
            kind = part.get("type") if isinstance(part, dict) else None
            if kind != "text" or not isinstance(part.get("text"), str):
                raise _unsupported(f"content parts of type {kind!r} are not supported: the "
                                   "knowledge base answers text (send {\"type\": \"text\", "
                                   "\"text\": …} parts, or a string)")
        return content

    @model_validator(mode="after")
    def _no_tools(self) -> ChatMessageIn:
        if self.role in ("tool", "function") or self.tool_calls or self.function_call:
            raise _unsupported("tool and function messages are not supported: the knowledge "
                               "base calls no tools")
        return self

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class StreamOptions(OpenAIRequest):
    include_usage: bool | None = None


class ChatCompletionRequest(OpenAIRequest):
    # `local-rag` or `kb:<slug>` (GET /v1/models).
    model: str = Field(min_length=1, max_length=200)
    # The last one is the question; the earlier user and assistant messages are the
    # conversation (system and developer messages are read by nobody: the server's prompt
    # holds the model to the knowledge base).
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    n: int | None = None
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    tool_choice: Any = None
    response_format: dict[str, Any] | None = None
    logprobs: bool | None = None
    audio: Any = None
    modalities: list[str] | None = None
    # An addition of local-rag: when retrieval succeeded but the language model fails, answer
    # with the sources and a notice ("sources", what a chat front end can show) or with the
    # model's error and its status ("error", e.g. 504 llm_timeout).
    on_llm_error: Literal["error", "sources"] = "sources"

    @field_validator("messages")
    @classmethod
    def _ends_with_a_question(cls, messages: list[ChatMessageIn]) -> list[ChatMessageIn]:
        last = messages[-1]
        if last.role != "user":
            raise _unsupported("the last message must be the user's question (role user)")
        if not last.text.strip():
            raise _unsupported("the last user message must not be empty")
        if len(last.text) > MAX_TEXT_CHARS:
            raise _unsupported(f"the last user message is longer than {MAX_TEXT_CHARS:,} "
                               "characters")
        return messages

    @field_validator("n")
    @classmethod
    def _one_choice(cls, n: int | None) -> int | None:
        if n not in (None, 1):
            raise _unsupported("only n=1 is supported: the knowledge base gives one answer")
        return n

    @field_validator("tools", "functions")
    @classmethod
    def _no_tools(cls, tools: list[Any] | None) -> list[Any] | None:
        if tools:
            raise _unsupported("tools are not supported: the knowledge base calls no tools")
        return tools

    @field_validator("tool_choice")
    @classmethod
    def _no_tool_choice(cls, choice: Any) -> Any:
        if choice not in (None, "none", "auto"):
            raise _unsupported("tool_choice may only be \"none\" or \"auto\": the knowledge "
                               "base calls no tools")
        return choice

    @field_validator("response_format")
    @classmethod
    def _text_format(cls, response_format: dict[str, Any] | None) -> dict[str, Any] | None:
        if response_format is not None and response_format.get("type") != "text":
            raise _unsupported("only the text response format is supported")
        return response_format

    @field_validator("logprobs")
    @classmethod
    def _no_logprobs(cls, logprobs: bool | None) -> bool | None:
        if logprobs:
            raise _unsupported("log probabilities are not supported")
        return logprobs

    @field_validator("audio")
    @classmethod
    def _no_audio(cls, audio: Any) -> Any:
        if audio is not None:
            raise _unsupported("audio output is not supported")
        return audio

    @field_validator("modalities")
    @classmethod
    def _text_modality(cls, modalities: list[str] | None) -> list[str] | None:
        if modalities and set(modalities) != {"text"}:
            raise _unsupported("only the text modality is supported")
        return modalities


class ModelOut(Schema):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    # What a chat front end may show instead of the id.
    name: str


class ModelList(Schema):
    object: Literal["list"]
    data: list[ModelOut]


class Usage(Schema):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class AssistantMessage(Schema):
    role: Literal["assistant"]
    content: str


class Choice(Schema):
    index: int
    message: AssistantMessage
    logprobs: None = None
    finish_reason: Literal["stop"]


class NumberedCitation(CitationOut):
    # The n of the [n] markers in the text and of the Sources list.
    number: int


class ChatCompletion(Schema):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    # Additions of local-rag: every context block the answer could cite, the answer mode,
    # the query that was searched (the question made standalone), and the notice of an
    # answer the model could not give.
    citations: list[NumberedCitation]
    mode: Literal["rag", "fallback", "no_answer"]
    standalone_query: str
    notice: Notice | None = None


class OpenAIErrorDetail(Schema):
    message: str
    type: str
    param: str | None
    code: str


class OpenAIErrorBody(Schema):
    error: OpenAIErrorDetail
