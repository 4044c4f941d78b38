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
from collections.abc import Generator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from access.callers import Scope
from answering.citations import CitationStreamFilter, citations_strip
from answering.context import context_build, neighbour_places
from answering.context_hits import QueryOnce, context_hits
from answering.llm import LLMClient, get_llm_client, llm_outbound_check, llm_outbound_record
from answering.llm_usage import TokenUsage
from answering.modes import (
    FALLBACK_NOTICE,
    MODE_FALLBACK,
    MODE_NO_ANSWER,
    MODE_RAG,
    mode_for,
    no_answer_text,
)
from answering.prompts import PROMPT_VERSION, fallback_messages, rag_messages
from answering.quotes import Quote, citations_verify
from answering.refusal import refusal_decide, refusal_rule
from answering.replay import context_record
from answering.slots import LLMSlot, llm_slot, llm_slot_acquire
from core.config import Config
from core.db import connection_released
from core.errors import LocalRagError, error_body
from core.text_tokens import tokens_count
from embeddings import get_embedder
from knowledge.selectors import chunks_by_id_or_place, document_dates
from retrieval.filters import DocumentFilter
from retrieval.services import search
from retrieval.signals import signals_measure
from retrieval.types import SearchHit
from traces.recording import trace_current, trace_fail

logger = logging.getLogger("localrag.answering")


# What `on_llm_error` may ask for: the error itself (the default), or the sources retrieval
# found, with a notice that the model is unavailable.
ON_LLM_ERROR_RAISE = "error"
ON_LLM_ERROR_SOURCES = "sources"
LLM_UNAVAILABLE = "llm_unavailable"
# The failures of the language model (not of retrieval) that `sources` turns into a notice,
# and the outbound policy's refusal to send the context to it.
LLM_FAILURES = frozenset({"llm_config_missing", "llm_timeout", "llm_auth_failed",
                          "llm_rate_limited", "llm_busy", "llm_upstream_error",
                          "outbound_refused"})


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
    # The cited chunks' content hashes, in citation order (kept with a conversation's messages).
    content_hashes: list[str] = field(default_factory=list)
    on_llm_error: str = ON_LLM_ERROR_RAISE
    # Set when the model failed and the sources are answered instead (`on_llm_error`).
    notice: dict[str, Any] | None = None
    config_llm_model: str = ""
    embedding_model: str = ""
    # RAG_ANSWER_DISCLAIMER: the line the server appends to a model-written answer.
    disclaimer: str = ""
    # Each block's text, for finding the quote behind each citation (answering/quotes.py).
    block_contents: list[str] = field(default_factory=list)
    # How many markers of the answer no sentence of their block supports.
    unsupported_citations: int = 0
    # How the refusal rule decided (answering/refusal.py): the answer's `refusal` object.
    refusal: dict[str, Any] | None = None

    def quotes_attach(self, answer: str) -> None:
        """Give each citation the quote of its block that the answer relies on (None when the
        answer does not cite it, or without support), and count the unsupported markers."""
        quotes, self.unsupported_citations = citations_verify(answer=answer,
                                                              block_texts=self.block_contents)
        self.citations = [{**citation, **_quote_fields(quote)}
                          for citation, quote in zip(self.citations, quotes, strict=True)]

    def sources_instead(self, error: LocalRagError) -> bool:
        """Whether `error` of the model is answered with the sources (and recorded so)."""
        if (self.on_llm_error != ON_LLM_ERROR_SOURCES or self.mode != MODE_RAG
                or error.code not in LLM_FAILURES):
            return False
        self.notice = llm_unavailable_notice(error)
        # Nothing was written, so nothing is quoted: the fields are there, empty.
        self.citations = [{**citation, **_quote_fields(None)} for citation in self.citations]
        trace_fail(error.code)
        return True


def _quote_fields(quote: Quote | None) -> dict[str, Any]:
    if quote is None:
        return {"quote": None, "quote_start": None, "quote_end": None, "quote_support": None}
    return {"quote": quote.text, "quote_start": quote.start, "quote_end": quote.end,
            "quote_support": quote.support}


