"""Reranking that never loses the answer: on a rerank failure, the fused order as it was.

Reranking is an optional refinement of an order the pipeline already has. A reranker that
times out, is rate limited, rejects the key, answers garbage, cannot load its model or refuses
an oversized request costs the request its refinement, not its answer: `rerank_safely` logs a
warning and returns the fused order unchanged with the failure recorded for the explain output.

Missing settings (RERANK_BASE_URL, RERANK_MODEL, RERANK_API_KEY for the configured provider) are
different: they fail the request with `rerank_config_missing` (503, naming the variables).
They are the same on every request, so a fallback would hide them for good (every answer
quietly unreranked, evaluation numbers measuring the wrong pipeline) behind a log line; they are
known before any work is done, so the pipeline can check them first (`rerank_config_check`,
also before the first byte of a stream); and /health can show them (`reranker_status`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.config import Config
from embeddings.outbound import OutboundRefused, outbound_record
from knowledge.outbound import outbound_check
from retrieval.rerank.base import RerankCandidate, RerankedCandidate, unscored
from retrieval.rerank.cross_encoder import RerankModelUnavailable, RerankRuntimeMissing
from retrieval.rerank.limits import RerankRequestInvalid
from retrieval.rerank.providers import rerank, rerank_config_check, reranker_spec
from retrieval.rerank.remote import (
    RerankAuthFailed,
    RerankRateLimited,
    RerankTimeout,
    RerankUnavailable,
    RerankUpstreamError,
)

logger = logging.getLogger("localrag.rerank")

# Every rerank_* error except rerank_config_missing; a test keeps this in step with ERROR_TABLE.
RERANK_FAILURES = (RerankModelUnavailable, RerankRuntimeMissing, RerankRequestInvalid,
                   RerankTimeout, RerankAuthFailed, RerankRateLimited, RerankUpstreamError,
                   RerankUnavailable)


@dataclass(frozen=True)
class RerankFailure:
    """Why the rerank did not apply."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RerankOutcome:
    """The order to use, which provider made it, and whether it failed."""

    provider: str
    ranked: list[RerankedCandidate]
    seconds: float
    failure: RerankFailure | None = None
    # What went to a rerank server outside this machine (knowledge/outbound.py); None if none.
    outbound: dict[str, Any] | None = None

    @property
    def applied(self) -> bool:
        """Whether a reranker changed (or confirmed) the fused order."""
        return self.failure is None and self.provider != "none"

    def explain(self) -> dict[str, Any]:
        """What the explain output says about the rerank stage."""
        failure = self.failure
        return {
            "provider": self.provider,
            "applied": self.applied,
            "scored": sum(ranked.score is not None for ranked in self.ranked),
            "unscored": sum(ranked.score is None for ranked in self.ranked),
            "truncated": sum(ranked.truncated for ranked in self.ranked),
            "seconds": round(self.seconds, 3),
            "failure": None if failure is None else {"code": failure.code,
                                                     "message": failure.message,
                                                     "details": failure.details},
        }


def rerank_safely(*, query: str, candidates: Sequence[RerankCandidate],
                  config: Config) -> RerankOutcome:
    """The candidates reranked by RAG_RERANK, or on a rerank failure the fused order unchanged
    with the failure recorded; missing settings raise RerankConfigMissing."""
    rerank_config_check(config=config)
    started = time.perf_counter()
    remote = "RERANK_BASE_URL" in reranker_spec(config=config).settings
    try:
        if remote:
            # A local-only base's candidates never reach a rerank server outside this
            # machine: the request keeps its fused order, with the refusal in the explain.
            outbound_check(config=config, url=config.rerank_base_url, what="the rerank",
                           knowledge_bases=[candidate.knowledge_base for candidate in candidates
                                            if candidate.knowledge_base])
        ranked = rerank(query=query, candidates=candidates, config=config)
    except (*RERANK_FAILURES, OutboundRefused) as exc:
        logger.warning("rerank with %s failed, keeping the fused order: %s: %s",
                       config.rag_rerank, exc.code, exc.message)
        return RerankOutcome(provider=config.rag_rerank, ranked=unscored(candidates),
                             seconds=time.perf_counter() - started,
                             failure=RerankFailure(code=exc.code, message=exc.message,
                                                   details=dict(exc.details)))
    sent = outbound_record(
        config=config, url=config.rerank_base_url, what="rerank",
        texts=[query, *(candidate.content for candidate in candidates)],
        knowledge_bases=[candidate.knowledge_base for candidate in candidates
                         if candidate.knowledge_base],
        chunk_ids=[candidate.chunk_id for candidate in candidates]) if remote else None
    return RerankOutcome(provider=config.rag_rerank, ranked=ranked,
                         seconds=time.perf_counter() - started, outbound=sent)
