"""How the shipped fusion and rerank weights are fitted: pure functions over candidate tables.

A candidate table holds, per judged query, its hybrid candidates (the union of both channels'
RAG_CANDIDATES, as the pipeline fuses them) with the raw channel scores, the rerank signals and
the document each comes from, and the query's graded judgments. bench/fit_retrieval.py builds
tables from the train or dev splits of public BEIR collections and calls these functions; the
fitted numbers are then written into the code (embeddings/providers.py,
retrieval/rerank/features.py) with the table in docs/benchmarks.md. Nothing here runs when the
service answers a query.

- `fusion_fit`: the vector weight of convex fusion, by grid, maximising mean nDCG@10 with every
  collection weighing the same.
- `rerank_fit`: the weights of the linear `features` score, by coordinate ascent on mean
  nDCG@10 from seeded random starts: the same seed and tables give the same weights.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from retrieval.fusion import AGREEMENT_DEPTH, agreed_vector_weight

NDCG_DEPTH = 10
FUSION_GRID = tuple(round(step * 0.05, 2) for step in range(21))
RERANK_STEPS = (0.5, 0.2, 0.1, 0.05, 0.02)


@dataclass(frozen=True)
class TableCandidate:
    """One candidate of one query: its document, raw channel scores and rerank signals."""

    doc_id: str
    cosine: float  # every candidate has one (0 without a vector)
    bm25: float | None  # None: not among the lexical channel's candidates
    signals: Mapping[str, float]  # name -> value in 0..1 (retrieval/rerank/features.py)
    vector_rank: int | None = None  # rank in each channel's own list; None: not in it
    lexical_rank: int | None = None


@dataclass(frozen=True)
class TableQuery:
    judged: Mapping[str, int]  # document id -> grade (> 0 relevant)
    candidates: Sequence[TableCandidate]

    def agreement(self) -> float:
        """retrieval/fusion.py channel_agreement: the share of the vector channel's first ten
        that the lexical channel ranks among its first ten (every chunk in both is among the
        fused candidates, which rank high in both channels)."""
        depth = AGREEMENT_DEPTH
        return sum(1 for candidate in self.candidates
                   if candidate.vector_rank is not None and candidate.vector_rank <= depth
                   and candidate.lexical_rank is not None
                   and candidate.lexical_rank <= depth) / depth


def ndcg_at_10(*, ranking: Sequence[str], judged: Mapping[str, int]) -> float:
    """Graded nDCG@10 of a ranking of document ids (a document counts at its first rank)."""
    seen: set[str] = set()
    dcg = 0.0
    position = 0
    for doc_id in ranking:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        position += 1
        if position > NDCG_DEPTH:
            break
        dcg += judged.get(doc_id, 0) / math.log2(position + 1)
    ideal = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(
        sorted((grade for grade in judged.values() if grade > 0), reverse=True)[:NDCG_DEPTH],
        start=1))
    return dcg / ideal if ideal else 0.0


def convex_scores(query: TableQuery, *, vector_weight: float) -> list[float]:
    """The convex fusion score of each candidate, as the pipeline computes it: the vector
    weight lowered by the channels' disagreement (pipeline.fusion_weights), each score over its
    channel's best (fusion.convex_fuse), 0 from the lexical channel without BM25."""
    vector_weight = agreed_vector_weight(weight=vector_weight, agreement=query.agreement())
    best_cosine = max((candidate.cosine for candidate in query.candidates), default=0.0)
    best_bm25 = max((candidate.bm25 for candidate in query.candidates
                     if candidate.bm25 is not None), default=0.0)
    scores = []
    for candidate in query.candidates:
        vector = max(0.0, candidate.cosine) / best_cosine if best_cosine > 0 else 0.0
        lexical = (max(0.0, candidate.bm25) / best_bm25
                   if candidate.bm25 is not None and best_bm25 > 0 else 0.0)
        scores.append(vector_weight * vector + (1 - vector_weight) * lexical)
    return scores


def ranked_docs(query: TableQuery, scores: Sequence[float]) -> list[str]:
    order = sorted(range(len(scores)), key=lambda index: (-scores[index], index))
    return [query.candidates[index].doc_id for index in order]


def tables_quality(tables: Mapping[str, Sequence[TableQuery]],
                   score: Callable[[TableQuery], Sequence[float]]) -> dict[str, float]:
    """Mean nDCG@10 per collection when each query's candidates are ordered by `score`."""
    quality = {}
    for name, queries in tables.items():
        total = sum(ndcg_at_10(ranking=ranked_docs(query, score(query)), judged=query.judged)
                    for query in queries)
        quality[name] = total / len(queries) if queries else 0.0
    return quality


def fusion_quality(tables: Mapping[str, Sequence[TableQuery]], *,
                   vector_weight: float) -> dict[str, float]:
    """Mean nDCG@10 of convex fusion per collection at this vector weight."""
    return tables_quality(tables, lambda query: convex_scores(query,
                                                              vector_weight=vector_weight))


