"""Reads and writes of the ingest through psycopg: set-based statements, one transaction per
batch of whole notes, COPY to add vectors to existing chunks.

Every statement that writes chunks does more than it says: triggers on chunks run in its
transaction (knowledge/migrations/0012_lexical_statistics_triggers.sql). They keep the lexical
statistics current, the whole index's chunk and term counts (lexical_stats) and BM25's per-base
statistics (lexical_scope_stats, lexical_length_stats, lexical_term_stats: chunks, terms,
chunks per length class, document frequency per term), and fill a chunk's impact cells when a
writer gives none. A statement that changes lexical terms locks the one lexical_stats row until
its transaction ends, so concurrent writers of chunks take turns there. Other triggers give a
chunk written without a knowledge base its document's (migration 0013), and log every chunk and
vector written for the search index (index/migrations/0002_change_log.sql)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psycopg
from django.db import DatabaseError, connection, transaction
from pgvector import Vector
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from core.db import rows_as
from embeddings import EmbeddingProvider
from embeddings.base import VectorRefused
from knowledge import store_sql
from knowledge.db_schema import index_connection
from knowledge.signals import ReviewMaterial
from parsing.chunking import MAX_TOKENS, OVERLAP_TOKENS, TARGET_TOKENS, ChunkDraft
from parsing.lexical import ANALYZER_VERSION, ChunkLexical, chunk_lexical_build
from parsing.tables import TABLE_TARGET_TOKENS


@dataclass(frozen=True)
class DocumentVersion:
    """One note as it will be stored: file facts, document metadata and its chunks."""

    relative_path: str
    file_path: str
    content_hash: str
    mtime_ns: int
    size_bytes: int
    frontmatter: dict[str, Any]
    tags: list[str]
    chunks: list[ChunkDraft]
    # documents.tags, for filters: `tags` and its sidecar's (parsing/sidecar.py); None: `tags`.
    document_tags: list[str] | None = None
    format: str = "markdown"
    title: str | None = None
    page_count: int | None = None
    ocr_page_count: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    # Each chunk's lexical terms, when the preparing worker made them (else made here).
    lexical: list[ChunkLexical] | None = None
    # An upload's source name (knowledge/upload_names.py): its chunks' relative_path.
    source_name: str | None = None
    # Not stored here: sent with knowledge.signals.versions_stored once the version commits.
    review: ReviewMaterial | None = None

    @property
    def source(self) -> str:
        """What its chunks are cited by: an upload's source name, else its relative path."""
        return self.source_name or self.relative_path


class DocumentState(NamedTuple):
    """What the index holds for one note of the vault."""

    id: int
    content_hash: str
    chunks: int
    embedded: int  # chunks with a vector for the current provider/model/dim
    # Why scanned pages were left out when it was stored (parsing/formats/pdf.py), or None.
    ocr_skipped: str | None = None
    # active; queued (an upload or a reindex waiting: built even if its hash is unchanged);
    # deleting (out of search, its file about to be removed: never built again)
    status: str = "active"
    # The file's modification time and size when its version was stored.
    mtime_ns: int | None = None
    size_bytes: int | None = None
    # What was stored of its sidecar (parsing/sidecar.py): file, sha256, mtime_ns, size_bytes.
    sidecar: dict[str, Any] | None = None
    # An upload's source name (knowledge/upload_names.py); None for a vault's document.
    source_name: str | None = None

    def same_file(self, *, mtime_ns: int, size_bytes: int) -> bool:
        """Whether a file with this modification time (ns) and size is the one stored: then
        it is not read again. A file rewritten with the same size within the same nanosecond
        timestamp, or whose time was set back, is the one case this misses."""
        return bool(mtime_ns) and self.mtime_ns == mtime_ns and self.size_bytes == size_bytes


def document_states(*, vault_path: str, embedder: EmbeddingProvider) -> dict[str, DocumentState]:
    """relative_path -> the stored state of every document of the vault."""
    with connection.cursor() as cursor:
        cursor.execute(store_sql.DOCUMENT_STATES, [embedder.provider, embedder.model, embedder.dim,
                                             vault_path])
        return dict(rows_as(cursor, _state_of))


