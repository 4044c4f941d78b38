"""The retrieval pipeline: embed → vector and/or lexical candidates → fuse → rerank → top_k,
with every stage's ranks, scores and time kept for the explain output.

`vector` is the first release's contract, unchanged: the exact (or HNSW) cosine top_k, its
scores and its confidence. `lexical` ranks by BM25 and `hybrid` fuses both channels' top
RAG_CANDIDATES (RAG_FUSION: a convex combination of normalised scores weighted per embedding
provider, or reciprocal rank). In every mode a result's `score` is the chunk's clamped cosine
with the query, and the answer mode rests on a calibrated `confidence`, never on a fused or
rerank score (see `hybrid_confidence`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import psycopg
from pgvector import Vector
from psycopg.rows import class_row

from core.config import Config
from core.db import db_errors_translated
from embeddings import EmbeddingProvider
from knowledge.db_schema import index_connection
from retrieval import sql
from retrieval.filters import FilteredScope
from retrieval.fusion import (
    RRF_K,
    Fused,
    agreed_vector_weight,
    channel_agreement,
    convex_fuse,
    rrf_fuse,
)
from retrieval.lexical import LexicalHit, LexicalReport, lexical_search
from retrieval.rerank import RerankCandidate, rerank_safely
from retrieval.rerank.features import identifiers_found_share
from retrieval.signals import RefusalSignals, signals_measure
from retrieval.types import RetrievalRequest, SearchHit
from retrieval.vector import VectorHit, vector_path_choose, vector_search

# Weight of lexical evidence in the hybrid confidence (see hybrid_confidence), tuned with
# `rag eval --ablation` on eval/questions.yaml.
LEXICAL_CONFIDENCE_WEIGHT = 0.5


@dataclass
class Candidate:
    """One chunk on its way through the pipeline, with what each stage said about it."""

    chunk_id: int
    hit: SearchHit
    cosine: float | None = None
    vector_rank: int | None = None
    bm25: float | None = None
    lexical_rank: int | None = None
    matched_share: float | None = None
    fused_rank: int | None = None
    fused_score: float | None = None  # the fusion's score behind fused_rank (RAG_FUSION)
    rerank_rank: int | None = None
    rerank_score: float | None = None

    def explain(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "vector_rank": self.vector_rank,
                "cosine": self.cosine, "lexical_rank": self.lexical_rank, "bm25": self.bm25,
                "matched_share": self.matched_share, "fused_rank": self.fused_rank,
                "fused_score": self.fused_score, "rerank_rank": self.rerank_rank,
                "rerank_score": self.rerank_score}


@dataclass
class PipelineRun:
    """The final candidates, the confidence and what the explain output reports."""

    results: list[Candidate]
    confidence: float
    mode: str
    parameters: dict[str, Any]
    timings_ms: dict[str, float] = field(default_factory=dict)
    rerank: dict[str, Any] | None = None
    query: str = ""  # what `signals` measures coverage against
    # What went to a rerank server outside this machine (knowledge/outbound.py).
    outbound: tuple[dict[str, Any], ...] = ()

    @cached_property
    def signals(self) -> RefusalSignals:
        """The results' refusal signals (retrieval/signals.py), measured when first read: a
        caller ranking 100 deep for recall never pays for them."""
        return signals_measure(query=self.query, hits=[item.hit for item in self.results],
                               confidence=self.confidence)

    def explain(self) -> dict[str, Any]:
        return {"mode": self.mode, "parameters": self.parameters,
                "timings_ms": {stage: round(ms, 3) for stage, ms in self.timings_ms.items()},
                "rerank": self.rerank, "signals": self.signals.as_dict(),
                "results": [item.explain() for item in self.results]}


@dataclass
class ChannelHits:
    """Both channels' hits for one query, fetched once `width` deep, for a caller that ranks
    the same query several ways (`rag eval --beir`): a channel's first n hits at this width are
    exactly its hits at width n (both order ties by chunk id; for the vector channel with the
    exact scan, while an HNSW search may find more when asked for more), so every narrower run
    sees what it would have fetched itself. `cosines` caches the cosines of lexical-only
    chunks."""

    width: int
    vector: list[VectorHit]
    lexical: list[LexicalHit]
    cosines: dict[int, float] = field(default_factory=dict)


def channels_fetch(*, query: str, vector: Sequence[float], width: int, config: Config,
                   embedder: EmbeddingProvider,
                   knowledge_base_ids: Sequence[int]) -> ChannelHits:
    """Both channels' `width` best hits for `query`, for `pipeline_run(..., channels=...)`."""
    return ChannelHits(
        width=width,
        vector=vector_search(vector=vector, limit=width, config=config, embedder=embedder,
                             knowledge_base_ids=knowledge_base_ids),
        lexical=lexical_search(query=query, limit=width, knowledge_base_ids=knowledge_base_ids))


