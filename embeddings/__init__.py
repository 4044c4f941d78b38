"""Embeddings: the provider interface (base), the fake-lexical-v1 embedder (fake), the local
model providers (local), the embedding servers' client (remote), the provider table with
dispatch and status (providers), and the outbound policy's endpoint side (outbound)."""

from embeddings.base import ChunkText, EmbeddingDimMismatch, EmbeddingProvider
from embeddings.fake import FAKE_MODEL, FakeLexicalEmbedder, fake_bucket, fake_tokens
from embeddings.providers import (
    PROVIDERS,
    ProviderSpec,
    embedder_status,
    embedding_endpoints,
    embedding_native_dim,
    embedding_remote_urls,
    get_embedder,
    provider_spec,
)

__all__ = ["PROVIDERS", "FAKE_MODEL", "ChunkText", "EmbeddingDimMismatch", "EmbeddingProvider",
           "FakeLexicalEmbedder", "ProviderSpec", "embedder_status", "embedding_endpoints",
           "embedding_native_dim", "embedding_remote_urls",
           "fake_bucket", "fake_tokens", "get_embedder", "provider_spec"]