def _state_of(*, relative_path: str, sidecar: str | None,
              **columns: Any) -> tuple[str, DocumentState]:
    """A DOCUMENT_STATES row: its path, and its state (the sidecar's stamp is JSON text)."""
    return relative_path, DocumentState(
        sidecar=json.loads(sidecar) if sidecar is not None else None, **columns)


def documents_write(*, vault_path: str, versions: Sequence[DocumentVersion],
                    vectors: Sequence[Sequence[float] | Vector | VectorRefused],
                    embedder: EmbeddingProvider, knowledge_base_id: int | None = None) -> None:
    """Insert or replace whole documents with their chunks and vectors in one transaction:
    if anything fails, every document of the batch keeps its previous version. A chunk whose
    vector is VectorRefused is stored without one (the next ingest embeds it again)."""
    if not versions:
        return
    # Built before the transaction: the chunk writes lock the one lexical_stats row (its
    # triggers), which other vaults' ingests wait for until this transaction ends.
    built = []  # per version: its chunk rows and their vectors
    position = 0
    for version in versions:
        rows = []
        for index, chunk in enumerate(version.chunks):
            lexical = version.lexical[index] if version.lexical else chunk_lexical_build(
                content=chunk.content, heading_path=chunk.heading_path,
                relative_path=version.source)
            # relative_path names the chunk's document; the chunk row takes its source.
            rows.append({"relative_path": version.relative_path, "chunk_index": chunk.chunk_index,
                         "content": chunk.content, "heading_path": chunk.heading_path,
                         "tags": version.tags, "wikilinks": chunk.wikilinks,
                         "metadata": {"wikilink_aliases": chunk.wikilink_aliases,
                                      **(chunk.facts or {})},
                         "content_hash": chunk.content_hash, "token_count": chunk.token_count,
                         "lexical_terms": lexical.terms, "lexical_length": lexical.length,
                         "lexical_version": ANALYZER_VERSION, "lexical_cells": lexical.cells,
                         "page_start": chunk.page_start, "page_end": chunk.page_end})
        built.append((version, rows, vectors[position:position + len(rows)]))
        position += len(rows)
    conn = index_connection()
    # The rows that come back are read by name on cursors of their own.
    with transaction.atomic(), psycopg.Cursor(conn) as cursor, \
            psycopg.Cursor(conn, row_factory=dict_row) as reading:
        # A handful of round trips per batch, not per row: the statements go as one pipeline,
        # then the vectors as one COPY (which a pipeline cannot carry).
        with conn.pipeline():
            cursor.execute(store_sql.ASYNC_COMMIT)
            # A document deleted through the API since this run read its state stays deleted:
            # its row is locked here (the delete locks it too, so the two never interleave) and
            # left out.
            reading.execute(store_sql.DOCUMENTS_LOCK,
                            [vault_path, [version.relative_path for version in versions]])
            deleting = {row["relative_path"] for row in reading.fetchall()
                        if row["status"] == "deleting"}
            kept = [entry for entry in built if entry[0].relative_path not in deleting]
            if not kept:
                return
            versions = [version for version, _, _ in kept]
            rows = [row for _, version_rows, _ in kept for row in version_rows]
            paths = [version.relative_path for version in versions]
            cursor.execute(store_sql.UPSERT_DOCUMENTS, [
                vault_path, knowledge_base_id, paths, [v.file_path for v in versions],
                [v.content_hash for v in versions], [v.mtime_ns for v in versions],
                [v.size_bytes for v in versions], [Jsonb(v.frontmatter) for v in versions],
                [v.format for v in versions], [v.title for v in versions],
                [v.page_count for v in versions], [v.ocr_page_count for v in versions],
                [Jsonb(v.metadata) for v in versions],
                [Jsonb(v.tags if v.document_tags is None else v.document_tags)
                 for v in versions]])
            cursor.execute(store_sql.DELETE_DOCUMENTS_CHUNKS, [vault_path, paths])
            inserted: list[dict[str, Any]] = []  # each new chunk's id, path and index
            if rows:
                reading.execute(store_sql.INSERT_CHUNKS, [Jsonb(rows), vault_path])
                inserted = reading.fetchall()
        if inserted:
            vector_of = {(version.relative_path, row["chunk_index"]): vector
                         for version, version_rows, version_vectors in kept
                         for row, vector in zip(version_rows, version_vectors, strict=True)}
            with cursor.copy(store_sql.COPY_EMBEDDINGS) as copy:
                copy.set_types(store_sql.COPY_EMBEDDINGS_TYPES)
                for written in inserted:
                    vector = vector_of[(written["relative_path"], written["chunk_index"])]
                    if isinstance(vector, VectorRefused):
                        continue
                    copy.write_row([written["id"], embedder.provider, embedder.model, embedder.dim,
                                    vector if isinstance(vector, Vector) else Vector(list(vector))])
        refused = {version.relative_path: sum(isinstance(vector, VectorRefused)
                                              for vector in version_vectors)
                   for version, _, version_vectors in kept}
        _versions_activate(cursor, vault_path=vault_path, versions=versions, embedder=embedder,
                           refused=refused)


