"""The one table of embedding providers, and what reads it: dispatch, status, native size.

`PROVIDERS` extends each row of core's table (core/embedding_providers.py: the names and the
settings they imply, which configuration validation reads) with how to build and check it.
/health, `rag config`, `rag serve`'s worker count and `rag embeddings warmup` read `PROVIDERS`;
adding a provider means one row there and its adapters here. Building a local provider imports
torch; nothing else here does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from core.config import EMBEDDING_DIM, Config, ConfigError, endpoint_origin
from core.embedding_providers import EMBEDDING_PROVIDERS, EmbeddingProviderFacts
from embeddings.base import EmbeddingProvider
from embeddings.fake import FakeLexicalEmbedder
from embeddings.local import (
    local_embedder,
    local_model_status,
    model_folder_dimension,
    model_folder_locate,
)


@dataclass(frozen=True, kw_only=True)
class ProviderSpec(EmbeddingProviderFacts):
    """One embedding provider: its facts (core/embedding_providers.py) and how to build and
    check it."""

    build: Callable[..., EmbeddingProvider]  # build(config=...)
    # check(config=...) -> "ok" or a short reason for /health; reads files, loads nothing.
    check: Callable[..., str]

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
    from embeddings.remote import remote_embedder

    return remote_embedder(config=config)


def _remote_check(*, config: Config) -> str:
    from embeddings.remote import remote_embedder_status

    return remote_embedder_status(config=config)


# How each provider of core's table is built and checked; a name missing here fails at import.
_ADAPTERS: dict[str, tuple[Callable[..., EmbeddingProvider], Callable[..., str]]] = {
    "fake": (_fake_build, _always_ready),
    "local-qwen3": (local_embedder, local_model_status),
    "sentence-transformers": (local_embedder, local_model_status),
    "openai-compatible": (_remote_build, _remote_check),
}

PROVIDERS: dict[str, ProviderSpec] = {
    name: ProviderSpec(**{field.name: getattr(facts, field.name) for field in fields(facts)},
                       build=_ADAPTERS[name][0], check=_ADAPTERS[name][1])
    for name, facts in EMBEDDING_PROVIDERS.items()}


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