def llm_unavailable_notice(error: LocalRagError) -> dict[str, Any]:
    """The notice that replaces an answer the model could not give."""
    return {"code": LLM_UNAVAILABLE, "cause": error.code,
            "message": ("The language model is unavailable, so there is no written answer; "
                        "the sources below are what the knowledge base found. "
                        "语言模型暂不可用，以下是知识库找到的来源。"
                        f"({error.code}: {error.message})")}


def ask_prepare(*, question: str, top_k: int | None, fallback: bool, config: Config,
                scope: Scope, search_query: str | None = None,
                history: Sequence[dict[str, str]] = (),
                history_bases: Sequence[str] = (),
                on_llm_error: str = ON_LLM_ERROR_RAISE,
                filters: DocumentFilter | None = None) -> AskPlan:
    """Retrieve from the knowledge bases of `scope`, decide the mode and build the prompt;
    raises every pre-generation error. In a conversation, retrieval searches `search_query`
    (the follow-up made standalone) while the model reads `history` and the question asked;
    `history_bases` are the bases its earlier answers cite, which the outbound policy covers."""
    query = search_query or question
    embedder = QueryOnce(get_embedder(config=config))
    outcome = search(query=query, top_k=top_k, config=config, scope=scope, filters=filters,
                     embedder=embedder)
    # The context's candidates: deeper than top_k when the per-document cap frees places.
    candidates = context_hits(query=query, outcome=outcome, top_k=top_k,
                              per_document=config.rag_context_per_document, config=config,
                              scope=scope, filters=filters, embedder=embedder)
    dates = document_dates(document_ids=[hit.document_id for hit in candidates.hits])
    context = context_build(hits=candidates.hits, token_budget=config.rag_context_token_budget,
                            dates=dates, per_document=config.rag_context_per_document,
                            neighbours=_neighbours(candidates.hits,
                                                   depth=config.rag_context_neighbours),
                            neighbour_depth=config.rag_context_neighbours,
                            limit=candidates.limit)
    refusal = refusal_decide(signals=signals_measure(query=query, hits=outcome.results,
                                                     confidence=outcome.confidence),
                             config=config)
    # A query without tokens has no results, and a budget too small for any block leaves no
    # context: either way there is nothing to answer from, whatever the rule says.
    mode = mode_for(grounded=refusal.grounded, fallback_requested=fallback,
                    fallback_enabled=config.rag_fallback_enabled, has_sources=context.blocks > 0)
    plan = AskPlan(mode=mode, confidence=outcome.confidence, citations=[],
                   on_llm_error=on_llm_error, refusal=refusal.as_dict(),
                   config_llm_model=f"{config.llm_provider}/{config.llm_model or 'fake'}",
                   embedding_model=f"{config.embedding_provider}/{config.embedding_model}",
                   disclaimer=config.rag_answer_disclaimer)
    trace = trace_current()
    bases = sorted({citation.knowledge_base for citation in context.citations
                    if citation.knowledge_base})
    if mode == MODE_RAG:
        plan.citations = [citation.as_dict() for citation in context.citations]
        plan.chunk_ids = [citation.chunk_id for citation in context.citations]
        plan.content_hashes = [citation.content_hash for citation in context.citations]
        plan.block_contents = list(context.contents)
        plan.block_count = context.blocks
        plan.messages = rag_messages(question=question, context_text=context.text,
                                     history=history)
        try:
            client = get_llm_client(config=config)  # missing settings are said first
            _outbound_check(config=config, bases=bases, history=history,
                            history_bases=history_bases, scope=scope)
            plan.client = client
        except LocalRagError as exc:
            if not plan.sources_instead(exc):
                raise
    elif mode == MODE_FALLBACK:
        plan.messages = fallback_messages(question=question, history=history)
        client = get_llm_client(config=config)
        # A general-knowledge answer carries no base's text, but a conversation's history may.
        _outbound_check(config=config, bases=[], history=history,
                        history_bases=history_bases, scope=scope)
        plan.client = client
    else:
        plan.fixed_answer = no_answer_text(
            weak_sources=[hit.source for hit in outcome.results],
            fallback_disabled=fallback and not config.rag_fallback_enabled)
    if trace is not None:
        trace.mode = mode
        trace.question = question
        trace.prompt_version = PROMPT_VERSION
        if search_query and search_query != question:
            trace.parameters["standalone_query"] = search_query
        # What the context was built with, so a replay can tell whether it could be the same.
        trace.parameters.update(context_token_budget=config.rag_context_token_budget,
                                context_per_document=config.rag_context_per_document,
                                context_neighbours=config.rag_context_neighbours,
                                refusal=refusal_rule(config))
        if mode == MODE_RAG:
            # Every chunk of every block in block order, with the hashes replay compares.
            trace.citations = context_record(context=context)
        if plan.client is not None:
            sent_bases = {*(bases if mode == MODE_RAG else []), *(history_bases if history else [])}
            llm_outbound_record(config=config, messages=plan.messages,
                                knowledge_bases=sorted(sent_bases), chunk_ids=plan.chunk_ids)
            trace.llm_model = plan.config_llm_model
            # Counted now; the provider's `usage`, when it sends one, replaces both numbers.
            trace.prompt_tokens = sum(tokens_count(message["content"])
                                      for message in plan.messages)
            trace.token_source = "counted"
    return plan