# Bumped when a parser or the chunker changes what it makes from the same file (chunking 2:
# tables cut by rows, each chunk repeating the table's head). A file whose content is unchanged
# keeps the chunks it was stored with until it changes or is reindexed.
PARSER_VERSION = {"markdown": 1, "pdf": 1, "docx": 1, "txt": 1, "chunking": 2}


class VersionInvalid(ValueError):
    """A built document does not match what was meant to be stored; its batch is rolled back
    (a ValueError: the ingest then stores the batch note by note and skips only this one)."""


def build_config(embedder: EmbeddingProvider) -> dict[str, Any]:
    """What builds a version: the parser and chunker settings and the embedding config."""
    return {"chunker": {"target_tokens": TARGET_TOKENS, "max_tokens": MAX_TOKENS,
                        "overlap_tokens": OVERLAP_TOKENS,
                        "table_target_tokens": TABLE_TARGET_TOKENS},
            "parsers": PARSER_VERSION,
            "embedding": {"provider": embedder.provider, "model": embedder.model,
                          "dim": embedder.dim}}


def build_config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def _versions_activate(cursor: psycopg.Cursor, *, vault_path: str,
                       versions: Sequence[DocumentVersion], embedder: EmbeddingProvider,
                       refused: dict[str, int]) -> None:
    """Check each document as built in this transaction — its chunk count, one vector of this
    embedder for every chunk but the `refused` ones (the column's type fixes the dimensions) —
    and make it the active version; raise VersionInvalid otherwise, which rolls the whole batch
    back so the previous versions stay."""
    expected = {version.relative_path: len(version.chunks) for version in versions}
    with psycopg.Cursor(cursor.connection, row_factory=dict_row) as reading:
        reading.execute(store_sql.VERSIONS_BUILT, [embedder.provider, embedder.model, embedder.dim,
                                             vault_path, list(expected)])
        built = reading.fetchall()
    if len(built) != len(expected):
        raise VersionInvalid(f"{len(expected) - len(built)} of {len(expected)} documents were "
                             "not written")
    for row in built:
        path, chunks, vectors = row["relative_path"], row["chunks"], row["vectors"]
        wanted = expected[path] - refused.get(path, 0)
        if chunks != expected[path] or vectors != wanted:
            raise VersionInvalid(f"{path}: built {chunks} chunks and {vectors} vectors, expected "
                                 f"{expected[path]} chunks and {wanted} vectors")
    config = build_config(embedder)
    cursor.execute(store_sql.VERSIONS_ACTIVATE, [
        [row["id"] for row in built], [row["content_hash"] for row in built],
        [row["chunks"] for row in built], [row["vectors"] for row in built],
        build_config_hash(config), Jsonb(config)])


def version_failed_record(*, vault_path: str, relative_path: str, content_hash: str,
                          embedder: EmbeddingProvider, error: str) -> None:
    """Record a build of an existing document that could not be stored (its previous version
    stays active)."""
    config = build_config(embedder)
    with connection.cursor() as cursor:
        cursor.execute(store_sql.VERSION_FAILED, [content_hash, build_config_hash(config),
                                            json.dumps(config), error[:2000], vault_path,
                                            relative_path])


