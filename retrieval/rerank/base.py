"""What every reranker shares: the candidate it reads, the ranked candidate it returns, the
reranker interface, and the orderings built from scores.

A candidate says nothing about how it was found: the vector channel, the lexical channel and
their fusion fill in what they know (`cosine`, `bm25`, `term_coverage`, `fused_rank`) and leave
the rest None. Every reranker returns every candidate it was given, best first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from embeddings import ChunkText
from embeddings.local import document_text


@dataclass(frozen=True, slots=True)
class RerankCandidate:
    """One chunk to rerank, with what the earlier stages know about it."""

    chunk_id: int
    content: str
    heading_path: Sequence[str]
    relative_path: str
    fused_rank: int  # 1 for the best candidate of the fused order
    cosine: float | None = None  # with the query; None when only the lexical channel found it
    bm25: float | None = None  # None when the lexical channel did not find it
    term_coverage: float | None = None  # share of the query's terms matched, 0..1
    fused_score: float | None = None  # the fusion's score behind fused_rank; None: not fused
    knowledge_base: str | None = None  # its base's slug: the outbound policy's subject


@dataclass(frozen=True, slots=True)
class RerankedCandidate:
    """A candidate in its new place. `score` is the reranker's, higher is better; None when the
    reranker did not score it (the `none` provider, a fallback, or a candidate left out of a
    remote request by the provider's limits): such candidates keep their fused order, after
    every scored one. `truncated`: the reranker read only the start of the chunk."""

    candidate: RerankCandidate
    score: float | None
    truncated: bool = False
    # Per-feature values for the explain output (the `features` provider fills them).
    signals: Mapping[str, float] = field(default_factory=dict)


class Reranker(Protocol):
    """What the pipeline needs from a reranker."""

    name: str

    def rerank(self, *, query: str,
               candidates: Sequence[RerankCandidate]) -> list[RerankedCandidate]: ...


def fused_order(candidates: Sequence[RerankCandidate]) -> list[RerankCandidate]:
    """The candidates by fused rank (chunk id breaks a tie, so the order is always the same)."""
    return sorted(candidates, key=lambda candidate: (candidate.fused_rank, candidate.chunk_id))


def unscored(candidates: Sequence[RerankCandidate]) -> list[RerankedCandidate]:
    """The fused order unchanged, without scores."""
    return [RerankedCandidate(candidate=candidate, score=None)
            for candidate in fused_order(candidates)]


def ranked_by_score(scored: Sequence[RerankedCandidate],
                    rest: Sequence[RerankCandidate] = ()) -> list[RerankedCandidate]:
    """The scored candidates best first (a tie keeps the fused order), then `rest` unscored in
    fused order."""
    ordered = sorted(scored, key=lambda ranked: (-(ranked.score or 0.0),
                                                 ranked.candidate.fused_rank,
                                                 ranked.candidate.chunk_id))
    return [*ordered, *unscored(rest)]


def candidate_text(candidate: RerankCandidate) -> str:
    """What a model reads of a candidate: the same text the local embedders read of a chunk
    (its note and section, then its content)."""
    return document_text(ChunkText(content=candidate.content,
                                   heading_path=tuple(candidate.heading_path),
                                   relative_path=candidate.relative_path))
