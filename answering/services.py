"""Ask: retrieval -> mode -> context -> LLM -> answer with citations; whole here, streamed in
answering/streaming.py.

Everything that can fail before generation (validation, database, retrieval readiness, LLM
settings) is checked in `ask_prepare`, so the streaming endpoint can answer those as ordinary
JSON errors before its first byte; `ask_stream_open` also takes the stream's LLM slot by then, so
`llm_busy` is an ordinary JSON 503 too. Every LLM call runs inside `connection_released()` (no
database connection is held while the model answers) and holds an LLM slot (answering/slots.py).
What planning and answering measure goes back with the plan and the answer
(answering/measures.py), for the entry point to record in its trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from access.callers import Scope
from answering.citations import citations_strip
from answering.context import CitedChunk, context_build, neighbour_places
from answering.context_hits import QueryOnce, context_hits
from answering.llm import (
    LLMClient,
    get_llm_client,
    llm_model_name,
    llm_outbound_check,
    llm_outbound_record,
)
from answering.measures import (
    TOKENS_COUNTED,
    TOKENS_PROVIDER,
    Failure,
    Generation,
    PlanMeasures,
    QuotedChunk,
    QuotedChunks,
)
from answering.modes import (
    FALLBACK_NOTICE,
    MODE_FALLBACK,
    MODE_NO_ANSWER,
    MODE_RAG,
    mode_for,
    no_answer_text,
)
from answering.prompts import fallback_messages, rag_messages
from answering.quote_places import QUOTE_FIELDS, quote_fields
from answering.quotes import citations_verify
from answering.refusal import refusal_decide, refusal_rule
from answering.replay import context_record
from answering.slots import llm_slot
from core.config import Config
from core.db import connection_released
from core.errors import LocalRagError
from core.text_tokens import tokens_count
from embeddings import get_embedder
from knowledge.selectors import chunks_by_id_or_place, document_dates
from retrieval.filters import DocumentFilter
from retrieval.services import search
from retrieval.signals import signals_measure
from retrieval.types import RetrievalRequest, SearchHit
from traces.recording import Measured, TraceRef, measured_on_failure

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


@dataclass(frozen=True)
class AnswerRequest:
    """One question to answer, as asked: searched in the knowledge bases of `scope` (with
    `filters`, only in the documents they admit) for at most `top_k` sources (None:
    RAG_TOP_K); `fallback` asks for a general-knowledge answer below the threshold, and
    `on_llm_error` says what a model's failure becomes. In a conversation, retrieval searches
    `search_query` (the follow-up made standalone) while the model reads `history` and the
    question asked; `history_bases` are the bases its earlier answers cite, which the outbound
    policy covers. `trace` is the trace the request runs under, which the answer names."""

    question: str
    scope: Scope
    top_k: int | None = None
    fallback: bool = False
    on_llm_error: str = ON_LLM_ERROR_RAISE
    filters: DocumentFilter | None = None
    search_query: str | None = None
    history: Sequence[dict[str, str]] = ()
    history_bases: Sequence[str] = ()
    trace: TraceRef | None = None


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
    # Each block's text, for finding the quote behind each citation (answering/quotes.py), and
    # its chunks with their spans of that text, for the chunk the quote lies in.
    block_contents: list[str] = field(default_factory=list)
    block_chunks: list[tuple[CitedChunk, ...]] = field(default_factory=list)
    # How many markers of the answer no sentence of their block supports.
    unsupported_citations: int = 0
    # How the refusal rule decided (answering/refusal.py): the answer's `refusal` object.
    refusal: dict[str, Any] | None = None
    # The trace the request runs under: the stream's `done` event names it.
    trace: TraceRef | None = None
    # What planning measured (set when the plan is complete), then what answering measured:
    # the model's failure answered with the sources (or a stream's error event), the answer.
    measures: PlanMeasures | None = None
    failure: str | None = None
    generation: Generation | None = None
    quoted: QuotedChunks | None = None

    def quotes_attach(self, answer: str) -> None:
        """Give each citation the quote of its block that the answer relies on (None when the
        answer does not cite it, or without support) and, with a quote, the heading path and
        pages of the chunk holding it (answering/quote_places.py); count the unsupported
        markers."""
        quotes, self.unsupported_citations = citations_verify(answer=answer,
                                                              block_texts=self.block_contents)
        chunks = self.block_chunks or [()] * len(quotes)
        fields = [quote_fields(quote, chunks=held)
                  for quote, held in zip(quotes, chunks, strict=True)]
        self.citations = [{**citation, **quoted}
                          for citation, quoted in zip(self.citations, fields, strict=True)]
        self.quoted = QuotedChunks(chunks=tuple(
            _quoted_chunk(quoted, held) for quoted, held in zip(fields, chunks, strict=True)))

    def sources_instead(self, error: LocalRagError) -> bool:
        """Whether `error` of the model is answered with the sources (and recorded so)."""
        if (self.on_llm_error != ON_LLM_ERROR_SOURCES or self.mode != MODE_RAG
                or error.code not in LLM_FAILURES):
            return False
        self.notice = llm_unavailable_notice(error)
        # Nothing was written, so nothing is quoted: the fields are there, empty.
        self.citations = [{**citation, **dict.fromkeys(QUOTE_FIELDS)}
                          for citation in self.citations]
        self.failure = error.code
        return True

    def answered(self) -> list[Measured]:
        """What answering measured so far: the model's failure, the answer and the chunks its
        quotes lie in. Recording it again as the answer goes on changes nothing already
        recorded."""
        return [*([Failure(self.failure)] if self.failure is not None else []),
                *([self.generation] if self.generation is not None else []),
                *([self.quoted] if self.quoted is not None else [])]

    def tokens(self) -> dict[str, Any]:
        """The answer's tokens as its trace holds them: the provider's when it reported them,
        else counted; None where no model was asked."""
        measures = self.measures
        prompt = measures.prompt_tokens if measures is not None else None
        source = TOKENS_COUNTED if measures is not None and measures.llm_model else None
        completion = None
        generation = self.generation
        if generation is not None and generation.llm_total_ms is not None:
            completion = generation.completion_tokens
            if generation.usage is not None:
                prompt, source = generation.usage.prompt_tokens, TOKENS_PROVIDER
        return {"prompt_tokens": prompt, "completion_tokens": completion, "token_source": source}

    def timings_ms(self) -> dict[str, float]:
        """Milliseconds per stage so far, as its trace holds them (each stage's rounded to two
        places), in the order they ran."""
        measures = self.measures
        timings: dict[str, float] = {}
        if measures is not None and measures.retrieval is not None:
            timings.update(measures.retrieval.timings_ms)
        if measures is not None and measures.deeper is not None:
            timings["context_search"] = measures.deeper.milliseconds
        generation = self.generation
        if generation is not None and generation.llm_total_ms is not None:
            timings["llm_total"] = generation.llm_total_ms
            if generation.llm_first_token_ms is not None:
                timings["llm_first_token"] = generation.llm_first_token_ms
        return {name: round(milliseconds, 2) for name, milliseconds in timings.items()}


@dataclass(frozen=True)
class Answer:
    """An answer as /ask gives it (answering/api_schemas.py `ask_body`), with what planning
    and answering it measured, for the caller's trace."""

    mode: str
    confidence: float
    answer: str
    citations: list[dict[str, Any]]
    invalid_citations_removed: int
    unsupported_citations: int
    refusal: dict[str, Any] | None
    # Set when the model failed and the request asked for its sources instead.
    notice: dict[str, Any] | None
    measures: tuple[Measured | None, ...] = field(default=(), compare=False)