@dataclass(frozen=True, slots=True)
class ChunkMissingVector:
    """A stored chunk without a vector for the current config: what embedding it reads."""

    id: int
    document_id: int
    content: str
    heading_path: list[str]
    relative_path: str
    tags: list[str]
    wikilinks: list[str]


def chunks_missing_embeddings(*, document_ids: Sequence[int],
                              embedder: EmbeddingProvider) -> list[ChunkMissingVector]:
    """The chunks of these documents without a vector for the current config."""
    with connection.cursor() as cursor:
        cursor.execute(store_sql.CHUNKS_MISSING_EMBEDDINGS, [list(document_ids), embedder.provider,
                                                       embedder.model, embedder.dim])
        return rows_as(cursor, ChunkMissingVector)


def embeddings_add(*, chunk_ids: Sequence[int], vectors: Sequence[Sequence[float] | VectorRefused],
                   embedder: EmbeddingProvider) -> None:
    """Add vectors for existing chunks (provider switch) without touching the chunks; a
    VectorRefused adds nothing."""
    conn = index_connection()
    with transaction.atomic(), psycopg.Cursor(conn) as cursor, cursor.copy(
            store_sql.COPY_EMBEDDINGS) as copy:
        copy.set_types(store_sql.COPY_EMBEDDINGS_TYPES)
        for chunk_id, vector in zip(chunk_ids, vectors, strict=True):
            if not isinstance(vector, VectorRefused):
                copy.write_row([chunk_id, embedder.provider, embedder.model, embedder.dim,
                                list(vector)])


def chunks_lexical_refresh(*, vault_path: str | None, batch: int) -> int:
    """Re-analyse the chunks of a vault (None: of every vault) whose lexical terms an older
    analyzer made, or none, in transactions of `batch` chunks; their vectors are left alone.
    Returns how many chunks were given new terms. An interrupted run keeps what it stored."""
    refreshed = 0
    after_id = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(store_sql.CHUNKS_LEXICAL_STALE,
                           {"after_id": after_id, "vault_path": vault_path, "limit": batch})
            rows: list[dict[str, Any]] = rows_as(cursor, dict)
        if not rows:
            return refreshed
        built = [chunk_lexical_build(content=row["content"], heading_path=row["heading_path"] or (),
                                     relative_path=row["relative_path"])
                 for row in rows]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(store_sql.FILL_CHUNKS_LEXICAL, [
                ANALYZER_VERSION, [row["id"] for row in rows],
                [item.terms for item in built], [item.length for item in built],
                [item.cells for item in built]])
            refreshed += cursor.rowcount
        after_id = rows[-1]["id"]


# A first load of at least this many notes, into an index holding fewer chunks than that, builds
# the GIN index of the impact cells after writing them.
BULK_LOAD_MIN_NOTES = 1000
BULK_BUILD_MEMORY = "256MB"  # maintenance_work_mem of that one build


def bulk_load_is(*, adding_notes: int) -> bool:
    """Whether an ingest adding `adding_notes` notes is a bulk load: many notes into an index
    that holds fewer chunks than that (a first ingest, or a tiny index)."""
    if adding_notes < BULK_LOAD_MIN_NOTES:
        return False
    with connection.cursor() as cursor:
        cursor.execute(store_sql.CHUNKS_COUNT)
        return cursor.fetchone()[0] < adding_notes


@contextmanager
def lexical_index_deferred(*, enabled: bool) -> Iterator[bool]:
    """With `enabled`, drop the impact cells' GIN index for the block and build it once at the
    end (also when the block fails): one sort of every entry instead of merging each batch's
    entries into a growing index. Searches during the block
    still answer, from a scan. Yields whether the index was dropped (not when a search or
    another ingest holds the table for more than 2 s). An index lost to a crash in between is
    built again by `lexical_index_ensure` at the next ingest, and by `rag db init`."""
    dropped = False
    if enabled:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(store_sql.LOCK_TIMEOUT_SHORT)
                cursor.execute(store_sql.LEXICAL_INDEX_DROP)
            dropped = True
        except DatabaseError:
            dropped = False
    try:
        yield dropped
    except BaseException:
        if dropped:
            # The block's own error is the one to report; a build that fails too (the database
            # gone) is done by the next ingest.
            with suppress(DatabaseError):
                lexical_index_ensure()
        raise
    if dropped:
        lexical_index_ensure()


