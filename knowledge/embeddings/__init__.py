"""Embeddings: the provider interface (base), the fake-lexical-v1 embedder (fake), the local
model providers (local) and the one provider table with dispatch and status (providers)."""

from knowledge.embeddings.base import ChunkText, EmbeddingDimMismatch, EmbeddingProvider
from knowledge.embeddings.fake import FAKE_MODEL, FakeLexicalEmbedder, fake_bucket, fake_tokens
from knowledge.embeddings.providers import (
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