def _outbound_check(*, config: Config, bases: Sequence[str], history: Sequence[dict[str, str]],
                    history_bases: Sequence[str], scope: Scope) -> None:
    """The outbound policy of what the model is sent, in one check: the context's bases, and
    for a conversation's history the bases its earlier answers cite (whatever the scope is
    now) and the scope's (an answer may quote any base it searched)."""
    what = " and ".join(part for part, sent in (("the answer's context", bases),
                                                ("the conversation's earlier turns", history))
                        if sent)
    llm_outbound_check(config=config, what=what or "the answer's context",
                       knowledge_bases=[*bases, *(history_bases if history else ())],
                       knowledge_base_ids=scope.knowledge_base_ids if history else ())


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



def _neighbours(hits: Sequence[SearchHit], *,
                depth: int) -> dict[tuple[int, int], SearchHit]:
    """The chunks next to `hits` that the context may take on (answering/context.py rule 4),
    read from the index: of the hits' own documents only, so of bases the caller reads."""
    places = neighbour_places(hits, depth=depth)
    if not places:
        return {}
    bases = {hit.document_id: hit.knowledge_base for hit in hits}
    found = chunks_by_id_or_place(chunk_ids=[], places=places).by_place
    return {place: SearchHit(
        content=row.content, source=row.relative_path, relative_path=row.relative_path,
        heading_path=list(row.heading_path),
        heading=row.heading_path[-1] if row.heading_path else "", score=0.0,
        chunk_index=row.chunk_index, document_id=row.document_id,
        content_hash=row.content_hash, page_start=row.page_start, page_end=row.page_end,
        knowledge_base=bases.get(row.document_id), chunk_id=row.id)
        for place, row in found.items()}


def ask(*, question: str, top_k: int | None, fallback: bool, config: Config,
        scope: Scope, on_llm_error: str = ON_LLM_ERROR_RAISE,
        filters: DocumentFilter | None = None) -> dict[str, Any]:
    """The /ask response body: {mode, confidence, answer, citations, invalid_citations_removed,
    unsupported_citations, refusal} and, under a trace, its trace_id."""
    plan = ask_prepare(question=question, top_k=top_k, fallback=fallback, config=config,
                       scope=scope, on_llm_error=on_llm_error, filters=filters)
    return ask_answer(plan, config=config)


def ask_answer(plan: AskPlan, *, config: Config) -> dict[str, Any]:
    """Generate the answer of a prepared plan: the /ask response body (with `notice` when the
    model failed and the plan asked for its sources instead)."""
    removed = 0
    if plan.mode == MODE_NO_ANSWER:
        answer = plan.fixed_answer
        _trace_answer(answer)
    elif plan.notice is not None:
        answer = plan.notice["message"]
    else:
        client = plan.client
        assert client is not None  # every mode but no_answer has its client
        try:
            with connection_released(), llm_slot(config=config):
                started = time.perf_counter()
                generated = client.complete(messages=plan.messages)
        except LocalRagError as exc:
            if not plan.sources_instead(exc):
                raise
            assert plan.notice is not None
            answer = plan.notice["message"]
        else:
            _trace_answer(generated, started=started, client=client)
            answer, removed = citations_strip(text=generated, block_count=plan.block_count)
            if plan.mode == MODE_RAG:
                plan.quotes_attach(answer)
            if plan.mode == MODE_FALLBACK:
                answer = FALLBACK_NOTICE + answer
            answer += disclaimer_suffix(plan)
    body: dict[str, Any] = {"mode": plan.mode, "confidence": plan.confidence, "answer": answer,
                            "citations": plan.citations, "invalid_citations_removed": removed,
                            "unsupported_citations": plan.unsupported_citations,
                            "refusal": plan.refusal}
    if plan.notice is not None:
        body["notice"] = plan.notice
    trace = trace_current()
    if trace is not None:
        body["trace_id"] = trace.id
    return body


