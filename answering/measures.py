"""What answering measured, for the trace of the request that asked (traces/recording.py): the
services return these, and the entry point (an API view, a command, an MCP tool, a workbench
page) records them. Planning measures the searches, the mode, the context and the model's input
(`PlanMeasures`, recorded once); answering measures the answer (`Generation`), the chunks its
quotes lie in (`QuotedChunks`) or the model's failure (`Failure`), which may be recorded again as
a stream goes on without changing the trace.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from answering.llm_usage import TokenUsage
from answering.modes import MODE_RAG
from answering.prompts import PROMPT_VERSION
from core.text_tokens import tokens_count
from retrieval.types import RetrievalMeasures
from traces.recording import Trace, trace_record

if TYPE_CHECKING:
    from answering.context_hits import DeeperSearch

TOKENS_PROVIDER, TOKENS_COUNTED = "provider", "counted"


@dataclass(frozen=True)
class PlanMeasures:
    """What planning an answer measured and decided: the search (and the context's deeper one),
    the mode, the question, the context's settings and blocks, and what the model will read."""

    retrieval: RetrievalMeasures | None
    deeper: DeeperSearch | None
    mode: str
    question: str
    # The follow-up made standalone, when the search's query is not the question asked.
    standalone_query: str | None
    # What the context was built with, so a replay can tell whether it could be the same.
    context: dict[str, Any]
    # Every chunk of every block in block order, with the hashes replay compares (rag only).
    citations: list[dict[str, Any]]
    # The model that will answer, "provider/model"; None when no model is called.
    llm_model: str | None = None
    prompt_tokens: int | None = None  # the messages counted (core/text_tokens.py)
    # What the model is sent, when it is a server outside this machine (knowledge/outbound.py).
    outbound: dict[str, Any] | None = None

    def record(self, trace: Trace) -> None:
        trace_record(trace, self.retrieval, self.deeper)
        trace.mode = self.mode
        trace.question = self.question
        trace.prompt_version = PROMPT_VERSION
        if self.standalone_query is not None:
            trace.parameters["standalone_query"] = self.standalone_query
        trace.parameters.update(self.context)
        if self.mode == MODE_RAG:
            trace.citations = self.citations
        if self.llm_model is not None:
            trace.outbound_add([self.outbound] if self.outbound is not None else [])
            trace.llm_model = self.llm_model
            # Counted now; the provider's `usage`, when it sends one, replaces both numbers.
            trace.prompt_tokens = self.prompt_tokens
            trace.token_source = TOKENS_COUNTED


@dataclass(frozen=True)
class Generation:
    """The answer as written — the model's text before invalid markers are removed, or
    no_answer's fixed text — and, when a model wrote it, its tokens and times."""

    text: str
    # A model's answer only: the provider's `usage` when it reported one (then both numbers
    # are its own), else the completion counted; and its milliseconds.
    usage: TokenUsage | None = None
    completion_tokens: int | None = None
    llm_total_ms: float | None = None
    llm_first_token_ms: float | None = None

    @classmethod
    def of_model(cls, text: str, *, started: float, first: float | None,
                 usage: TokenUsage | None) -> Generation:
        """A model's answer that was asked for at `started` (perf_counter), its first piece
        arriving at `first`."""
        return cls(text=text, usage=usage,
                   completion_tokens=usage.completion_tokens if usage is not None
                   else tokens_count(text),
                   llm_total_ms=(time.perf_counter() - started) * 1000,
                   llm_first_token_ms=(first - started) * 1000 if first is not None else None)

    @property
    def token_source(self) -> str:
        return TOKENS_PROVIDER if self.usage is not None else TOKENS_COUNTED

    def record(self, trace: Trace) -> None:
        trace.answer = self.text
        if self.llm_total_ms is None:
            return
        if self.usage is not None:
            trace.prompt_tokens = self.usage.prompt_tokens
            trace.token_source = TOKENS_PROVIDER
        trace.completion_tokens = self.completion_tokens
        trace.stage("llm_total", self.llm_total_ms)
        if self.llm_first_token_ms is not None:
            trace.stage("llm_first_token", self.llm_first_token_ms)


@dataclass(frozen=True)
class Failure:
    """A failure answered rather than raised: the sources instead of the model's answer, or a
    stream's error event after its first byte."""

    code: str

    def record(self, trace: Trace) -> None:
        trace.fail(self.code)


@dataclass(frozen=True)
class QuotedChunk:
    """Where the answer's quote of a block is: the chunk holding it (answering/quote_places.py)
    and its span of the block's text, with its support — offsets, not text, so a trace that
    keeps no text (RAG_TRACE_TEXT off) still places it."""

    chunk_id: int | None
    chunk_index: int | None
    start: int
    end: int
    support: float


@dataclass(frozen=True)
class QuotedChunks:
    """For each block of the context, in block order, where its quote is (None: no quote):
    recorded beside the block's chunks in the trace's citations, as `quote_chunk_id`,
    `quote_chunk_index`, `quote_start`, `quote_end` and `quote_support` (answering/replay.py
    places the quote again from them)."""

    chunks: tuple[QuotedChunk | None, ...]

    def record(self, trace: Trace) -> None:
        if len(trace.citations) != len(self.chunks):
            return  # not the context these quotes are of (a trace without it)
        trace.citations = [{**entry, **_quoted_fields(chunk)}
                           for entry, chunk in zip(trace.citations, self.chunks, strict=True)]


def _quoted_fields(chunk: QuotedChunk | None) -> dict[str, Any]:
    if chunk is None:
        return dict.fromkeys(("quote_chunk_id", "quote_chunk_index", "quote_start", "quote_end",
                              "quote_support"))
    return {"quote_chunk_id": chunk.chunk_id, "quote_chunk_index": chunk.chunk_index,
            "quote_start": chunk.start, "quote_end": chunk.end, "quote_support": chunk.support}