def _quoted_chunk(quoted: dict[str, Any], chunks: tuple[CitedChunk, ...]) -> QuotedChunk | None:
    """What the trace keeps of a citation's quote fields (None without a quote)."""
    if quoted["quote"] is None:
        return None
    index = quoted["quote_chunk_index"]
    held = next((chunk for chunk in chunks if chunk.chunk_index == index), None)
    return QuotedChunk(chunk_id=held.chunk_id if held is not None else None, chunk_index=index,
                       start=quoted["quote_start"], end=quoted["quote_end"],
                       support=quoted["quote_support"])


def llm_unavailable_notice(error: LocalRagError) -> dict[str, Any]:
    """The notice that replaces an answer the model could not give."""
    return {"code": LLM_UNAVAILABLE, "cause": error.code,
            "message": ("The language model is unavailable, so there is no written answer; "
                        "the sources below are what the knowledge base found. "
                        "语言模型暂不可用，以下是知识库找到的来源。"
                        f"({error.code}: {error.message})")}


def ask_prepare(request: AnswerRequest, *, config: Config) -> AskPlan:
    """Retrieve from the knowledge bases of the request's scope, decide the mode and build the
    prompt, with what that measured; raises every pre-generation error."""
    question, history = request.question, request.history
    query = request.search_query or question
    embedder = QueryOnce(get_embedder(config=config))
    retrieval = RetrievalRequest(query=query, scope=request.scope, top_k=request.top_k,
                                 filters=request.filters)
    outcome = search(retrieval, config=config, embedder=embedder)
    with measured_on_failure(outcome.measures):
        # The context's candidates: deeper than top_k when the per-document cap frees places.
        candidates = context_hits(retrieval, outcome=outcome,
                                  per_document=config.rag_context_per_document, config=config,
                                  embedder=embedder)
    with measured_on_failure(outcome.measures, candidates.deeper):
        dates = document_dates(document_ids=[hit.document_id for hit in candidates.hits])
        context = context_build(hits=candidates.hits,
                                token_budget=config.rag_context_token_budget, dates=dates,
                                per_document=config.rag_context_per_document,
                                neighbours=_neighbours(candidates.hits,
                                                       depth=config.rag_context_neighbours),
                                neighbour_depth=config.rag_context_neighbours,
                                limit=candidates.limit)
        refusal = refusal_decide(signals=signals_measure(query=query, hits=outcome.results,
                                                         confidence=outcome.confidence),
                                 config=config)
        # A query without tokens has no results, and a budget too small for any block leaves
        # no context: either way there is nothing to answer from, whatever the rule says.
        mode = mode_for(grounded=refusal.grounded, fallback_requested=request.fallback,
                        fallback_enabled=config.rag_fallback_enabled,
                        has_sources=context.blocks > 0)
        plan = AskPlan(mode=mode, confidence=outcome.confidence, citations=[],
                       on_llm_error=request.on_llm_error, refusal=refusal.as_dict(),
                       config_llm_model=llm_model_name(config=config),
                       embedding_model=f"{config.embedding_provider}/{config.embedding_model}",
                       disclaimer=config.rag_answer_disclaimer, trace=request.trace)
        bases = sorted({citation.knowledge_base for citation in context.citations
                        if citation.knowledge_base})
        if mode == MODE_RAG:
            plan.citations = [citation.as_dict() for citation in context.citations]
            plan.chunk_ids = [citation.chunk_id for citation in context.citations]
            plan.content_hashes = [citation.content_hash for citation in context.citations]
            plan.block_contents = list(context.contents)
            plan.block_chunks = [citation.chunks for citation in context.citations]
            plan.block_count = context.blocks
            plan.messages = rag_messages(question=question, context_text=context.text,
                                         history=history)
            try:
                client = get_llm_client(config=config)  # missing settings are said first
                _outbound_check(config=config, bases=bases, request=request)
                plan.client = client
            except LocalRagError as exc:
                if not plan.sources_instead(exc):
                    raise
        elif mode == MODE_FALLBACK:
            plan.messages = fallback_messages(question=question, history=history)
            client = get_llm_client(config=config)
            # A general-knowledge answer carries no base's text, but a conversation's history
            # may.
            _outbound_check(config=config, bases=[], request=request)
            plan.client = client
        else:
            plan.fixed_answer = no_answer_text(
                weak_sources=[hit.source for hit in outcome.results],
                fallback_disabled=request.fallback and not config.rag_fallback_enabled)
    sent = None
    if plan.client is not None:
        sent_bases = {*(bases if mode == MODE_RAG else []),
                      *(request.history_bases if history else [])}
        sent = llm_outbound_record(config=config, messages=plan.messages,
                                   knowledge_bases=sorted(sent_bases), chunk_ids=plan.chunk_ids)
    plan.measures = PlanMeasures(
        retrieval=outcome.measures, deeper=candidates.deeper, mode=mode, question=question,
        standalone_query=(request.search_query
                          if request.search_query and request.search_query != question else None),
        context={"context_token_budget": config.rag_context_token_budget,
                 "context_per_document": config.rag_context_per_document,
                 "context_neighbours": config.rag_context_neighbours,
                 "refusal": refusal_rule(config)},
        citations=context_record(context=context) if mode == MODE_RAG else [],
        llm_model=plan.config_llm_model if plan.client is not None else None,
        prompt_tokens=(sum(tokens_count(message["content"]) for message in plan.messages)
                       if plan.client is not None else None),
        outbound=sent)
    return plan


