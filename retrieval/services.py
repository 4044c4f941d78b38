"""Query -> embedding -> exact cosine scan -> ranked chunks with a confidence."""

from __future__ import annotations

import math

import psycopg
from pgvector import Vector

from core.config import EMBEDDING_DIM, MAX_TEXT_CHARS, TOP_K_RANGE, Config
from core.db import db_errors_translated
from core.errors import InvalidRequest, LocalRagError
from knowledge.embeddings import EmbeddingDimMismatch, EmbeddingProvider, get_embedder
from knowledge.schema import index_connection
from retrieval import sql
from retrieval.types import SearchHit, SearchOutcome


class RetrievalNotReady(LocalRagError):
    code = "retrieval_not_ready"


def top_k_validate(top_k: int | None, *, config: Config) -> int:
    """RAG_TOP_K when not given; 1..20 otherwise."""
    value = config.rag_top_k if top_k is None else top_k
    low, high = TOP_K_RANGE
    if not low <= value <= high:
        raise InvalidRequest(f"top_k must be between {low} and {high}, got {value}",
                             details={"field": "top_k"})
    return value


def search(*, query: str, top_k: int | None, config: Config,
           embedder: EmbeddingProvider | None = None) -> SearchOutcome:
    """The top_k chunks closest to `query` among the current embedding config's vectors."""
    if not query.strip():
        raise InvalidRequest("query must not be empty", details={"field": "query"})
    if len(query) > MAX_TEXT_CHARS:
        raise InvalidRequest(f"query is longer than {MAX_TEXT_CHARS} characters",
                             details={"field": "query"})
    limit = top_k_validate(top_k, config=config)
    embedder = embedder or get_embedder(config=config)
    vector = embedder.embed_query(query)
    if len(vector) != EMBEDDING_DIM:
        raise EmbeddingDimMismatch(
            f"the query embedding has {len(vector)} dimensions but the index stores "
            f"{EMBEDDING_DIM}; check EMBEDDING_PROVIDER / EMBEDDING_MODEL",
            details={"expected": EMBEDDING_DIM, "actual": len(vector)})
    config_key = [embedder.provider, embedder.model, embedder.dim]
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn) as cursor:
            rows = []
            if any(vector):  # a query without any token matches nothing
                cursor.execute(sql.SEARCH, [Vector(list(vector)), *config_key, limit])
                rows = cursor.fetchall()
            if not rows:
                cursor.execute(sql.HAS_EMBEDDINGS, config_key)
                if not cursor.fetchone()[0]:
                    raise RetrievalNotReady(
                        f"no embeddings for {embedder.provider}/{embedder.model} yet; run "
                        "`rag ingest` with this configuration",
                        details={"embedding_provider": embedder.provider,
                                 "embedding_model": embedder.model})
    hits = [_hit(row) for row in rows if _usable(row[6])]
    return SearchOutcome(confidence=hits[0].score if hits else 0.0, results=hits)


def _usable(distance: float | None) -> bool:
    # A chunk whose vector is all zeros (no tokens) has an undefined (NaN) cosine distance.
    return distance is not None and not math.isnan(distance)


def _hit(row: tuple) -> SearchHit:
    content, relative_path, heading_path, chunk_index, document_id, content_hash, distance = row
    heading_path = list(heading_path)
    return SearchHit(
        content=content, source=relative_path, relative_path=relative_path,
        heading_path=heading_path, heading=heading_path[-1] if heading_path else "",
        score=max(0.0, min(1.0, 1.0 - distance)), chunk_index=chunk_index,
        document_id=document_id, content_hash=content_hash)
