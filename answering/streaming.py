"""The answer streamed as events (/ask/stream, a conversation's stream, the workbench's, the
OpenAI-compatible stream): retrieval, delta..., citations, usage, done.

The plan is made, and every pre-generation error raised, before the first byte
(answering/services.py `ask_prepare`); the stream's LLM slot is taken then too. What answering
measures as the events go (the answer, a failure answered with an event) lands on the plan;
`RecordedEvents` is how the entry point that opened the stream records it in its trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from contextlib import closing
from typing import Any, Protocol

from answering.citations import CitationStreamFilter
from answering.measures import Generation
from answering.modes import FALLBACK_NOTICE, MODE_FALLBACK, MODE_NO_ANSWER, MODE_RAG
from answering.services import AnswerRequest, AskPlan, ask_prepare, disclaimer_suffix
from answering.slots import LLMSlot, llm_slot_acquire
from core.config import Config
from core.db import connection_released
from core.errors import LocalRagError, error_body
from core.text_tokens import tokens_count
from traces.recording import Trace, measured_on_failure, trace_record

logger = logging.getLogger("localrag.answering")

Event = tuple[str, dict[str, Any]]


class EventStream(Protocol):
    """Events that hold something until closed (an LLM slot, a stored answer's last chance)."""

    def __iter__(self) -> Iterator[Event]: ...

    def __next__(self) -> Event: ...

    def close(self) -> None: ...


def ask_usage(plan: AskPlan) -> dict[str, Any]:
    """The `usage` event: tokens (the provider's when it reported them, else counted),
    milliseconds per stage so far (with the request's total under a trace), and the models;
    outside a trace, what the plan counted."""
    if plan.trace is None:
        prompt = sum(tokens_count(message["content"]) for message in plan.messages)
        return {"prompt_tokens": prompt if plan.client else 0, "completion_tokens": None,
                "token_source": "counted" if plan.client else None, "timings_ms": {},
                "embedding_model": plan.embedding_model,
                "llm_model": plan.config_llm_model if plan.client else None}
    measures = plan.measures
    timings = {name: round(value, 1) for name, value in plan.timings_ms().items()}
    timings["total"] = round((time.perf_counter() - plan.trace.started) * 1000, 1)
    retrieval = measures.retrieval if measures is not None else None
    return {**plan.tokens(), "timings_ms": timings,
            "embedding_model": (retrieval.embedding_model if retrieval is not None else None)
            or plan.embedding_model,
            "llm_model": measures.llm_model if measures is not None else None}


def ask_events(plan: AskPlan) -> Generator[Event, None, None]:
    """The /ask/stream events: retrieval, delta..., citations, usage, done — or an error event
    once generation has failed (the HTTP status is already sent by then); with
    `on_llm_error: sources`, a model failure is a `notice` event and the stream goes on."""
    yield "retrieval", {"mode": plan.mode, "confidence": plan.confidence,
                        "citations": plan.citations, "refusal": plan.refusal}
    stream_filter = CitationStreamFilter(block_count=plan.block_count)
    generated: list[str] = []
    shown: list[str] = []  # the answer's text as the client gets it (invalid markers removed)
    if plan.mode == MODE_NO_ANSWER:
        plan.generation = Generation(text=plan.fixed_answer)
        yield "delta", {"text": plan.fixed_answer}
    elif plan.notice is not None:
        yield "notice", plan.notice
    else:
        client = plan.client
        assert client is not None  # every mode but no_answer has its client
        if plan.mode == MODE_FALLBACK:
            yield "delta", {"text": FALLBACK_NOTICE}
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
                        shown.append(text)
                        yield "delta", {"text": text}
            tail = stream_filter.finish()
            shown.append(tail)
            if plan.mode == MODE_RAG:
                plan.quotes_attach("".join(shown))
            tail += disclaimer_suffix(plan)
            if tail:
                yield "delta", {"text": tail}
        except LocalRagError as exc:
            if not plan.sources_instead(exc):
                plan.failure = exc.code  # its 200 is sent: the trace says so
                yield "error", exc.as_body()
                return
            assert plan.notice is not None
            yield "notice", plan.notice
        except Exception:
            logger.exception("streaming generation failed")
            plan.failure = "internal_error"
            yield "error", error_body("internal_error", "generation failed; see the server log")
            return
        else:
            # getattr: a client written before usage reporting need not declare it.
            plan.generation = Generation.of_model("".join(generated), started=started,
                                                  first=first,
                                                  usage=getattr(client, "last_usage", None))
    yield "citations", {"citations": plan.citations,
                        "invalid_citations_removed": stream_filter.removed,
                        "unsupported_citations": plan.unsupported_citations}
    yield "usage", ask_usage(plan)
    yield "done", {"mode": plan.mode,
                   **({"trace_id": plan.trace.id} if plan.trace is not None else {})}


def ask_stream_open(request: AnswerRequest, *, config: Config) -> AskEventStream:
    """The /ask/stream events, with every pre-generation error raised now — `llm_busy`
    included: the stream's LLM slot is taken before its first byte."""
    return ask_stream_of(ask_prepare(request, config=config), config=config)


def ask_stream_of(plan: AskPlan, *, config: Config) -> AskEventStream:
    """The events of a prepared plan, its LLM slot taken now (or, with `on_llm_error:
    sources`, the sources answered when none is free); an error carries what planning
    measured."""
    slot = None
    if plan.client is not None and plan.notice is None:
        try:
            with measured_on_failure(plan.measures), connection_released():
                slot = llm_slot_acquire(config=config)
        except LocalRagError as exc:
            if not plan.sources_instead(exc):
                raise
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

    def __next__(self) -> Event:
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


class RecordedEvents:
    """An answer's `events` as they pass, with what answering measured (the plan's answer or
    failure) recorded in `trace` as it appears: how the entry point that opened the stream,
    and recorded the plan's own measures then, keeps its trace whole. Closing it closes the
    events."""

    def __init__(self, events: EventStream, *, plan: AskPlan, trace: Trace | None) -> None:
        self.plan = plan
        self._events = events
        self._trace = trace

    def __iter__(self) -> RecordedEvents:
        return self

    def __next__(self) -> Event:
        event = next(self._events)
        trace_record(self._trace, *self.plan.answered())
        return event

    def close(self) -> None:
        self._events.close()