def _outbound_check(*, config: Config, bases: Sequence[str], request: AnswerRequest) -> None:
    """The outbound policy of what the model is sent, in one check: the context's bases, and
    for a conversation's history the bases its earlier answers cite (whatever the scope is
    now) and the scope's (an answer may quote any base it searched)."""
    history = request.history
    what = " and ".join(part for part, sent in (("the answer's context", bases),
                                                ("the conversation's earlier turns", history))
                        if sent)
    llm_outbound_check(config=config, what=what or "the answer's context",
                       knowledge_bases=[*bases, *(request.history_bases if history else ())],
                       knowledge_base_ids=request.scope.knowledge_base_ids if history else ())


def _neighbours(hits: Sequence[SearchHit], *,
                depth: int) -> dict[tuple[int, int], SearchHit]:
    """The chunks next to `hits` that the context may take on (answering/context.py rule 4),
    read from the index: of the hits' own documents only, so of bases the caller reads."""
    places = neighbour_places(hits, depth=depth)
    if not places:
        return {}
    bases = {hit.document_id: hit.knowledge_base for hit in hits}
    found = chunks_by_id_or_place(chunk_ids=[], places=places).by_place
    return {place: SearchHit.from_row(row, chunk_id=row.id, score=0.0,
                                      knowledge_base=bases.get(row.document_id))
            for place, row in found.items()}


