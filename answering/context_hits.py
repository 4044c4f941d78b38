"""The hits an answer's context is built from: the search's top_k, or a deeper search's when the
per-document cap frees some of those places (answering/context.py rule 2), so that the next
candidates of other documents fill them: five chunks of one report leave room for the memo at
rank 10.

The answer's confidence, its refusal and the sources a refusal names stay those of the top_k
search; the deeper one only feeds the context. It runs only when the cap (or a duplicate) frees
a place of a full top_k, so most questions pay for one search and the others embed their
question once (the deeper search reuses the first's query vector: QueryOnce). It searches
CONTEXT_SEARCH_DEPTH deep (the top of TOP_K_RANGE): a top_k of 20
is never searched deeper. Hybrid retrieval (and a reranker) cut both lists from the same fused
ranking, so the deeper list begins with the top_k one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from access.callers import Scope
from answering.context import context_places_freed
from core.config import TOP_K_RANGE, Config
from embeddings import EmbeddingProvider
from retrieval.filters import DocumentFilter
from retrieval.services import search, top_k_validate
from retrieval.types import SearchHit, SearchOutcome
from traces.recording import trace_current

CONTEXT_SEARCH_DEPTH = TOP_K_RANGE[1]


class QueryOnce:
    """An embedder that embeds each query text once: both searches of one question share its
    vector (a model's time, or a call to an embedding server, spent once). Everything else is
    the wrapped embedder's."""

    def __init__(self, embedder: EmbeddingProvider) -> None:
        self._embedder = embedder
        self._vectors: dict[str, list[float]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_query(self, text: str) -> list[float]:
        if text not in self._vectors:
            self._vectors[text] = self._embedder.embed_query(text)
        return self._vectors[text]


@dataclass(frozen=True)
class ContextHits:
    """What `context_build` reads: the candidates in ranked order, and how many it keeps."""

    hits: list[SearchHit]
    limit: int


def context_hits(*, query: str, outcome: SearchOutcome, top_k: int | None, per_document: int,
                 config: Config, scope: Scope, embedder: EmbeddingProvider,
                 filters: DocumentFilter | None = None) -> ContextHits:
    """The candidates of the context of `outcome` (the search of `query` at `top_k`): its own
    results, or a deeper search's when the per-document cap leaves places of a full top_k
    free. The deeper search is noted in the current trace beside the first one's parameters
    and stage times, which it leaves as they were."""
    limit = top_k_validate(top_k, config=config)
    hits = outcome.results
    if (len(hits) < limit or limit >= CONTEXT_SEARCH_DEPTH
            or not context_places_freed(hits=hits, per_document=per_document)):
        return ContextHits(hits=list(hits), limit=limit)
    trace = trace_current()
    noted = (dict(trace.parameters), dict(trace.timings_ms)) if trace is not None else None
    started = time.perf_counter()
    deeper = search(query=query, top_k=CONTEXT_SEARCH_DEPTH, config=config, scope=scope,
                    filters=filters, embedder=embedder)
    if trace is not None and noted is not None:
        trace.parameters, trace.timings_ms = noted
        trace.parameters["context_search_depth"] = CONTEXT_SEARCH_DEPTH
        trace.stage("context_search", (time.perf_counter() - started) * 1000)
    return ContextHits(hits=deeper.results, limit=limit)
