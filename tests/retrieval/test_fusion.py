"""Reciprocal rank fusion against hand-computed scores."""

from __future__ import annotations

import pytest

from retrieval.fusion import RRF_K, rrf_fuse


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