def fusion_fit(tables: Mapping[str, Sequence[TableQuery]]) -> tuple[float, dict[str, float]]:
    """The grid vector weight with the best mean nDCG@10 over the collections (ties: the
    smaller weight), and its per-collection nDCG@10."""
    best: tuple[float, float, dict[str, float]] | None = None
    for weight in FUSION_GRID:
        quality = fusion_quality(tables, vector_weight=weight)
        mean = sum(quality.values()) / len(quality)
        if best is None or mean > best[0] + 1e-12:
            best = (mean, weight, quality)
    assert best is not None
    return best[1], best[2]


def rerank_features(query: TableQuery, *, vector_weight: float) -> list[dict[str, float]]:
    """Per candidate: its rerank signals plus `fused`, the convex score over the query's best."""
    fused = convex_scores(query, vector_weight=vector_weight)
    top = max(fused, default=0.0)
    return [{**candidate.signals, "fused": (score / top) if top > 0 else 0.0}
            for candidate, score in zip(query.candidates, fused, strict=True)]


def rerank_quality(tables: Mapping[str, Sequence[TableQuery]], weights: Mapping[str, float], *,
                   vector_weight: float) -> dict[str, float]:
    """Mean nDCG@10 per collection when the candidates are ordered by the weighted signals."""
    def score(query: TableQuery) -> list[float]:
        return [sum(weights.get(signal, 0.0) * value for signal, value in row.items())
                for row in rerank_features(query, vector_weight=vector_weight)]

    return tables_quality(tables, score)


class _Matrices:
    """Each collection's queries as numpy arrays, so one weight vector scores them all at once:
    per query its signal matrix, its candidates' documents, its judgments and its ideal DCG."""

    def __init__(self, tables: Mapping[str, Sequence[TableQuery]], *, vector_weight: float,
                 signals: Sequence[str]) -> None:
        import numpy

        self.numpy = numpy
        self.collections = []
        discounts = 1 / numpy.log2(numpy.arange(2, NDCG_DEPTH + 2))
        self.discounts = discounts
        for name, queries in tables.items():
            entries = []
            for query in queries:
                rows = rerank_features(query, vector_weight=vector_weight)
                matrix = numpy.array([[row.get(signal, 0.0) for signal in signals]
                                      for row in rows], dtype=float).reshape(len(rows),
                                                                             len(signals))
                docs = [candidate.doc_id for candidate in query.candidates]
                ideal = sum(grade * discounts[rank] for rank, grade in enumerate(
                    sorted((g for g in query.judged.values() if g > 0),
                           reverse=True)[:NDCG_DEPTH]))
                entries.append((matrix, docs, query.judged, ideal))
            self.collections.append((name, entries))

    def quality(self, weights: Sequence[float]) -> dict[str, float]:
        vector = self.numpy.asarray(weights, dtype=float)
        result = {}
        for name, entries in self.collections:
            total = 0.0
            for matrix, docs, judged, ideal in entries:
                if not ideal or not docs:
                    continue
                scores = matrix @ vector
                # Stable order: ties keep the candidates' fused order, as ranked_docs does.
                order = self.numpy.argsort(-scores, kind="stable")
                seen: set[str] = set()
                dcg = 0.0
                for index in order:
                    doc_id = docs[index]
                    if doc_id in seen:
                        continue
                    seen.add(doc_id)
                    if len(seen) > NDCG_DEPTH:
                        break
                    dcg += judged.get(doc_id, 0) * self.discounts[len(seen) - 1]
                total += dcg / ideal
            result[name] = total / len(entries) if entries else 0.0
        return result


def rerank_fit(tables: Mapping[str, Sequence[TableQuery]], *, vector_weight: float,
               signals: Sequence[str], seed: int, starts: int = 4,
               rounds: int = 3) -> tuple[dict[str, float], dict[str, float]]:
    """Non-negative weights of `signals` summing to 1 that maximise mean nDCG@10 over the
    collections: coordinate ascent (move weight between two signals by each step size) from
    the fusion alone and from `starts` random points drawn with `seed`. Returns the weights
    (rounded to 0.01) and their per-collection nDCG@10. Needs numpy (a test and benchmark
    dependency)."""
    matrices = _Matrices(tables, vector_weight=vector_weight, signals=signals)

    def mean_quality(weights: Mapping[str, float]) -> float:
        quality = matrices.quality([weights[signal] for signal in signals])
        return sum(quality.values()) / len(quality)

    generator = random.Random(seed)
    origins = [{signal: 1.0 if signal == "fused" else 0.0 for signal in signals}]
    for _ in range(starts):
        draws = [generator.random() for _ in signals]
        origins.append({signal: draw / sum(draws) for signal, draw in zip(signals, draws,
                                                                          strict=True)})
    best_weights, best_value = origins[0], mean_quality(origins[0])
    for origin in origins:
        weights, value = dict(origin), mean_quality(origin)
        for _ in range(rounds):
            improved = False
            for step in RERANK_STEPS:
                for source in signals:
                    for target in signals:
                        if source == target or weights[source] < step - 1e-9:
                            continue
                        trial = dict(weights)
                        trial[source] -= step
                        trial[target] += step
                        trial_value = mean_quality(trial)
                        if trial_value > value + 1e-9:
                            weights, value, improved = trial, trial_value, True
            if not improved:
                break
        if value > best_value + 1e-9:
            best_weights, best_value = weights, value
    rounded = {signal: round(max(0.0, weight), 2) for signal, weight in best_weights.items()}
    return rounded, matrices.quality([rounded[signal] for signal in signals])
