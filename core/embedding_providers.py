"""The embedding providers that exist, and the settings each one implies.

This is the configuration's half of the one provider table: what validation and the settings'
defaults read (which names are valid, a provider's fixed model, the defaults of
RAG_MIN_SIMILARITY, RAG_FUSION_VECTOR_WEIGHT and RAG_RERANK, whether it runs a model in this
process). embeddings/providers.py extends every row with how to build and check the provider;
a row missing there fails at import, so the two halves cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

FAKE_MODEL = "fake-lexical-v1"


@dataclass(frozen=True, kw_only=True)
class EmbeddingProviderFacts:
    """One embedding provider's fixed facts."""

    name: str
    fixed_model: str | None  # None: EMBEDDING_MODEL names a model folder or package
    default_threshold: float  # RAG_MIN_SIMILARITY when that is unset, calibrated by `rag eval`
    # True when a model runs in this process: `rag serve` then starts one worker (each worker
    # would load its own copy) and `rag embeddings warmup` has something to load.
    loads_model: bool
    # The vector channel's weight in convex fusion (RAG_FUSION_VECTOR_WEIGHT when unset), fitted
    # on the train splits of public collections (docs/benchmarks.md): a weak semantic channel
    # (the fake embedder) gets little, a real model more.
    # (local-qwen3 was not measured here: it takes sentence-transformers' weight.)
    fusion_vector_weight: float = 0.7
    # RAG_RERANK when that is unset: `features` only where the fitted reranker improved nDCG@10
    # over the fusion alone on every public collection measured with this provider; it did not
    # for either provider measured (docs/benchmarks.md), so every provider defaults to `none`.
    default_rerank: str = "none"


# Mutable so that a test can add a row (with its behaviour in embeddings/providers.py too).
EMBEDDING_PROVIDERS: dict[str, EmbeddingProviderFacts] = {facts.name: facts for facts in (
    EmbeddingProviderFacts(name="fake", fixed_model=FAKE_MODEL, default_threshold=0.20,
                           fusion_vector_weight=0.25, loads_model=False),
    EmbeddingProviderFacts(name="local-qwen3", fixed_model="Qwen/Qwen3-Embedding-0.6B",
                           default_threshold=0.35, fusion_vector_weight=0.7, loads_model=True),
    EmbeddingProviderFacts(name="sentence-transformers", fixed_model=None,
                           default_threshold=0.35, fusion_vector_weight=0.7, loads_model=True),
    # A server's model, not measured here: sentence-transformers' threshold and weight.
    EmbeddingProviderFacts(name="openai-compatible", fixed_model=None, default_threshold=0.35,
                           fusion_vector_weight=0.7, loads_model=False),
)}