def disclaimer_suffix(plan: AskPlan) -> str:
    """What follows a model-written answer: the deployment's disclaimer line, if it has one."""
    return f"\n\n{plan.disclaimer}" if plan.disclaimer else ""


def ask_usage(plan: AskPlan) -> dict[str, Any]:
    """The `usage` event: tokens (the provider's when it reported them, else counted),
    milliseconds per stage so far, and the models."""
    trace = trace_current()
    if trace is None:
        prompt = sum(tokens_count(message["content"]) for message in plan.messages)
        return {"prompt_tokens": prompt if plan.client else 0, "completion_tokens": None,
                "token_source": "counted" if plan.client else None, "timings_ms": {},
                "embedding_model": plan.embedding_model,
                "llm_model": plan.config_llm_model if plan.client else None}
    timings = {name: round(value, 1) for name, value in trace.timings_ms.items()}
    timings["total"] = round((time.perf_counter() - trace.started) * 1000, 1)
    return {"prompt_tokens": trace.prompt_tokens, "completion_tokens": trace.completion_tokens,
            "token_source": trace.token_source, "timings_ms": timings,
            "embedding_model": trace.embedding_model or plan.embedding_model,
            "llm_model": trace.llm_model}


def ask_events(plan: AskPlan) -> Generator[tuple[str, dict[str, Any]], None, None]:
    """The /ask/stream events: retrieval, delta..., citations, usage, done — or an error event
    once generation has failed (the HTTP status is already sent by then); with
    `on_llm_error: sources`, a model failure is a `notice` event and the stream goes on."""
    yield "retrieval", {"mode": plan.mode, "confidence": plan.confidence,
                        "citations": plan.citations, "refusal": plan.refusal}
    stream_filter = CitationStreamFilter(block_count=plan.block_count)
    generated: list[str] = []
    shown: list[str] = []  # the answer's text as the client gets it (invalid markers removed)
    if plan.mode == MODE_NO_ANSWER:
        _trace_answer(plan.fixed_answer)
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
                trace_fail(exc.code)  # its 200 is sent: the trace says so
                yield "error", exc.as_body()
                return
            assert plan.notice is not None
            yield "notice", plan.notice
        except Exception:
            logger.exception("streaming generation failed")
            trace_fail("internal_error")
            yield "error", error_body("internal_error", "generation failed; see the server log")
            return
        else:
            _trace_answer("".join(generated), started=started, first=first, client=client)
    yield "citations", {"citations": plan.citations,
                        "invalid_citations_removed": stream_filter.removed,
                        "unsupported_citations": plan.unsupported_citations}
    yield "usage", ask_usage(plan)
    trace = trace_current()
    yield "done", {"mode": plan.mode, **({"trace_id": trace.id} if trace is not None else {})}


def ask_stream_open(*, question: str, top_k: int | None, fallback: bool, config: Config,
                    scope: Scope, on_llm_error: str = ON_LLM_ERROR_RAISE,
                    filters: DocumentFilter | None = None) -> AskEventStream:
    """The /ask/stream events, with every pre-generation error raised now — `llm_busy`
    included: the stream's LLM slot is taken before its first byte."""
    plan = ask_prepare(question=question, top_k=top_k, fallback=fallback, config=config,
                       scope=scope, on_llm_error=on_llm_error, filters=filters)
    return ask_stream_of(plan, config=config)


def ask_stream_of(plan: AskPlan, *, config: Config) -> AskEventStream:
    """The events of a prepared plan, its LLM slot taken now (or, with `on_llm_error:
    sources`, the sources answered when none is free)."""
    slot = None
    if plan.client is not None and plan.notice is None:
        try:
            with connection_released():
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
