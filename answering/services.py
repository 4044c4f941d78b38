"""Ask: retrieval -> mode -> context -> LLM -> answer with citations; whole or streamed.

Everything that can fail before generation (validation, database, retrieval readiness, LLM
settings) is checked in `ask_prepare`, so the streaming endpoint can answer those as ordinary
JSON errors before its first byte; `ask_stream_open` also takes the stream's LLM slot by then, so
`llm_busy` is an ordinary JSON 503 too. Every LLM call runs inside `connection_released()` (no
database connection is held while the model answers) and holds an LLM slot (answering/slots.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from access.callers import Scope
from answering.citations import CitationStreamFilter, citations_strip
from answering.context import context_build
from answering.llm import LLMClient, get_llm_client
from answering.llm_usage import TokenUsage
from answering.modes import (
    FALLBACK_NOTICE,
    MODE_FALLBACK,
    MODE_NO_ANSWER,
    MODE_RAG,
    mode_decide,
    no_answer_text,
)
from answering.prompts import PROMPT_VERSION, fallback_messages, rag_messages
from answering.slots import LLMSlot, llm_slot, llm_slot_acquire
from core.config import Config
from core.db import connection_released
from core.errors import LocalRagError, error_body
from core.text_tokens import tokens_count
from retrieval.services import search
from traces.recording import trace_current, trace_fail

logger = logging.getLogger("localrag.answering")


@dataclass
class AskPlan:
    """What was decided before generation: the mode, the sources and the model's input."""

    mode: str
    confidence: float
    citations: list[dict[str, Any]]
    block_count: int = 0
    messages: list[dict[str, str]] = field(default_factory=list)
    fixed_answer: str = ""  # no_answer: the whole answer, no model involved
    client: LLMClient | None = None
    # The chunk behind each citation, in citation order (the workbench links its source cards).
    chunk_ids: list[int | None] = field(default_factory=list)


def ask_prepare(*, question: str, top_k: int | None, fallback: bool, config: Config,
                scope: Scope) -> AskPlan:
    """Retrieve from the knowledge bases of `scope`, decide the mode and build the prompt;
    raises every pre-generation error."""
    outcome = search(query=question, top_k=top_k, config=config, scope=scope)
    context = context_build(hits=outcome.results, token_budget=config.rag_context_token_budget)
    # A query without tokens has no results, and a budget too small for any block leaves no
    # context: either way there is nothing to answer from, whatever the threshold says.
    mode = mode_decide(confidence=outcome.confidence, threshold=config.threshold,
                       fallback_requested=fallback, fallback_enabled=config.rag_fallback_enabled,
                       has_sources=context.blocks > 0)
    plan = AskPlan(mode=mode, confidence=outcome.confidence, citations=[])
    trace = trace_current()
    if mode == MODE_RAG:
        plan.citations = [citation.as_dict() for citation in context.citations]
        plan.chunk_ids = [citation.chunk_id for citation in context.citations]
        plan.block_count = context.blocks
        plan.messages = rag_messages(question=question, context_text=context.text)
        plan.client = get_llm_client(config=config)
    elif mode == MODE_FALLBACK:
        plan.messages = fallback_messages(question=question)
        plan.client = get_llm_client(config=config)
    else:
        plan.fixed_answer = no_answer_text(
            weak_sources=[hit.source for hit in outcome.results],
            fallback_disabled=fallback and not config.rag_fallback_enabled)
    if trace is not None:
        trace.mode = mode
        trace.question = question
        trace.prompt_version = PROMPT_VERSION
        if mode == MODE_RAG:
            trace.citations = [{"chunk_id": citation.chunk_id,
                                "content_hash": citation.content_hash}
                               for citation in context.citations]
        if plan.client is not None:
            trace.llm_model = f"{config.llm_provider}/{config.llm_model or 'fake'}"
            # Counted now; the provider's `usage`, when it sends one, replaces both numbers.
            trace.prompt_tokens = sum(tokens_count(message["content"])
                                      for message in plan.messages)
            trace.token_source = "counted"
    return plan


def _trace_answer(answer: str, *, started: float | None = None, first: float | None = None,
                  client: LLMClient | None = None) -> None:
    """The answer's side of the current trace: text, tokens (the provider's when it reported
    them, else counted), LLM times."""
    trace = trace_current()
    if trace is None:
        return
    trace.answer = answer
    if started is not None:
        # getattr: a client written before usage reporting need not declare `last_usage`.
        usage: TokenUsage | None = getattr(client, "last_usage", None)
        if usage is not None:
            trace.prompt_tokens, trace.completion_tokens = (usage.prompt_tokens,
                                                            usage.completion_tokens)
            trace.token_source = "provider"
        else:
            trace.completion_tokens = tokens_count(answer)
        trace.stage("llm_total", (time.perf_counter() - started) * 1000)
        if first is not None:
            trace.stage("llm_first_token", (first - started) * 1000)



