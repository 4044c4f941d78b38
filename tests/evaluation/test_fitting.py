"""The fitting of the fusion and rerank weights (evaluation/fitting.py) on synthetic tables:
the fusion grid finds the weight a table rewards, and the rerank fit is reproducible from its
seed and never ends below where it started."""

from __future__ import annotations

import random

import pytest

from evaluation.fitting import (
    TableCandidate,
    TableQuery,
    convex_scores,
    fusion_fit,
    fusion_quality,
    ndcg_at_10,
    rerank_fit,
    rerank_quality,
)

SIGNALS = ("fused", "coverage", "cosine")


def synthetic_tables(seed: int, *, vector_quality: float) -> dict[str, list[TableQuery]]:
    """Queries with 30 candidates each and one relevant document: BM25 finds it with noise,
    the cosine with more or less noise (vector_quality), coverage is a weaker hint."""
    generator = random.Random(seed)
    queries = []
    for _ in range(120):
        relevant = generator.randrange(30)
        candidates = []
        for index in range(30):
            hit = index == relevant
            candidates.append(TableCandidate(
                doc_id=f"d{index}",
                cosine=max(0.0, generator.gauss(0.5 + (vector_quality if hit else 0.0), 0.15)),
                bm25=max(0.0, generator.gauss(6.0 if hit else 3.0, 1.5)),
                signals={"coverage": min(1.0, max(0.0, generator.gauss(0.7 if hit else 0.4, 0.2))),
                         "cosine": 0.0}))
        queries.append(TableQuery(judged={f"d{relevant}": 1}, candidates=candidates))
    return {"synthetic": queries}


def test_ndcg_counts_a_document_once_at_its_first_rank():
    assert ndcg_at_10(ranking=["a", "b"], judged={"b": 1}) == pytest.approx(1 / 1.5849625)
    assert ndcg_at_10(ranking=["b", "b", "a"], judged={"a": 1, "b": 1}) == pytest.approx(1.0)


def test_convex_scores_match_the_service_fusion_on_one_query():
    query = TableQuery(judged={}, candidates=[
        TableCandidate("a", cosine=0.9, bm25=None, signals={}, vector_rank=1),
        TableCandidate("b", cosine=0.5, bm25=10.0, signals={}, vector_rank=2, lexical_rank=1),
        TableCandidate("c", cosine=0.1, bm25=2.0, signals={}, vector_rank=3, lexical_rank=2)])
    assert query.agreement() == 0.2  # b and c in both first tens
    weight = 0.25 * 0.7  # agreed_vector_weight: min(1, 0.5 + 0.2)
    assert convex_scores(query, vector_weight=0.25) == pytest.approx(
        [weight, weight * 0.5 / 0.9 + (1 - weight), weight * 0.1 / 0.9 + (1 - weight) * 0.2])


def test_fusion_fit_weighs_a_useless_vector_channel_at_zero_and_a_good_one_above():
    weak, _ = fusion_fit(synthetic_tables(1, vector_quality=0.0))
    strong, quality = fusion_fit(synthetic_tables(1, vector_quality=0.4))
    assert weak == 0.0 and strong >= 0.3
    tables = synthetic_tables(1, vector_quality=0.4)
    assert quality["synthetic"] > fusion_quality(tables, vector_weight=0.0)["synthetic"]


def test_rerank_fit_is_reproducible_from_its_seed_and_not_worse_than_fusion_alone():
    tables = synthetic_tables(2, vector_quality=0.2)
    first = rerank_fit(tables, vector_weight=0.3, signals=SIGNALS, seed=13, starts=2, rounds=2)
    again = rerank_fit(tables, vector_weight=0.3, signals=SIGNALS, seed=13, starts=2, rounds=2)
    assert first == again
    weights, quality = first
    assert sum(weights.values()) == pytest.approx(1.0, abs=0.02)
    fused_only = rerank_quality(tables, {"fused": 1.0}, vector_weight=0.3)["synthetic"]
    assert quality["synthetic"] >= fused_only - 0.005
    assert rerank_quality(tables, weights, vector_weight=0.3)["synthetic"] \
        == pytest.approx(quality["synthetic"])
