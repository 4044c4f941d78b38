"""Query -> embedding -> the retrieval pipeline (retrieval/pipeline.py) -> ranked chunks with a
confidence and what the search measured; the service behind /search, /ask, `rag search` and
`rag eval`."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg.rows import class_row

from access.callers import Caller, Scope
from core.config import EMBEDDING_DIM, MAX_TEXT_CHARS, TOP_K_RANGE, Config
from core.db import DatabaseUnavailable, db_errors_translated
from core.errors import Forbidden, InvalidRequest
from core.replicas import replica_failed, replica_reads
from embeddings import EmbeddingDimMismatch, EmbeddingProvider, get_embedder
from knowledge.db_schema import index_connection
from knowledge.models import KnowledgeBase
from retrieval import sql
from retrieval.filters import filtered_scope
from retrieval.pipeline import PipelineClock, pipeline_clock, pipeline_run
from retrieval.types import OutboundSent, RetrievalMeasures, RetrievalRequest, SearchOutcome
from retrieval.vector import RetrievalNotReady
from traces.recording import measured_on_failure


def top_k_validate(top_k: int | None, *, config: Config) -> int:
    """RAG_TOP_K when not given; 1..20 otherwise."""
    value = config.rag_top_k if top_k is None else top_k
    low, high = TOP_K_RANGE
    if not low <= value <= high:
        raise InvalidRequest(f"top_k must be between {low} and {high}, got {value}",
                             details={"field": "top_k"})
    return value


def explain_check(*, caller: Caller, scope: Scope) -> None:
    """Forbidden unless the caller may research every base the search reads: explain shows
    each stage's ranks and scores, which readers do not see (a search over several bases ranks
    them together, so one read-only base among them is enough to refuse)."""
    refused = [base for base in scope.knowledge_base_ids if not caller.may_research(base)]
    if refused:
        # Bases the caller reads: naming them tells it nothing new, and which to leave out.
        slugs = sorted(KnowledgeBase.objects.filter(id__in=refused)
                       .values_list("slug", flat=True))
        raise Forbidden("explain needs the researcher or maintainer role on every knowledge "
                        f"base searched; this caller only reads {', '.join(slugs)}",
                        details={"field": "explain", "knowledge_bases": slugs})


def search(request: RetrievalRequest, *, config: Config,
           embedder: EmbeddingProvider | None = None) -> SearchOutcome:
    """The top_k chunks for the request's query by its mode (else RAG_RETRIEVAL): vector,
    lexical or hybrid, from the knowledge bases of its scope only, and with filters only from
    the documents they admit (retrieval/filters.py); with what the search measured, for the
    caller's trace."""
    query = request.query
    if not query.strip():
        raise InvalidRequest("query must not be empty", details={"field": "query"})
    if len(query) > MAX_TEXT_CHARS:
        raise InvalidRequest(f"query is longer than {MAX_TEXT_CHARS} characters",
                             details={"field": "query"})
    settled = dataclasses.replace(request, top_k=top_k_validate(request.top_k, config=config),
                                  mode=request.mode or config.rag_retrieval)
    embedder = embedder or get_embedder(config=config)
    clock = pipeline_clock()
    started = time.perf_counter()
    vector = embedder.embed_query(query)
    clock.stage("embed", started)
    # A server outside this machine that embedded the question says so (knowledge/outbound.py).
    sent = getattr(embedder, "query_sent", None)
    embedded = OutboundSent(records=(sent,) if sent else ())
    retrieve = functools.partial(_retrieve, settled, vector=vector, config=config,
                                 embedder=embedder, clock=clock, embedded=embedded)
    # Whatever fails from here, the question's embedding has left: recorded with the error.
    with measured_on_failure(embedded if embedded.records else None):
        if len(vector) != EMBEDDING_DIM:
            raise EmbeddingDimMismatch(
                f"the query embedding has {len(vector)} dimensions but the index stores "
                f"{EMBEDDING_DIM}; check EMBEDDING_PROVIDER / EMBEDDING_MODEL",
                details={"expected": EMBEDDING_DIM, "actual": len(vector)})
        with replica_reads(config) as replica:
            try:
                return retrieve(database=replica or "primary")
            except DatabaseUnavailable:
                if replica is None:
                    raise
                # The replica went away in the middle of the search: skipped from now on, and
                # this search done again on the primary.
                replica_failed(replica)
        return retrieve(database="primary")


def _retrieve(request: RetrievalRequest, *, vector: list[float], config: Config,
              embedder: EmbeddingProvider, clock: PipelineClock, embedded: OutboundSent,
              database: str) -> SearchOutcome:
    """The statements of one search, on the database `replica_reads` chose."""
    ids = request.scope.knowledge_base_ids
    filters = request.filters
    admitted = None
    if filters is not None:
        started = time.perf_counter()
        admitted = filtered_scope(filters=filters, knowledge_base_ids=ids)
        clock.stage("filter", started)
    run = pipeline_run(request, vector=vector, config=config, embedder=embedder,
                       admitted=admitted, clock=clock)
    if request.explain and filters is not None and admitted is not None:
        run.parameters["filters"] = {**filters.described,
                                     "documents": len(admitted.document_ids),
                                     "chunks": admitted.chunks}
    mode, top_k = run.mode, request.top_k
    assert top_k is not None  # `search` settled it
    reranking = mode != "vector" and config.rag_rerank != "none"
    measures = RetrievalMeasures(
        mode=mode, top_k=top_k, candidates=config.rag_candidates,
        rerank=config.rag_rerank if reranking else "none",
        vector_index=config.rag_vector_index, threshold=config.threshold,
        knowledge_base_ids=tuple(ids), embedding_model=f"{embedder.provider}/{embedder.model}",
        timings_ms=dict(run.timings_ms),
        database=database if config.database_replica_urls else None,
        filters=filters.described if filters is not None else None,
        outbound=(*embedded.records, *run.outbound))
    if not run.results:
        # `search` keeps the question's embedding on the error: only the rest here.
        with measured_on_failure(dataclasses.replace(measures, outbound=run.outbound)):
            _readiness_check(embedder=embedder, knowledge_base_ids=ids)
    return SearchOutcome(confidence=run.confidence, results=[item.hit for item in run.results],
                         explain=run.explain() if request.explain else None, measures=measures)


@dataclass(frozen=True, slots=True)
class _EmbeddedRow:
    embedded: bool


def _readiness_check(*, embedder: EmbeddingProvider, knowledge_base_ids: Sequence[int]) -> None:
    """No result at all: say so when the reason is that nothing of these knowledge bases is
    embedded for this config."""
    config_key = [embedder.provider, embedder.model, embedder.dim, list(knowledge_base_ids)]
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn, row_factory=class_row(_EmbeddedRow)) as cursor:
            cursor.execute(sql.HAS_EMBEDDINGS, config_key)
            row = cursor.fetchone()
            assert row is not None  # SELECT EXISTS (...) returns one row
            if not row.embedded:
                raise RetrievalNotReady(
                    f"no embeddings for {embedder.provider}/{embedder.model} yet; run "
                    "`rag ingest` with this configuration",
                    details={"embedding_provider": embedder.provider,
                             "embedding_model": embedder.model})
