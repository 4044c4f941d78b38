"""Query -> embedding -> the retrieval pipeline (retrieval/pipeline.py) -> ranked chunks with a
confidence; the entry point of /search, /ask, `rag search` and `rag eval`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import psycopg

from access.callers import Scope
from core.config import EMBEDDING_DIM, MAX_TEXT_CHARS, TOP_K_RANGE, Config
from core.db import DatabaseUnavailable, db_errors_translated
from core.errors import InvalidRequest
from core.replicas import replica_failed, replica_reads
from embeddings import EmbeddingDimMismatch, EmbeddingProvider, get_embedder
from knowledge.db_schema import index_connection
from retrieval import sql
from retrieval.filters import DocumentFilter, filtered_scope
from retrieval.pipeline import pipeline_clock, pipeline_run
from retrieval.types import SearchOutcome
from retrieval.vector import RetrievalNotReady
from traces.recording import trace_current


def top_k_validate(top_k: int | None, *, config: Config) -> int:
    """RAG_TOP_K when not given; 1..20 otherwise."""
    value = config.rag_top_k if top_k is None else top_k
    low, high = TOP_K_RANGE
    if not low <= value <= high:
        raise InvalidRequest(f"top_k must be between {low} and {high}, got {value}",
                             details={"field": "top_k"})
    return value


def search(*, query: str, top_k: int | None, config: Config, scope: Scope,
           embedder: EmbeddingProvider | None = None, mode: str | None = None,
           explain: bool = False, filters: DocumentFilter | None = None) -> SearchOutcome:
    """The top_k chunks for `query` by RAG_RETRIEVAL (or `mode`): vector, lexical or hybrid,
    from the knowledge bases of `scope` only, and with `filters` only from the documents they
    admit (retrieval/filters.py)."""
    if not query.strip():
        raise InvalidRequest("query must not be empty", details={"field": "query"})
    if len(query) > MAX_TEXT_CHARS:
        raise InvalidRequest(f"query is longer than {MAX_TEXT_CHARS} characters",
                             details={"field": "query"})
    limit = top_k_validate(top_k, config=config)
    mode = mode or config.rag_retrieval
    embedder = embedder or get_embedder(config=config)
    clock = pipeline_clock()
    started = time.perf_counter()
    vector = embedder.embed_query(query)
    clock.stage("embed", started)
    if len(vector) != EMBEDDING_DIM:
        raise EmbeddingDimMismatch(
            f"the query embedding has {len(vector)} dimensions but the index stores "
            f"{EMBEDDING_DIM}; check EMBEDDING_PROVIDER / EMBEDDING_MODEL",
            details={"expected": EMBEDDING_DIM, "actual": len(vector)})
    with replica_reads(config) as replica:
        try:
            return _retrieve(query=query, vector=vector, limit=limit, mode=mode, config=config,
                             embedder=embedder, scope=scope, filters=filters, clock=clock,
                             explain=explain, database=replica or "primary")
        except DatabaseUnavailable:
            if replica is None:
                raise
            # The replica went away in the middle of the search: skipped from now on, and this
            # search done again on the primary.
            replica_failed(replica)
    return _retrieve(query=query, vector=vector, limit=limit, mode=mode, config=config,
                     embedder=embedder, scope=scope, filters=filters, clock=clock,
                     explain=explain, database="primary")


def _retrieve(*, query: str, vector: list[float], limit: int, mode: str, config: Config,
              embedder: EmbeddingProvider, scope: Scope, filters: DocumentFilter | None,
              clock: Any, explain: bool, database: str) -> SearchOutcome:
    """The statements of one search, on the database `replica_reads` chose."""
    ids = scope.knowledge_base_ids
    admitted = None
    if filters is not None:
        started = time.perf_counter()
        admitted = filtered_scope(filters=filters, knowledge_base_ids=ids)
        clock.stage("filter", started)
    run = pipeline_run(query=query, vector=vector, top_k=limit, mode=mode, config=config,
                       embedder=embedder, knowledge_base_ids=ids, clock=clock, explain=explain,
                       scope=admitted)
    if explain and filters is not None and admitted is not None:
        run.parameters["filters"] = {**filters.described,
                                     "documents": len(admitted.document_ids),
                                     "chunks": admitted.chunks}
    _trace_note(mode=mode, limit=limit, ids=ids, run=run, config=config, embedder=embedder,
                filters=filters, database=database)
    if not run.results:
        _readiness_check(embedder=embedder, knowledge_base_ids=ids)
    return SearchOutcome(confidence=run.confidence, results=[item.hit for item in run.results],
                         explain=run.explain() if explain else None)


def search_body(outcome: SearchOutcome) -> dict[str, Any]:
    """The /search body: `explain` only when it was asked for, `trace_id` under a trace."""
    body: dict[str, Any] = {"confidence": outcome.confidence, "results": outcome.results}
    if outcome.explain is not None:
        body["explain"] = outcome.explain
    trace = trace_current()
    if trace is not None:
        body["trace_id"] = trace.id
    return body


def _trace_note(*, mode: str, limit: int, ids: Sequence[int], run: Any, config: Config,
                embedder: EmbeddingProvider, filters: DocumentFilter | None,
                database: str) -> None:
    """What this retrieval adds to the current trace: scope, parameters, stage times."""
    trace = trace_current()
    if trace is None:
        return
    trace.knowledge_base_ids = list(ids)
    trace.embedding_model = f"{embedder.provider}/{embedder.model}"
    reranking = mode != "vector" and config.rag_rerank != "none"
    trace.parameters.update(mode=mode, top_k=limit, candidates=config.rag_candidates,
                            rerank=config.rag_rerank if reranking else "none",
                            vector_index=config.rag_vector_index,
                            threshold=config.threshold)
    if config.database_replica_urls:
        trace.parameters["database"] = database  # the replica's alias, or "primary"
    if filters is not None:
        trace.parameters["filters"] = filters.described
    for stage, milliseconds in run.timings_ms.items():
        trace.stage(stage, milliseconds)
    if trace.operation == "search":
        trace.mode = mode


def _readiness_check(*, embedder: EmbeddingProvider, knowledge_base_ids: Sequence[int]) -> None:
    """No result at all: say so when the reason is that nothing of these knowledge bases is
    embedded for this config."""
    config_key = [embedder.provider, embedder.model, embedder.dim, list(knowledge_base_ids)]
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn) as cursor:
            cursor.execute(sql.HAS_EMBEDDINGS, config_key)
            row = cursor.fetchone()
            assert row is not None  # SELECT EXISTS (...) returns one row
            if not row[0]:
                raise RetrievalNotReady(
                    f"no embeddings for {embedder.provider}/{embedder.model} yet; run "
                    "`rag ingest` with this configuration",
                    details={"embedding_provider": embedder.provider,
                             "embedding_model": embedder.model})