# An ingest that wrote at least this many chunks, and more than STATISTICS_STALE_SHARE of what
# the planner believes the table holds, refreshes the planner's statistics before it returns.
STATISTICS_REFRESH_MIN_CHUNKS = 1000
STATISTICS_STALE_SHARE = 0.2


def statistics_refresh(*, chunks_written: int) -> bool:
    """ANALYZE the tables an ingest writes when it grew them by much. Autovacuum would, within
    about a minute; until then the planner takes a first load's tables for empty, and the next
    ingest's document states ran as a nested loop over every vector (2.1 s instead of 25 ms
    after a 2,000-note first load; quadratic in the vault). True when it ran."""
    if chunks_written < STATISTICS_REFRESH_MIN_CHUNKS:
        return False
    with connection.cursor() as cursor:
        cursor.execute(store_sql.CHUNKS_ESTIMATE)
        estimate = cursor.fetchone()[0]
        if estimate >= 0 and chunks_written <= STATISTICS_STALE_SHARE * estimate:
            return False
        cursor.execute(store_sql.ANALYZE_INDEX_TABLES)
    return True


def lexical_index_ensure() -> bool:
    """Build the impact cells' GIN index if it is missing; True when it was built."""
    with connection.cursor() as cursor:
        cursor.execute(store_sql.LEXICAL_INDEX_PRESENT)
        if cursor.fetchone()[0]:
            return False
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(store_sql.BUILD_MEMORY, [BULK_BUILD_MEMORY])
        cursor.execute(store_sql.LEXICAL_INDEX_CREATE)
    return True


def documents_delete(*, vault_path: str, relative_paths: Sequence[str]) -> int:
    """Hard-delete documents gone from the vault (chunks and embeddings cascade)."""
    if not relative_paths:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(store_sql.DELETE_DOCUMENTS, [vault_path, list(relative_paths)])
        return cursor.rowcount


def run_start(*, vault_path: str, embedder: EmbeddingProvider) -> int:
    """Record a `running` ingest run (committed at once, so a crash leaves a trace)."""
    with connection.cursor() as cursor:
        cursor.execute(store_sql.INSERT_RUN, [vault_path, embedder.provider, embedder.model,
                                        embedder.dim])
        return cursor.fetchone()[0]


def runs_interrupted_mark(*, vault_path: str) -> int:
    """Mark the vault's runs still `running` as failed: only the holder of the vault's lock
    calls this, so no other run can be live."""
    with connection.cursor() as cursor:
        cursor.execute(store_sql.FAIL_INTERRUPTED_RUNS, [vault_path])
        return cursor.rowcount


def run_finish(*, run_id: int, status: str, counts: dict[str, int], error_summary: str | None,
               metadata: dict[str, Any]) -> None:
    # Any: Django's parameter types do not know psycopg's Jsonb adapter.
    params: list[Any] = [
        status, counts["documents_added"], counts["documents_updated"],
        counts["documents_deleted"], counts["documents_skipped"], counts["chunks_written"],
        counts["embeddings_written"], error_summary, Jsonb(metadata), run_id]
    with connection.cursor() as cursor:
        cursor.execute(store_sql.FINISH_RUN, params)


def vault_lock_key(vault_path: str) -> int:
    """A stable signed 64-bit advisory-lock key per canonical vault path."""
    digest = hashlib.sha256(f"local-rag-ingest:{vault_path}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def vault_lock(*, vault_path: str, wait: bool) -> bool:
    """Take the session advisory lock of this vault; False when another ingest holds it."""
    with connection.cursor() as cursor:
        cursor.execute(store_sql.WAIT_VAULT_LOCK if wait else store_sql.TRY_VAULT_LOCK,
                       [vault_lock_key(vault_path)])
        return wait or bool(cursor.fetchone()[0])


def vault_unlock(*, vault_path: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(store_sql.RELEASE_VAULT_LOCK, [vault_lock_key(vault_path)])
