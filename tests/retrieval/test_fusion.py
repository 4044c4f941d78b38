"""Reciprocal rank fusion and convex fusion against hand-computed scores, and the never-worse
property of weighted fusion on synthetic channels."""

from __future__ import annotations

import math
import random

import pytest

from retrieval.fusion import (
    RRF_K,
    agreed_vector_weight,
    channel_agreement,
    convex_fuse,
    rrf_fuse,
)


def test_scores_are_the_sum_of_reciprocal_ranks():
    fused = rrf_fuse(rankings={"vector": [10, 20, 30], "lexical": [30, 40]})
    by_id = {item.chunk_id: item for item in fused}
    assert by_id[30].score == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert by_id[10].score == pytest.approx(1 / (RRF_K + 1))
    assert by_id[40].score == pytest.approx(1 / (RRF_K + 2))
    assert [item.chunk_id for item in fused] == [30, 10, 20, 40]
    assert [item.rank for item in fused] == [1, 2, 3, 4]
    assert by_id[30].channel_ranks == {"vector": 3, "lexical": 1}
    assert by_id[40].channel_ranks == {"lexical": 2}


def test_ties_go_to_the_better_best_rank_then_the_smaller_id():
    # 7 is first in one channel, 5 second in both: 2/(k+2) > 1/(k+1), so 5 wins on score;
    # 8 and 9 tie exactly (rank 2 in one channel each) and fall back to the id.
    fused = rrf_fuse(rankings={"a": [7, 5, 9], "b": [6, 5, 8]})
    assert [item.chunk_id for item in fused][:3] == [5, 6, 7]
    assert [item.chunk_id for item in fused][3:] == [8, 9]


def test_duplicates_in_one_channel_count_once_and_empty_channels_are_fine():
    fused = rrf_fuse(rankings={"vector": [1, 1, 2], "lexical": []})
    assert [(item.chunk_id, item.channel_ranks) for item in fused] == [
        (1, {"vector": 1}), (2, {"vector": 2})]
    assert rrf_fuse(rankings={}) == []


# Convex fusion ---------------------------------------------------------------------------------

def test_convex_scores_are_weighted_scores_over_each_channels_best():
    fused = convex_fuse(scores={"vector": {1: 0.8, 2: 0.4, 3: 0.2},
                                "lexical": {3: 12.0, 4: 3.0, 2: 6.0}},
                        weights={"vector": 0.25, "lexical": 0.75})
    by_id = {item.chunk_id: item for item in fused}
    assert by_id[1].score == pytest.approx(0.25 * 1.0)
    assert by_id[2].score == pytest.approx(0.25 * 0.5 + 0.75 * 0.5)
    assert by_id[3].score == pytest.approx(0.25 * 0.25 + 0.75 * 1.0)
    assert by_id[4].score == pytest.approx(0.75 * 0.25)
    assert [item.chunk_id for item in fused] == [3, 2, 1, 4]
    assert by_id[2].channel_ranks == {"vector": 2, "lexical": 2}
    assert by_id[4].channel_ranks == {"lexical": 3}


def test_convex_weight_zero_keeps_the_other_channels_order_exactly():
    lexical = {chunk_id: float(100 - chunk_id * 3 % 17) for chunk_id in range(1, 40)}
    vector = {chunk_id: (chunk_id * 7 % 13) / 13 for chunk_id in range(20, 60)}
    fused = convex_fuse(scores={"vector": vector, "lexical": lexical},
                        weights={"vector": 0.0, "lexical": 1.0})
    expected = sorted(lexical, key=lambda chunk_id: (-lexical[chunk_id], chunk_id))
    assert [item.chunk_id for item in fused][:len(expected)] == expected


def test_a_channel_with_nothing_above_zero_adds_nothing():
    fused = convex_fuse(scores={"vector": {5: 0.0, 6: 0.0}, "lexical": {5: 2.0, 6: 4.0}},
                        weights={"vector": 0.5, "lexical": 0.5})
    assert [(item.chunk_id, item.score) for item in fused] == [(6, 0.5), (5, 0.25)]


def _ndcg(ranking: list[int], relevant: set[int]) -> float:
    gain = sum(1 / math.log2(position + 1)
               for position, chunk_id in enumerate(ranking[:10], start=1) if chunk_id in relevant)
    ideal = sum(1 / math.log2(position + 1) for position in range(1, min(10, len(relevant)) + 1))
    return gain / ideal


@pytest.mark.parametrize("noise_channel", ["vector", "lexical"])
def test_fusion_weighted_to_the_informative_channel_is_never_worse_than_it(noise_channel):
    """Synthetic queries: one channel scores the relevant chunks higher (BM25-like scores from a
    natural zero, with noise), the other is pure noise. With a small weight on the noise
    channel, convex fusion stays within 0.005 nDCG@10 of the informative channel on average,
    where RRF, which cannot weigh a channel down, loses clearly."""
    generator = random.Random(7)
    informative = "lexical" if noise_channel == "vector" else "vector"
    alone, convex, rrf = [], [], []
    for _ in range(300):
        relevant = set(generator.sample(range(200), 3))
        good = {chunk_id: generator.expovariate(1.0) + (3.0 if chunk_id in relevant else 0.0)
                for chunk_id in range(200)}
        noise = {chunk_id: generator.random() for chunk_id in range(200)}
        good_top = dict(sorted(good.items(), key=lambda item: -item[1])[:50])
        noise_top = dict(sorted(noise.items(), key=lambda item: -item[1])[:50])
        scores = {informative: good_top, noise_channel: noise_top}
        alone.append(_ndcg(sorted(good_top, key=lambda chunk_id: -good_top[chunk_id]), relevant))
        fused = convex_fuse(scores=scores, weights={noise_channel: 0.05, informative: 0.95})
        convex.append(_ndcg([item.chunk_id for item in fused], relevant))
        ranked = rrf_fuse(rankings={name: sorted(top, key=lambda chunk_id: -top[chunk_id])
                                    for name, top in scores.items()})
        rrf.append(_ndcg([item.chunk_id for item in ranked], relevant))
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    assert mean(convex) >= mean(alone) - 0.005
    assert mean(rrf) < mean(alone) - 0.05


def test_agreement_is_the_shared_share_of_the_channels_first_ten():
    vector = list(range(1, 21))
    lexical = [3, 30, 1, 31, 9, 32, 33, 34, 35, 36, 2]  # 3, 1 and 9 in both first tens
    assert channel_agreement(rankings={"vector": vector, "lexical": lexical}) == 0.3
    assert channel_agreement(rankings={"vector": vector}) == 0.0
    assert channel_agreement(rankings={"vector": vector, "lexical": []}) == 0.0


def test_the_vector_weight_counts_half_without_agreement_and_fully_from_half_on():
    assert agreed_vector_weight(weight=0.6, agreement=0.0) == pytest.approx(0.3)
    assert agreed_vector_weight(weight=0.6, agreement=0.2) == pytest.approx(0.42)
    assert agreed_vector_weight(weight=0.6, agreement=0.5) == pytest.approx(0.6)
    assert agreed_vector_weight(weight=0.6, agreement=1.0) == pytest.approx(0.6)
