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

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from answering.context import context_places_freed
from core.config import TOP_K_RANGE, Config
from embeddings import EmbeddingProvider
from retrieval.services import search, top_k_validate
from retrieval.types import RetrievalRequest, SearchHit, SearchOutcome
from traces.recording import Trace

CONTEXT_SEARCH_DEPTH = TOP_K_RANGE[1]


class QueryOnce:
    """An embedder that embeds each query text once: both searches of one question share its
    vector (a model's time, or a call to an embedding server, spent once). Everything else is
    the wrapped embedder's."""

    def __init__(self, embedder: EmbeddingProvider) -> None:
        self._embedder = embedder
        self._vectors: dict[str, list[float]] = {}
        # What the last embed_query sent to a server elsewhere: nothing when it was embedded
        # before (retrieval/services.py reads it).
        self.query_sent: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_query(self, text: str) -> list[float]:
        self.query_sent = None
        if text not in self._vectors:
            self._vectors[text] = self._embedder.embed_query(text)
            self.query_sent = getattr(self._embedder, "query_sent", None)
        return self._vectors[text]


@dataclass(frozen=True)
class DeeperSearch:
    """The context's deeper search, for the answer's trace: its depth, its time and what it
    sent out. Its own parameters and stage times are left out: the answer's confidence and
    refusal are the top_k search's, and so is what the trace says of retrieval."""

    depth: int
    milliseconds: float
    outbound: tuple[dict[str, Any], ...] = ()

    def record(self, trace: Trace) -> None:
        trace.parameters["context_search_depth"] = self.depth
        trace.stage("context_search", self.milliseconds)
        trace.outbound_add(self.outbound)


@dataclass(frozen=True)
class ContextHits:
    """What `context_build` reads: the candidates in ranked order, and how many it keeps."""

    hits: list[SearchHit]
    limit: int
    deeper: DeeperSearch | None = None  # when the deeper search ran


def context_hits(request: RetrievalRequest, *, outcome: SearchOutcome, per_document: int,
                 config: Config, embedder: EmbeddingProvider) -> ContextHits:
    """The candidates of the context of `outcome` (the search of `request`): its own results,
    or a deeper search's when the per-document cap leaves places of a full top_k free, with
    what that search measured."""
    limit = top_k_validate(request.top_k, config=config)
    hits = outcome.results
    if (len(hits) < limit or limit >= CONTEXT_SEARCH_DEPTH
            or not context_places_freed(hits=hits, per_document=per_document)):
        return ContextHits(hits=list(hits), limit=limit)
    started = time.perf_counter()
    deeper = search(dataclasses.replace(request, top_k=CONTEXT_SEARCH_DEPTH), config=config,
                    embedder=embedder)
    sent = deeper.measures.outbound if deeper.measures is not None else ()
    return ContextHits(hits=deeper.results, limit=limit,
                       deeper=DeeperSearch(depth=CONTEXT_SEARCH_DEPTH,
                                           milliseconds=(time.perf_counter() - started) * 1000,
                                           outbound=sent))