class PipelineClock:
    """Milliseconds per stage of one search (a stage run twice, as on a replica's retry, adds)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def stage(self, name: str, started: float) -> None:
        self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - started) * 1000


def pipeline_clock() -> PipelineClock:
    """A stage timer for one request (the embedding is timed by the caller)."""
    return PipelineClock()


@dataclass(frozen=True, slots=True)
class _DistanceRow:
    chunk_id: int
    distance: float | None


def pipeline_run(request: RetrievalRequest, *, vector: Sequence[float], config: Config,
                 embedder: EmbeddingProvider, admitted: FilteredScope | None = None,
                 clock: PipelineClock | None = None,
                 channels: ChannelHits | None = None) -> PipelineRun:
    """Candidates for the request's query (already embedded as `vector`) through the stages
    of its mode (RAG_RETRIEVAL when it names none), its top_k (else RAG_TOP_K) unchecked, from
    the chunks of its scope's knowledge bases only (each channel filters in its SQL), and with
    `admitted` (its filters resolved) only from those documents; with `channels`, from those
    prefetched hits instead of new channel queries."""
    query, knowledge_base_ids, explain = (request.query, request.scope.knowledge_base_ids,
                                          request.explain)
    top_k = request.top_k if request.top_k is not None else config.rag_top_k
    mode = request.mode or config.rag_retrieval
    clock = clock or PipelineClock()
    reranking = mode != "vector" and config.rag_rerank != "none"
    # Every channel feeds RAG_CANDIDATES into fusion or rerank; a lone channel without rerank
    # needs only top_k.
    width = config.rag_candidates if (mode == "hybrid" or reranking) else top_k
    width = max(width, top_k)
    if channels is not None and channels.width < width:
        raise ValueError(f"prefetched channels are {channels.width} deep; this run needs {width}")
    candidates: dict[int, Candidate] = {}
    rankings: dict[str, list[int]] = {}
    vector_report: dict[str, Any] = {}
    if mode in ("vector", "hybrid"):
        started = time.perf_counter()
        hits = (channels.vector[:width] if channels is not None else
                vector_search(vector=vector, limit=width, config=config, embedder=embedder,
                              knowledge_base_ids=knowledge_base_ids, scope=admitted,
                              report=vector_report))
        clock.stage("vector", started)
        rankings["vector"] = [hit.chunk_id for hit in hits]
        for hit in hits:
            _from_vector(candidates, hit)
    report: LexicalReport | None = None
    if mode in ("lexical", "hybrid"):
        started = time.perf_counter()
        report = LexicalReport() if channels is None else None
        lexical = (channels.lexical[:width] if channels is not None else
                   lexical_search(query=query, limit=width,
                                  knowledge_base_ids=knowledge_base_ids, report=report,
                                  scope=admitted))
        clock.stage("lexical", started)
        rankings["lexical"] = [hit.chunk_id for hit in lexical]
        for match in lexical:
            _from_lexical(candidates, match)
    weights: dict[str, float] | None = None
    if mode == "vector":
        ordered = [candidates[chunk_id] for chunk_id in rankings["vector"]]
    else:
        started = time.perf_counter()
        _cosines_fill([item for item in candidates.values() if item.cosine is None],
                      vector=vector, embedder=embedder,
                      cache=channels.cosines if channels is not None else None)
        weights = fusion_weights(mode=mode, config=config, rankings=rankings)
        for fused in _fused(candidates=candidates, rankings=rankings, weights=weights,
                            config=config):
            candidates[fused.chunk_id].fused_rank = fused.rank
            candidates[fused.chunk_id].fused_score = fused.score
        ordered = sorted(candidates.values(), key=_fused_rank)
        clock.stage("fuse", started)
    rerank_explain = None
    rerank_sent: tuple[dict[str, Any], ...] = ()
    if reranking and ordered:
        started = time.perf_counter()
        ordered, rerank_explain, rerank_sent = _reranked(query=query, ordered=ordered,
                                                         config=config)
        clock.stage("rerank", started)
    results = ordered[:top_k]
    if mode == "vector":
        confidence = results[0].hit.score if results else 0.0
    else:
        confidence = hybrid_confidence(results=results, query=query)
    parameters: dict[str, Any] = {}
    if explain:
        parameters = {"top_k": top_k, "candidates": width,
                      "rerank": config.rag_rerank if reranking else "none",
                      **_vector_path(config=config, embedder=embedder, mode=mode),
                      "rrf_k": RRF_K,
                      "fusion": config.rag_fusion if mode != "vector" else None,
                      "fusion_weights": (weights if mode == "hybrid"
                                         and config.rag_fusion == "convex" else None),
                      # Where each channel's candidates came from (index/search.py): the
                      # search index, or SQL alone and why.
                      "search_index": {
                          "vector": vector_report.get("search_index"),
                          "lexical": report.index if report is not None else None},
                      # How much of the impact-ordered index the lexical channel read.
                      "lexical": ({"runs": report.levels, "cells_read": report.cells_read,
                                   "cells_total": report.cells_total,
                                   "combinations": report.combinations,
                                   "chunks_scored": report.scored,
                                   "chunks_scored_total": report.scored_total}
                                  if report is not None else None)}
    return PipelineRun(results=results, confidence=confidence, mode=mode, parameters=parameters,
                       timings_ms=clock.timings, rerank=rerank_explain, query=query,
                       outbound=rerank_sent)


def fusion_weights(*, mode: str, config: Config,
                   rankings: dict[str, list[int]]) -> dict[str, float]:
    """Each channel's weight in convex fusion for this query: the provider's vector weight
    (RAG_FUSION_VECTOR_WEIGHT overrides it), lowered where the two channels disagree."""
    if mode != "hybrid":
        return {mode: 1.0}
    vector_weight = agreed_vector_weight(weight=config.fusion_vector_weight,
                                         agreement=channel_agreement(rankings=rankings))
    return {"vector": vector_weight, "lexical": 1.0 - vector_weight}


def _fused_rank(item: Candidate) -> int:
    assert item.fused_rank is not None  # `_fused` ranks every candidate
    return item.fused_rank


def _fused(*, candidates: dict[int, Candidate], rankings: dict[str, list[int]],
           weights: dict[str, float], config: Config) -> list[Fused]:
    if config.rag_fusion == "rrf":
        return rrf_fuse(rankings=rankings)
    scores: dict[str, dict[int, float]] = {}
    if "vector" in rankings:
        # Every candidate has its cosine by now, the lexical channel's finds too: the vector
        # channel scores them all.
        scores["vector"] = {chunk_id: item.cosine or 0.0 for chunk_id, item in candidates.items()}
    if "lexical" in rankings:
        scores["lexical"] = {chunk_id: candidates[chunk_id].bm25 or 0.0
                             for chunk_id in rankings["lexical"]}
    return convex_fuse(scores=scores, weights=weights)


def hybrid_confidence(*, results: Sequence[Candidate], query: str) -> float:
    """The confidence of a lexical or hybrid result list, on the same 0..1 scale as vector's.

    The best cosine among the results, raised toward 1 only by evidence a wrong chunk cannot
    fake: the query's identifiers (`ERR-1042`, `read_cache_enabled`, `deploy/atlas-api`: words
    with a digit or one of -_./:#) found verbatim in a result. Their share, times
    LEXICAL_CONFIDENCE_WEIGHT, closes that part of the gap to 1. A question without such a word
    keeps exactly the cosine confidence, so out-of-domain questions are refused at least as
    reliably as in `vector` mode, and a short identifier query, whose vector says little, is
    still answered when a chunk holds the identifier."""
    if not results:
        return 0.0
    cosine = max((item.cosine or 0.0) for item in results)
    found = [identifiers_found_share(query=query, text=_matching_text(item)) for item in results]
    share = max((value for value in found if value is not None), default=0.0)
    return min(1.0, cosine + (1.0 - cosine) * share * LEXICAL_CONFIDENCE_WEIGHT)


def _matching_text(item: Candidate) -> str:
    return "\n".join((item.hit.relative_path, " ".join(item.hit.heading_path), item.hit.content))


def _from_vector(candidates: dict[int, Candidate], hit: VectorHit) -> None:
    candidates[hit.chunk_id] = Candidate(chunk_id=hit.chunk_id, hit=hit.search_hit(),
                                         cosine=hit.score, vector_rank=hit.rank)


def _from_lexical(candidates: dict[int, Candidate], hit: LexicalHit) -> None:
    candidate = candidates.get(hit.chunk_id)
    if candidate is None:
        # Its cosine comes later (_cosines_fill), when the channels have been fused.
        candidate = candidates[hit.chunk_id] = Candidate(
            chunk_id=hit.chunk_id, hit=SearchHit.from_row(hit, chunk_id=hit.chunk_id, score=0.0,
                                                          knowledge_base=hit.knowledge_base))
    candidate.bm25, candidate.lexical_rank = hit.score, hit.rank
    candidate.matched_share = hit.matched_share


def _cosines_fill(items: list[Candidate], *, vector: Sequence[float],
                  embedder: EmbeddingProvider, cache: dict[int, float] | None = None) -> None:
    """The cosine of chunks only the lexical channel found (0 when they have no vector yet)."""
    if cache is not None:
        for item in items:
            if item.chunk_id in cache:
                item.cosine = cache[item.chunk_id]
                item.hit = dataclasses.replace(item.hit, score=item.cosine)
        items = [item for item in items if item.chunk_id not in cache]
    if not items:
        return
    distances: dict[int, float] = {}
    if any(vector):
        with db_errors_translated():
            conn = index_connection()
            with psycopg.Cursor(conn, row_factory=class_row(_DistanceRow)) as cursor:
                cursor.execute(sql.CHUNK_DISTANCES, [
                    Vector(list(vector)), [item.chunk_id for item in items], embedder.provider,
                    embedder.model, embedder.dim])
                distances = {row.chunk_id: row.distance for row in cursor.fetchall()
                             if row.distance is not None and row.distance == row.distance}
    for item in items:
        distance = distances.get(item.chunk_id)
        item.cosine = max(0.0, min(1.0, 1.0 - distance)) if distance is not None else 0.0
        item.hit = dataclasses.replace(item.hit, score=item.cosine)
        if cache is not None:
            cache[item.chunk_id] = item.cosine


def _reranked(*, query: str, ordered: list[Candidate], config: Config
              ) -> tuple[list[Candidate], dict[str, Any], tuple[dict[str, Any], ...]]:
    by_id = {item.chunk_id: item for item in ordered}
    outcome = rerank_safely(query=query, config=config, candidates=[
        RerankCandidate(chunk_id=item.chunk_id, content=item.hit.content,
                        heading_path=item.hit.heading_path, relative_path=item.hit.relative_path,
                        fused_rank=item.fused_rank or position, cosine=item.cosine,
                        bm25=item.bm25, term_coverage=item.matched_share,
                        fused_score=item.fused_score, knowledge_base=item.hit.knowledge_base)
        for position, item in enumerate(ordered, start=1)])
    reranked = []
    for position, ranked in enumerate(outcome.ranked, start=1):
        item = by_id[ranked.candidate.chunk_id]
        if outcome.applied:
            item.rerank_rank, item.rerank_score = position, ranked.score
        reranked.append(item)
    return reranked, outcome.explain(), (outcome.outbound,) if outcome.outbound else ()


def _vector_path(*, config: Config, embedder: EmbeddingProvider, mode: str) -> dict[str, Any]:
    """The explain output's vector_index (the path) and hnsw_ef_search (what the index is
    searched with: the measured value when there is one; None on the exact scan)."""
    if mode == "lexical":
        return {"vector_index": None, "hnsw_ef_search": None}
    with db_errors_translated():
        plan = vector_path_choose(conn=index_connection(), config=config, embedder=embedder)
    return {"vector_index": plan.path, "hnsw_ef_search": plan.ef_search}
