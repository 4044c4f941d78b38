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


@dataclass(frozen=True, slots=True)
class VectorRefused:
    """In place of the vector of one chunk that the provider could not make: an embedding
    server's answer for that input was no vector (NaN, all zeros, the wrong length). Ingest
    stores the chunk without it, says which note it belongs to, and the next ingest asks
    again; the other chunks are not held back by one bad answer."""

    reason: str


Embedded = list[float] | VectorRefused


class EmbeddingProvider(Protocol):
    """What ingest and retrieval need from an embedder. embed_documents gives one entry per
    chunk, in order: a vector, or VectorRefused where a remote server answered none usable."""

    provider: str
    model: str
    dim: int
    native_dim: int
    runs_in_workers: bool

    def embed_documents(self, chunks: Sequence[ChunkText]) -> Sequence[Embedded]: ...

    def embed_query(self, text: str) -> list[float]: ...


class EmbeddingDimMismatch(LocalRagError):
    """A model or a query vector whose size the index cannot store."""

    code = "embedding_dim_mismatch"
