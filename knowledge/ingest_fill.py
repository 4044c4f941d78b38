"""What an ingest fills in without rebuilding a note: vectors missing for the current embedder
(a provider switch, or chunks an embedding server answered no vector for), and lexical terms an
older analyzer made."""

from __future__ import annotations

import time

from embeddings import ChunkText, EmbeddingProvider
from embeddings.base import VectorRefused
from knowledge import store
from knowledge.ingest_result import IngestResult, Timer

# Notes are parsed ahead, embedded together (a real model wants full batches) and written in one
# transaction per batch of whole notes (a few round trips per batch instead of per row); the
# vectors filled in go in batches of the same size.
EMBED_BATCH_CHUNKS = 256
# Chunks indexed before the lexical columns existed, or by an older analyzer, get their terms in
# transactions of this many chunks: an interrupted run keeps what it filled, and the next run
# goes on from there.
LEXICAL_FILL_BATCH = 500

def fill_missing_vectors(document_ids: list[int], *, embedder: EmbeddingProvider,
                          result: IngestResult, timer: Timer) -> None:
    """Unchanged notes without vectors for this provider: embed only their existing chunks."""
    if not document_ids:
        return
    mark = time.perf_counter()
    rows = store.chunks_missing_embeddings(document_ids=document_ids, embedder=embedder)
    timer.add("scan", mark)
    for start in range(0, len(rows), EMBED_BATCH_CHUNKS):
        batch = rows[start:start + EMBED_BATCH_CHUNKS]
        mark = time.perf_counter()
        vectors = embedder.embed_documents([
            ChunkText(content=chunk.content, heading_path=list(chunk.heading_path),
                      relative_path=chunk.relative_path, tags=list(chunk.tags),
                      wikilinks=list(chunk.wikilinks))
            for chunk in batch])
        timer.add("embed", mark)
        mark = time.perf_counter()
        store.embeddings_add(chunk_ids=[chunk.id for chunk in batch], vectors=vectors,
                             embedder=embedder)
        by_note: dict[str, list[VectorRefused]] = {}
        for chunk, vector in zip(batch, vectors, strict=True):
            if isinstance(vector, VectorRefused):
                by_note.setdefault(chunk.relative_path, []).append(vector)
        for relative_path, refused in by_note.items():
            vectors_refused_warn(result, relative_path=relative_path, refused=refused,
                                  chunks=None)
        result.embeddings_written += len(batch) - sum(map(len, by_note.values()))
        timer.add("write", mark)


def vectors_refused_warn(result: IngestResult, *, relative_path: str,
                          refused: list[VectorRefused], chunks: int | None) -> None:
    """One warning per note whose chunks were stored without some of their vectors."""
    result.embeddings_skipped += len(refused)
    of = f" of {chunks}" if chunks is not None else ""
    result.warnings.append({"file": relative_path, "reason": (
        f"{len(refused)}{of} chunks stored without a vector: the embedding server answered "
        f"none usable ({refused[0].reason}); they are found by their words until the next "
        "ingest embeds them again")})


def fill_missing_lexical(*, vault: str, result: IngestResult, timer: Timer) -> None:
    """Chunks whose terms an older analyzer made (or none): new terms, their vectors kept."""
    mark = time.perf_counter()
    result.chunks_lexical_filled += store.chunks_lexical_refresh(vault_path=vault,
                                                                 batch=LEXICAL_FILL_BATCH)
    timer.add("lexical_fill", mark)