def ask(request: AnswerRequest, *, config: Config) -> Answer:
    """The answer to the request's question: {mode, confidence, answer, citations,
    invalid_citations_removed, unsupported_citations, refusal} (and `notice`), with what it
    measured."""
    return ask_answer(ask_prepare(request, config=config), config=config)


def ask_answer(plan: AskPlan, *, config: Config) -> Answer:
    """Generate the answer of a prepared plan (with `notice` when the model failed and the plan
    asked for its sources instead), and what planning and answering it measured; an error
    carries what planning measured."""
    removed = 0
    with measured_on_failure(plan.measures):
        if plan.mode == MODE_NO_ANSWER:
            answer = plan.fixed_answer
            plan.generation = Generation(text=answer)
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
                # getattr: a client written before usage reporting need not declare it.
                plan.generation = Generation.of_model(
                    generated, started=started, first=None,
                    usage=getattr(client, "last_usage", None))
                answer, removed = citations_strip(text=generated, block_count=plan.block_count)
                if plan.mode == MODE_RAG:
                    plan.quotes_attach(answer)
                if plan.mode == MODE_FALLBACK:
                    answer = FALLBACK_NOTICE + answer
                answer += disclaimer_suffix(plan)
    return Answer(mode=plan.mode, confidence=plan.confidence, answer=answer,
                  citations=plan.citations, invalid_citations_removed=removed,
                  unsupported_citations=plan.unsupported_citations, refusal=plan.refusal,
                  notice=plan.notice, measures=(plan.measures, *plan.answered()))


def disclaimer_suffix(plan: AskPlan) -> str:
    """What follows a model-written answer: the deployment's disclaimer line, if it has one."""
    return f"\n\n{plan.disclaimer}" if plan.disclaimer else ""