def ask(*, question: str, top_k: int | None, fallback: bool, config: Config,
        scope: Scope) -> dict[str, Any]:
    """The /ask response body: {mode, confidence, answer, citations, invalid_citations_removed}
    and, under a trace, its trace_id."""
    plan = ask_prepare(question=question, top_k=top_k, fallback=fallback, config=config,
                       scope=scope)
    removed = 0
    if plan.mode == MODE_NO_ANSWER:
        answer = plan.fixed_answer
        _trace_answer(answer)
    else:
        client = plan.client
        assert client is not None  # every mode but no_answer has its client
        with connection_released(), llm_slot(config=config):
            started = time.perf_counter()
            generated = client.complete(messages=plan.messages)
        _trace_answer(generated, started=started, client=client)
        answer, removed = citations_strip(text=generated, block_count=plan.block_count)
        if plan.mode == MODE_FALLBACK:
            answer = FALLBACK_NOTICE + answer
    body = {"mode": plan.mode, "confidence": plan.confidence, "answer": answer,
            "citations": plan.citations, "invalid_citations_removed": removed}
    trace = trace_current()
    if trace is not None:
        body["trace_id"] = trace.id
    return body


def ask_events(plan: AskPlan) -> Generator[tuple[str, dict[str, Any]], None, None]:
    """The /ask/stream events: retrieval, delta..., citations, done — or an error event once
    generation has failed (the HTTP status is already sent by then)."""
    yield "retrieval", {"mode": plan.mode, "confidence": plan.confidence,
                        "citations": plan.citations}
    stream_filter = CitationStreamFilter(block_count=plan.block_count)
    if plan.mode == MODE_NO_ANSWER:
        _trace_answer(plan.fixed_answer)
        yield "delta", {"text": plan.fixed_answer}
    else:
        client = plan.client
        assert client is not None  # every mode but no_answer has its client
        if plan.mode == MODE_FALLBACK:
            yield "delta", {"text": FALLBACK_NOTICE}
        generated: list[str] = []
        started, first = time.perf_counter(), None
        try:
            # closing(): a client that goes away closes these events, and with them the
            # upstream request, at once rather than whenever the garbage collector runs.
            with connection_released(), closing(client.stream(messages=plan.messages)
                                                ) as pieces:
                for piece in pieces:
                    if first is None and piece:
                        first = time.perf_counter()
                    generated.append(piece)
                    text = stream_filter.feed(piece)
                    if text:
                        yield "delta", {"text": text}
            tail = stream_filter.finish()
            if tail:
                yield "delta", {"text": tail}
        except LocalRagError as exc:
            trace_fail(exc.code)  # its 200 is sent: the trace says so
            yield "error", exc.as_body()
            return
        except Exception:
            logger.exception("streaming generation failed")
            trace_fail("internal_error")
            yield "error", error_body("internal_error", "generation failed; see the server log")
            return
        _trace_answer("".join(generated), started=started, first=first, client=client)
    yield "citations", {"citations": plan.citations,
                        "invalid_citations_removed": stream_filter.removed}
    trace = trace_current()
    yield "done", {"mode": plan.mode, **({"trace_id": trace.id} if trace is not None else {})}


def ask_stream_open(*, question: str, top_k: int | None, fallback: bool, config: Config,
                    scope: Scope) -> AskEventStream:
    """The /ask/stream events, with every pre-generation error raised now — `llm_busy`
    included: the stream's LLM slot is taken before its first byte."""
    plan = ask_prepare(question=question, top_k=top_k, fallback=fallback, config=config,
                       scope=scope)
    slot = None
    if plan.client is not None:
        with connection_released():
            slot = llm_slot_acquire(config=config)
    return AskEventStream(plan=plan, slot=slot)


class AskEventStream:
    """`ask_events` holding the stream's LLM slot: the slot is released when the events run out
    or when `close()` is called (the server does when the client goes away), even if iteration
    never started — a generator's own `finally` would not run then."""

    def __init__(self, *, plan: AskPlan, slot: LLMSlot | None) -> None:
        self.plan = plan
        self._events = ask_events(plan)
        self._slot = slot

    def __iter__(self) -> AskEventStream:
        return self

    def __next__(self) -> tuple[str, dict[str, Any]]:
        try:
            return next(self._events)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop generating and release the slot; safe to call more than once."""
        self._events.close()
        if self._slot is not None:
            self._slot.release()
