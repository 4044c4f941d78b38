"""What every embedding provider shares: the text of a chunk it embeds, the provider interface,
and the error for a vector of the wrong size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from core.errors import LocalRagError


@dataclass(frozen=True, slots=True)
class ChunkText:
    """The fields of a chunk that a provider may embed."""

    content: str
    heading_path: Sequence[str] = ()
    relative_path: str = ""
    tags: Sequence[str] = ()
    wikilinks: Sequence[str] = ()


class EmbeddingProvider(Protocol):
    """What ingest and retrieval need from an embedder."""

    provider: str
    model: str
    dim: int
    native_dim: int
    runs_in_workers: bool

    def embed_documents(self, chunks: Sequence[ChunkText]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class EmbeddingDimMismatch(LocalRagError):
    """A model or a query vector whose size the index cannot store."""

    code = "embedding_dim_mismatch"
