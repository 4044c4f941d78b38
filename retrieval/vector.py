"""The vector channel: the current embedding config's chunks nearest to a query vector, by
cosine distance, from the exact scan or from the HNSW index.

RAG_VECTOR_INDEX picks the path (index/vector_path.py). `exact` scans every vector (the
reference: the first release's results, scores and order). `hnsw` answers from the index that
`rag db index` builds and fails with retrieval_not_ready when there is none: a setting that asks
for the index should not silently turn into a scan a hundred times slower. `auto` (the default)
takes the index when it holds at least RAG_HNSW_MIN_CHUNKS vectors and its recall@10, measured
on the stored vectors, reached RAG_HNSW_TARGET_RECALL; else the exact scan. The index is
searched at the ef_search that measurement chose (HNSW_EF_SEARCH while there is none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import psycopg
from django.db import transaction
from pgvector import Vector
from psycopg.rows import class_row

from core.config import EMBEDDING_DIM, Config
from core.db import db_errors_translated
from core.errors import InvalidRequest, LocalRagError
from embeddings import EmbeddingDimMismatch, EmbeddingProvider
from index.search import Candidates, vector_candidates
from index.vector_path import VectorPath, vector_path_plan
from knowledge.db_schema import index_connection
from retrieval import sql
from retrieval.filters import FilteredScope
from retrieval.types import ChunkColumns, SearchHit

# A filtered search whose documents hold at most this many chunks scans their vectors exactly
# (exact recall, a few milliseconds per thousand chunks) rather than walking the HNSW graph,
# which would visit many chunks the filter then drops before it finds `limit` admitted ones.
FILTER_EXACT_CHUNKS = 10_000


class RetrievalNotReady(LocalRagError):
    """Nothing to search yet for this configuration (no vectors, or no index asked for)."""

    code = "retrieval_not_ready"


@dataclass(frozen=True)
class _NearestRow(ChunkColumns):
    """A row of the vector channel's statements (retrieval/sql.py _NEAREST)."""

    distance: float | None  # NaN or NULL for a chunk whose own vector is all zeros


@dataclass(frozen=True)
class VectorHit(ChunkColumns):
    """One chunk found by the vector channel, nearest first (distance asc, chunk id asc)."""

    distance: float  # cosine distance, 0..2
    score: float  # clamp(1 − distance, 0, 1): SearchHit.score
    rank: int  # 1-based position in this channel's ranking

    def search_hit(self) -> SearchHit:
        """The hit as the API and answering know it."""
        return SearchHit.from_row(self, chunk_id=self.chunk_id, score=self.score,
                                  knowledge_base=self.knowledge_base)


def vector_path_choose(*, conn: psycopg.Connection, config: Config,
                       embedder: EmbeddingProvider) -> VectorPath:
    """The path ("exact" or "hnsw") and ef_search RAG_VECTOR_INDEX takes for this embedder's
    vectors now; retrieval_not_ready for `hnsw` without an index."""
    plan = vector_path_plan(conn=conn, config=config, provider=embedder.provider,
                            model=embedder.model)
    if plan.path == "unavailable":
        _not_ready(embedder)
    return plan


