"""Fusion: one ranking from several channels' rankings, keeping each rank.

`convex_fuse` (the default) adds each channel's scores, divided by the best score it returned
(both channels' scores start at a natural zero: a clamped cosine, BM25), times that channel's
weight. Dividing by the best keeps a channel's weak candidates weak, where min-max would stretch
its 50th candidate down to 0 and a nearly flat list up to 0..1; on the train splits of public
collections it fused better than min-max and z-scores (docs/benchmarks.md). Unlike reciprocal
rank fusion (`rrf_fuse`), it keeps how far apart the channel's scores are, and a weight lets a
channel that is rarely right (the fake embedder's vectors) move the order only where the other
is undecided: with the weight at 0 the order is exactly the other channel's, which is what makes
fusion never worse than its better channel when the weights fit the channels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

RRF_K = 60  # the constant of Cormack et al.; damps the weight of the very first ranks


@dataclass(frozen=True)
class Fused:
    """One chunk after fusion: its fused score and rank, and its rank in each channel."""

    chunk_id: int
    score: float
    rank: int
    channel_ranks: Mapping[str, int] = field(default_factory=dict)


def rrf_fuse(*, rankings: Mapping[str, Sequence[int]], k: int = RRF_K) -> list[Fused]:
    """Fuse channel rankings (chunk ids, best first) by sum of 1 / (k + rank).

    Ties go to the chunk with the better best rank in any channel, then to the smaller chunk id,
    so the order never depends on dictionary or set order."""
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for channel, chunk_ids in rankings.items():
        for rank, chunk_id in enumerate(dict.fromkeys(chunk_ids), start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(chunk_id, {})[channel] = rank
    ordered = sorted(scores, key=lambda chunk_id: (-scores[chunk_id],
                                                   min(ranks[chunk_id].values()), chunk_id))
    return [Fused(chunk_id=chunk_id, score=scores[chunk_id], rank=position,
                  channel_ranks=dict(ranks[chunk_id]))
            for position, chunk_id in enumerate(ordered, start=1)]


def convex_fuse(*, scores: Mapping[str, Mapping[int, float]],
                weights: Mapping[str, float]) -> list[Fused]:
    """Fuse channel scores (chunk id -> raw score >= 0, higher is better) by the weighted sum of
    each score over its channel's best; a chunk a channel did not score gets 0 from it.

    Ranks per channel follow its scores (ties by chunk id). Ties of the fused score go to the
    better best rank in any channel with a weight, then to the smaller chunk id: a channel
    weighted 0 has no say at all, so the order is exactly the other channel's."""
    fused: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    weighted_ranks: dict[int, list[int]] = {}
    for channel, channel_scores in scores.items():
        if not channel_scores:
            continue
        weight = weights.get(channel, 0.0)
        best = max(channel_scores.values())
        ordered = sorted(channel_scores, key=lambda chunk_id: (-channel_scores[chunk_id],
                                                               chunk_id))
        for rank, chunk_id in enumerate(ordered, start=1):
            # Nothing above zero: the channel has no opinion and adds nothing.
            normalised = max(0.0, channel_scores[chunk_id]) / best if best > 0 else 0.0
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * normalised
            ranks.setdefault(chunk_id, {})[channel] = rank
            if weight > 0:
                weighted_ranks.setdefault(chunk_id, []).append(rank)
    unranked = sum(len(channel_scores) for channel_scores in scores.values()) + 1
    ordered_ids = sorted(fused, key=lambda chunk_id: (
        -fused[chunk_id], min(weighted_ranks.get(chunk_id, [unranked])), chunk_id))
    return [Fused(chunk_id=chunk_id, score=fused[chunk_id], rank=position,
                  channel_ranks=dict(ranks[chunk_id]))
            for position, chunk_id in enumerate(ordered_ids, start=1)]


AGREEMENT_DEPTH = 10  # how deep channel_agreement compares the channels' rankings
# When the channels' first ten hardly overlap, one of them is lost, and on the public train
# splits it was the vector channel far more often (a query in a language the model cannot
# read, a rare term): the vector weight then counts half, and fully from half the top ten in
# common on (agreed_vector_weight). Fitted with the weights (docs/benchmarks.md).
AGREEMENT_FLOOR = 0.5


def channel_agreement(*, rankings: Mapping[str, Sequence[int]],
                      depth: int = AGREEMENT_DEPTH) -> float:
    """The share of the first `depth` chunks of the vector channel's ranking that the lexical
    channel also ranks among its first `depth` (0..1); 0 unless both channels ran."""
    vector, lexical = rankings.get("vector"), rankings.get("lexical")
    if not vector or not lexical:
        return 0.0
    return len(set(vector[:depth]) & set(lexical[:depth])) / depth


def agreed_vector_weight(*, weight: float, agreement: float) -> float:
    """The vector channel's weight for one query: `weight` times
    min(1, AGREEMENT_FLOOR + agreement)."""
    return weight * min(1.0, AGREEMENT_FLOOR + agreement)
