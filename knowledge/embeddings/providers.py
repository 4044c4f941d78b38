"""The one table of embedding providers, and what reads it: dispatch, status, native size.

Configuration validation (core.config, through the project wiring), /health, `rag config`,
`rag serve`'s worker count and `rag embeddings warmup` all read `PROVIDERS`; adding a provider
means adding one row here. Building a local provider imports torch; nothing else here does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.config import EMBEDDING_DIM, Config, ConfigError, endpoint_origin
from knowledge.embeddings.base import EmbeddingProvider
from knowledge.embeddings.fake import FAKE_MODEL, FakeLexicalEmbedder
from knowledge.embeddings.local import (
    local_embedder,
    local_model_status,
    model_folder_dimension,
    model_folder_locate,
)


@dataclass(frozen=True)
class ProviderSpec:
    """One embedding provider: its fixed facts and how to build and check it."""

    name: str
    fixed_model: str | None  # None: EMBEDDING_MODEL names a model folder or package
    default_threshold: float  # RAG_MIN_SIMILARITY when that is unset, calibrated by `rag eval`
    # True when a model runs in this process: `rag serve` then starts one worker (each worker
    # would load its own copy) and `rag embeddings warmup` has something to load.
    loads_model: bool
    build: Callable[..., EmbeddingProvider]  # build(config=...)
    # check(config=...) -> "ok" or a short reason for /health; reads files, loads nothing.
    check: Callable[..., str]
    # The vector channel's weight in convex fusion (RAG_FUSION_VECTOR_WEIGHT when unset), fitted
    # on the train splits of public collections (docs/benchmarks.md): a weak semantic channel
    # (the fake embedder) gets little, a real model more.
    # (local-qwen3 was not measured here: it takes sentence-transformers' weight.)
    fusion_vector_weight: float = 0.7
    # RAG_RERANK when that is unset: `features` only where the fitted reranker improved nDCG@10
    # over the fusion alone on every public collection measured with this provider; it did not
    # for either provider measured (docs/benchmarks.md), so every provider defaults to `none`.
    default_rerank: str = "none"

    def native_dim(self, *, config: Config) -> int | None:
        """The model's own vector size before zero-padding to 1024 (None: model not found)."""
        if self.fixed_model is not None:
            return EMBEDDING_DIM
        if self.name == "openai-compatible":
            return config.embedding_dimensions
        folder = model_folder_locate(config=config)
        return model_folder_dimension(folder) if folder is not None else None


def _fake_build(*, config: Config) -> EmbeddingProvider:
    return FakeLexicalEmbedder()


def _always_ready(*, config: Config) -> str:
    return "ok"


# The server client imports httpx, which most commands never need: loaded on first use.
def _remote_build(*, config: Config) -> EmbeddingProvider:
    from knowledge.embeddings.remote import remote_embedder

    return remote_embedder(config=config)


def _remote_check(*, config: Config) -> str:
    from knowledge.embeddings.remote import remote_embedder_status

    return remote_embedder_status(config=config)


PROVIDERS: dict[str, ProviderSpec] = {spec.name: spec for spec in (
    ProviderSpec(name="fake", fixed_model=FAKE_MODEL, default_threshold=0.20,
                 fusion_vector_weight=0.25, loads_model=False,
                 build=_fake_build, check=_always_ready),
    ProviderSpec(name="local-qwen3", fixed_model="Qwen/Qwen3-Embedding-0.6B",
                 default_threshold=0.35, fusion_vector_weight=0.7, loads_model=True,
                 build=local_embedder, check=local_model_status),
    ProviderSpec(name="sentence-transformers", fixed_model=None, default_threshold=0.35,
                 fusion_vector_weight=0.7, loads_model=True, build=local_embedder,
                 check=local_model_status),
    # A server's model, not measured here: sentence-transformers' threshold and weight.
    ProviderSpec(name="openai-compatible", fixed_model=None, default_threshold=0.35,
                 fusion_vector_weight=0.7, loads_model=False, build=_remote_build,
                 check=_remote_check),
)}


def provider_spec(*, config: Config) -> ProviderSpec:
    """The table entry of EMBEDDING_PROVIDER."""
    spec = PROVIDERS.get(config.embedding_provider)
    if spec is None:
        raise ConfigError(f"embedding provider {config.embedding_provider!r} is not available; "
                          f"use one of {', '.join(PROVIDERS)}", variable="EMBEDDING_PROVIDER")
    return spec


def get_embedder(*, config: Config) -> EmbeddingProvider:
    """The provider named by EMBEDDING_PROVIDER."""
    return provider_spec(config=config).build(config=config)


def embedder_status(*, config: Config) -> str:
    """`ok` when the configured provider can embed now, else a short reason (for /health):
    `runtime_missing`, `model_not_cached` or `model_not_found`; reads files, loads nothing."""
    return provider_spec(config=config).check(config=config)


def embedding_native_dim(*, config: Config) -> int | None:
    """The configured model's own vector size before zero-padding to 1024, read from its files
    (None when the custom model cannot be found); fake and local-qwen3 make 1024."""
    return provider_spec(config=config).native_dim(config=config)


def embedding_remote_urls(*, config: Config) -> tuple[str, ...]:
    """The servers that embed for this configuration; () when the model runs here."""
    return config.embedding_base_urls if config.embedding_provider == "openai-compatible" else ()


def embedding_endpoints(*, config: Config) -> list[str]:
    """scheme://host[:port] of each server that embeds for this configuration ([] when the
    model runs here): for /health and the status page, never a path, user or key."""
    return [endpoint_origin(url) or "(not a valid URL)"
            for url in embedding_remote_urls(config=config)]
