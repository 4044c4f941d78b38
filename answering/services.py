"""Ask: retrieval -> mode -> context -> LLM -> answer with citations; whole or streamed.

Everything that can fail before generation (validation, database, retrieval readiness, LLM
settings) is checked in `ask_prepare`, so the streaming endpoint can answer those as ordinary
JSON errors before its first byte; `ask_stream_open` also takes the stream's LLM slot by then, so
`llm_busy` is an ordinary JSON 503 too. Every LLM call runs inside `connection_released()` (no
database connection is held while the model answers) and holds an LLM slot (answering/slots.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from answering.citations import CitationStreamFilter, citations_strip
from answering.context import context_build
from answering.llm import LLMClient, get_llm_client
from answering.modes import (
    FALLBACK_NOTICE,
    MODE_FALLBACK,
    MODE_NO_ANSWER,
    MODE_RAG,
    mode_decide,
    no_answer_text,
)
from answering.prompts import fallback_messages, rag_messages
from answering.slots import LLMSlot, llm_slot, llm_slot_acquire
from core.config import Config
from core.db import connection_released
from core.errors import LocalRagError, error_body
from knowledge.access import Scope
from retrieval.services import search

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
    if mode == MODE_RAG:
        plan.citations = [citation.as_dict() for citation in context.citations]
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
    return plan


def ask(*, question: str, top_k: int | None, fallback: bool, config: Config,
        scope: Scope) -> dict[str, Any]:
    """The /ask response body: {mode, confidence, answer, citations, invalid_citations_removed}."""
    plan = ask_prepare(question=question, top_k=top_k, fallback=fallback, config=config,
                       scope=scope)
    removed = 0
    if plan.mode == MODE_NO_ANSWER:
        answer = plan.fixed_answer
    else:
        with connection_released(), llm_slot(config=config):
            generated = plan.client.complete(messages=plan.messages)
        answer, removed = citations_strip(text=generated, block_count=plan.block_count)
        if plan.mode == MODE_FALLBACK:
            answer = FALLBACK_NOTICE + answer
    return {"mode": plan.mode, "confidence": plan.confidence, "answer": answer,
            "citations": plan.citations, "invalid_citations_removed": removed}


def ask_events(plan: AskPlan) -> Iterator[tuple[str, dict[str, Any]]]:
    """The /ask/stream events: retrieval, delta..., citations, done — or an error event once
    generation has failed (the HTTP status is already sent by then)."""
    yield "retrieval", {"mode": plan.mode, "confidence": plan.confidence,
                        "citations": plan.citations}
    stream_filter = CitationStreamFilter(block_count=plan.block_count)
    if plan.mode == MODE_NO_ANSWER:
        yield "delta", {"text": plan.fixed_answer}
    else:
        if plan.mode == MODE_FALLBACK:
            yield "delta", {"text": FALLBACK_NOTICE}
        try:
            # closing(): a client that goes away closes these events, and with them the
            # upstream request, at once rather than whenever the garbage collector runs.
            with connection_released(), closing(plan.client.stream(messages=plan.messages)
                                                ) as pieces:
                for piece in pieces:
                    text = stream_filter.feed(piece)
                    if text:
                        yield "delta", {"text": text}
            tail = stream_filter.finish()
            if tail:
                yield "delta", {"text": tail}
        except LocalRagError as exc:
            yield "error", exc.as_body()
            return
        except Exception:
            logger.exception("streaming generation failed")
            yield "error", error_body("internal_error", "generation failed; see the server log")
            return
    yield "citations", {"citations": plan.citations,
                        "invalid_citations_removed": stream_filter.removed}
    yield "done", {"mode": plan.mode}


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