def vector_search(*, vector: Sequence[float], limit: int, config: Config,
                  embedder: EmbeddingProvider,
                  knowledge_base_ids: Sequence[int],
                  scope: FilteredScope | None = None,
                  report: dict[str, Any] | None = None) -> list[VectorHit]:
    """The `limit` chunks of `embedder`'s provider/model/dim nearest to `vector`; [] for a
    vector without any non-zero component (it has no direction) and when nothing is stored.
    Chunks whose own vector is all zeros (NaN distance) are left out, as search() does. With
    `scope` (a filtered search), only the chunks of its documents: scanned exactly when they
    are few (FILTER_EXACT_CHUNKS), else through the index with the filter applied as it reads.

    With `auto`, the search index on (RAG_SEARCH_INDEX) and fake-lexical-v1 vectors, an
    unfiltered search scans only the chunks the bases' sparse vector indexes propose (every
    chunk sharing a bucket with the query, index/sparse_vectors.py) and those changed since
    their generation: the exact scan's rows. `report`, when given, gets the path taken."""
    if limit < 1:
        raise InvalidRequest(f"limit must be at least 1, got {limit}", details={"field": "limit"})
    if len(vector) != EMBEDDING_DIM:
        raise EmbeddingDimMismatch(
            f"the query embedding has {len(vector)} dimensions but the index stores "
            f"{EMBEDDING_DIM}; check EMBEDDING_PROVIDER / EMBEDDING_MODEL",
            details={"expected": EMBEDDING_DIM, "actual": len(vector)})
    if not any(vector) or (scope is not None and not scope.document_ids):
        return []
    params = [Vector(list(vector)), embedder.provider, embedder.model, embedder.dim,
              list(knowledge_base_ids), limit]
    exact_sql = sql.SEARCH_EXACT
    if scope is not None:
        params.insert(-1, scope.document_ids)
        exact_sql = sql.SEARCH_EXACT_FILTERED
    with db_errors_translated():
        conn = index_connection()
        plan = vector_path_choose(conn=conn, config=config, embedder=embedder)
        path = plan.path
        if scope is not None and scope.chunks <= FILTER_EXACT_CHUNKS:
            path = "exact"
        # Its own transaction, rolled back rather than committed: it only reads, and a rollback
        # also undoes the SET LOCALs inside a caller's transaction, where a commit would only
        # release the savepoint and leave them set for the caller's next queries.
        # The channel's rows are read by name on a cursor of their own: `cursor` also runs the
        # settings and the search index's statements (index/search.py), which read theirs.
        with transaction.atomic(), psycopg.Cursor(conn) as cursor, \
                psycopg.Cursor(conn, row_factory=class_row(_NearestRow)) as nearest:
            rows: list[_NearestRow] | None = None
            if scope is None and config.rag_vector_index == "auto":
                found = vector_candidates(cursor, config=config, provider=embedder.provider,
                                          model=embedder.model,
                                          knowledge_base_ids=list(knowledge_base_ids),
                                          vector=vector, limit=limit)
                if report is not None:
                    report["search_index"] = found.explain()
                if isinstance(found, Candidates):
                    # The first release's scan over the proposed chunks and the delta only:
                    # the same distances, the same order.
                    cursor.execute(sql.EXACT_SETTINGS)
                    nearest.execute(sql.SEARCH_IDS, [*params[:-1], found.chunk_ids, limit])
                    rows = nearest.fetchall()
                    path = "sparse"
            if rows is None and path == "hnsw":
                assert plan.key is not None  # the plan names the key of every index it takes
                cursor.execute(sql.HNSW_SETTINGS, [str(plan.ef_search)])
                # Never a prepared, generic plan: only a plan made with the provider/model
                # values can prove the partial index's predicate and use it.
                nearest.execute(sql.search_hnsw(plan.key, filtered=scope is not None),
                                [*params[:-1], params[0], limit], prepare=False)
                rows = nearest.fetchall()
                if len(rows) < limit:
                    # The index ran out of candidates before finding `limit` rows of these
                    # knowledge bases (a small base in a large index): scan them exactly.
                    path, rows = "exact", None
            if rows is None:
                cursor.execute(sql.EXACT_SETTINGS)
                nearest.execute(exact_sql, params)
                rows = nearest.fetchall()
            transaction.set_rollback(True)
    assert rows is not None  # the exact scan runs whenever no other path answered
    hits = [(row, row.distance) for row in rows
            if row.distance is not None and not math.isnan(row.distance)]
    return [VectorHit(**row.chunk_columns(), distance=distance,
                      score=max(0.0, min(1.0, 1.0 - distance)), rank=rank)
            for rank, (row, distance) in enumerate(hits, start=1)]


def _not_ready(embedder: EmbeddingProvider) -> NoReturn:
    raise RetrievalNotReady(
        f"RAG_VECTOR_INDEX=hnsw but there is no HNSW index for {embedder.provider}/"
        f"{embedder.model} (or its build was interrupted); run `rag db index`, or set "
        "RAG_VECTOR_INDEX=auto to scan exactly until it exists",
        details={"embedding_provider": embedder.provider, "embedding_model": embedder.model,
                 "vector_index": "hnsw"})
