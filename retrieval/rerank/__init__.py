"""The rerank stage: the candidate and result types (base), the one provider table with dispatch
and status (providers), the providers (features, cross_encoder, remote with its request limits
in limits) and the fallback the pipeline calls (fallback.rerank_safely)."""

from retrieval.rerank.base import RerankCandidate, RerankedCandidate, Reranker
from retrieval.rerank.fallback import (
    RERANK_FAILURES,
    RerankFailure,
    RerankOutcome,
    rerank_safely,
)
from retrieval.rerank.features import (
    FEATURE_WEIGHTS,
    FeatureSignals,
    FeatureWeights,
    features_score,
    features_signals,
)
from retrieval.rerank.providers import (
    RERANKERS,
    RerankConfigMissing,
    RerankerSpec,
    get_reranker,
    rerank,
    rerank_config_check,
    reranker_spec,
    reranker_status,
)

__all__ = ["FEATURE_WEIGHTS", "RERANKERS", "RERANK_FAILURES", "FeatureSignals", "FeatureWeights",
           "RerankCandidate", "RerankConfigMissing", "RerankFailure", "RerankOutcome",
           "RerankedCandidate", "Reranker", "RerankerSpec", "features_score", "features_signals",
           "get_reranker", "rerank", "rerank_config_check", "rerank_safely", "reranker_spec",
           "reranker_status"]
