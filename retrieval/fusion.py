"""Reciprocal rank fusion: one ranking from several channels' rankings, keeping each rank."""

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
