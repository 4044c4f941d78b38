"""`rag ingest`: turn a vault of notes and documents (PDF, DOCX, TXT: parsing/formats/) into
documents, chunks and embeddings, incrementally.

Unchanged notes are skipped; notes whose text is unchanged but which lack vectors for the
current embedding provider get only the missing vectors; changed notes are rebuilt; notes gone
from the vault are deleted; chunks stored before the lexical channel existed, or analysed by an
older lexical analyzer, get new lexical terms (never new vectors). Bad files are skipped with a
warning and never abort the run; a folder the scan cannot read deletes nothing, and a scan that
finds no note at all deletes nothing unless the operator says `prune`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
from pgvector import Vector

from core.config import Config
from core.db import db_errors_translated
from core.errors import InvalidRequest, LocalRagError, first_line
from embeddings import EmbeddingProvider, embedding_remote_urls, get_embedder
from embeddings.base import Embedded, VectorRefused
from knowledge import store
from knowledge.bases import kb_source_add, source_base
from knowledge.db_schema import schema_ensure
from knowledge.ingest_fill import (
    EMBED_BATCH_CHUNKS,
    fill_missing_lexical,
    fill_missing_vectors,
    vectors_refused_warn,
)
from knowledge.ingest_result import IngestRequest, IngestResult, Progress, Timer
from knowledge.outbound import outbound_check
from knowledge.preparing import PrepareFailed, chunk_texts, notes_prepare
from knowledge.signals import StoredVersion, chunks_committed, versions_stored
from knowledge.vault_index import vault_overlap_check
from parsing.formats import ocr
from parsing.formats.base import ExtractOptions
from parsing.sidecar import sidecar_merge, sidecar_same
from parsing.vault import (
    NoteContent,
    NoteFile,
    NoteRejected,
    note_read,
    sidecar_read,
    vault_resolve,
    vault_scan,
)

# Failures that belong to the values of one note, never to the connection: a value PostgreSQL
# refuses (data exceptions, a path over an index's row limit) or one JSON cannot encode.
NOTE_REFUSED = (psycopg.DataError, psycopg.errors.ProgramLimitExceeded, ValueError)



class IngestLocked(LocalRagError):
    code = "ingest_locked"


class VaultEmpty(LocalRagError):
    code = "vault_empty"


@dataclass(frozen=True)
class _Reading:
    """How this run reads files: size limits, extraction options, the OCR page budget, and
    which files (all, or only some: a job about one document reads just that one)."""

    max_file_bytes: int
    max_document_bytes: int
    options: ExtractOptions
    ocr_pages: int
    only: frozenset[str] | None = None
    # Called at every safe point (each file, each batch before embedding and before writing):
    # a job passes one that raises once it is cancelled, and the run stops there, its open
    # transaction rolled back and the folder's lock released.
    checkpoint: Callable[[], None] | None = None

    def check(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint()

    def scans_retry(self, skipped: str | None) -> bool:
        """True when an unchanged PDF stored with scanned pages left out should be read again:
        the last run's OCR budget ran out, or OCR has become possible since."""
        if skipped == "run_cap":
            return self.ocr_pages > 0
        if skipped in ("not_installed", "disabled"):
            return self.options.ocr and self.ocr_pages > 0 and ocr.ocr_available()
        return False


def vault_ingest(request: IngestRequest, *, config: Config) -> IngestResult:
    """Synchronise the index with the request's vault folder for the current embedding config;
    with `only`, just those relative paths (built, skipped or deleted as the whole run would).

    The vault's documents go into the knowledge base it is a source of; a folder that is no
    base's source becomes one of the request's `knowledge_base` when given, else of
    `default`."""
    if request.page_texts and (request.only is None or len(request.only) != 1):
        raise InvalidRequest("reviewed page text applies to one document: pass its relative "
                             "path as the one entry of `only`")
    root = vault_resolve(request.vault_path)
    vault = str(root)
    schema_ensure()
    embedder = get_embedder(config=config)
    reading = _Reading(max_file_bytes=request.max_file_bytes,
                       max_document_bytes=config.rag_document_max_bytes,
                       options=ExtractOptions(pdf_max_pages=config.rag_pdf_max_pages,
                                              ocr=config.rag_ocr == "auto",
                                              max_chars=config.rag_document_max_chars,
                                              max_paragraphs=config.rag_document_max_paragraphs,
                                              max_chunks=config.rag_document_max_chunks,
                                              page_texts=request.page_texts),
                       ocr_pages=config.rag_ocr_max_pages, only=request.only,
                       checkpoint=request.checkpoint)
    with db_errors_translated():
        vault_overlap_check(vault_path=vault)
        if request.knowledge_base is not None:
            kb_source_add(slug=request.knowledge_base, path=vault)
        knowledge_base_id = source_base(path=vault)
        # Before a file is read: a base whose text stays here is never sent to a server that
        # is not (embeddings/outbound.py).
        for url in embedding_remote_urls(config=config):
            outbound_check(config=config, url=url, what="embedding this folder's chunks",
                           knowledge_base_ids=[knowledge_base_id])
        if not store.vault_lock(vault_path=vault, wait=request.wait_for_lock):
            raise IngestLocked(f"another ingest of {vault} is running; wait for it to finish "
                               "(or pass --wait)", details={"vault_path": vault})
        try:
            # This process holds the vault's lock, so a run still marked running was cut short.
            store.runs_interrupted_mark(vault_path=vault)
            result = _run(request, root=root, embedder=embedder, reading=reading,
                          knowledge_base_id=knowledge_base_id)
        finally:
            store.vault_unlock(vault_path=vault)
    if result.chunks_written or result.documents_deleted or result.embeddings_written \
            or result.chunks_lexical_filled:
        chunks_committed.send(sender=vault_ingest, knowledge_base_ids=[knowledge_base_id])
    return result


def _run(request: IngestRequest, *, root: Path, embedder: EmbeddingProvider, reading: _Reading,
         knowledge_base_id: int) -> IngestResult:
    started = time.perf_counter()
    vault = str(root)
    result = IngestResult(run_id=store.run_start(vault_path=vault, embedder=embedder),
                          status="running", vault_path=vault,
                          embedding_provider=embedder.provider, embedding_model=embedder.model)
    timer = Timer()
    try:
        _synchronise(request, root=root, embedder=embedder, result=result, timer=timer,
                     reading=reading, knowledge_base_id=knowledge_base_id)
        result.status = "success"
    except BaseException as exc:
        result.status = "failed"
        result.error_summary = f"{type(exc).__name__}: {exc}"[:2000]
        raise
    finally:
        result.timings = {phase: round(seconds, 4) for phase, seconds in timer.totals.items()}
        # What went to embedding servers outside this machine, per host (a remote embedder
        # counts it; a local one sends nothing).
        result.outbound = {host: dict(counts)
                           for host, counts in getattr(embedder, "sent", {}).items()}
        result.elapsed_seconds = round(time.perf_counter() - started, 4)
        store.run_finish(run_id=result.run_id, status=result.status, counts=result.counts(),
                         error_summary=result.error_summary,
                         metadata={"warnings": result.warnings, "timings": result.timings,
                                   "embedding_native_dim": embedder.native_dim,
                                   "files_seen": result.files_seen,
                                   "files_rejected": result.files_rejected,
                                   "ocr_pages": result.ocr_pages,
                                   "chunks_lexical_filled": result.chunks_lexical_filled,
                                   "embeddings_skipped": result.embeddings_skipped,
                                   "elapsed_seconds": result.elapsed_seconds,
                                   "outbound": result.outbound})
    return result


def _synchronise(request: IngestRequest, *, root: Path, embedder: EmbeddingProvider,
                 result: IngestResult, timer: Timer, reading: _Reading,
                 knowledge_base_id: int) -> None:
    vault = str(root)
    progress: Progress | None = request.progress
    mark = time.perf_counter()
    scan = vault_scan(root=root)
    notes = scan.notes
    result.warnings.extend({"file": path, "reason": reason} for path, reason in scan.warnings)
    existing = store.document_states(vault_path=vault, embedder=embedder)
    if reading.only is not None:
        notes = [note for note in notes if note.relative_path in reading.only]
        existing = {path: state for path, state in existing.items() if path in reading.only}
    timer.add("scan", mark)
    result.files_seen = len(notes)
    if not notes and existing and not request.prune and reading.only is None:
        # An unmounted disk or an emptied folder looks exactly like this.
        raise VaultEmpty(
            f"found no note in {vault}, but the index holds {len(existing)} of this vault; "
            "nothing was deleted. Check the path; to remove them, run `rag ingest --prune` (or "
            "`rag vault forget`)", details={"vault_path": vault, "indexed": len(existing)})

    needs_vectors: list[int] = []
    # Uploads are read under their stored file names and known by their source names.
    source_names = {path: state.source_name for path, state in existing.items()
                    if state.source_name}

    def changed_notes() -> Iterator[tuple[tuple[NoteFile, NoteContent, bool], str | bytes,
                                          str]]:
        """Read every note; count the unchanged and the unreadable, yield the rest."""
        for position, note in enumerate(notes, start=1):
            reading.check()
            if progress:
                progress(position, len(notes))
            state = existing.get(note.relative_path)
            if (state is not None and state.status == "active"
                    and state.same_file(mtime_ns=note.mtime_ns, size_bytes=note.size_bytes)
                    and sidecar_same(state.sidecar, mtime_ns=note.sidecar_mtime_ns,
                                     size_bytes=note.sidecar_size)
                    and not reading.scans_retry(state.ocr_skipped)
                    and not reading.options.page_texts):
                # Same size and modification time as the stored version: not even read.
                result.documents_skipped += 1
                if state.embedded < state.chunks:
                    needs_vectors.append(state.id)
                continue
            mark = time.perf_counter()
            try:
                content = note_read(note=note, root=root, max_bytes=reading.max_file_bytes,
                                    max_document_bytes=reading.max_document_bytes)
                content = replace(content, sidecar=sidecar_read(note=note, root=root))
            except NoteRejected as exc:
                result.files_rejected += 1
                result.warnings.append({"file": note.relative_path, "reason": str(exc)})
                continue
            finally:
                timer.add("read", mark)
            state = existing.get(note.relative_path)
            if state is not None and state.status == "deleting":
                continue  # deleted through the API: its file goes with the delete job
            if (state is not None and state.content_hash == content.content_hash
                    and _sidecar_hash(state.sidecar) == _sidecar_hash(
                        content.sidecar.stamp if content.sidecar else None)
                    and state.status != "queued"
                    and not reading.scans_retry(state.ocr_skipped)
                    and not reading.options.page_texts):
                result.documents_skipped += 1
                if state.embedded < state.chunks:
                    needs_vectors.append(state.id)
                continue
            payload = content.text if content.data is None else content.data
            yield ((note, content, state is None), payload,
                   source_names.get(note.relative_path, note.relative_path))

    # A first load builds the lexical index once, after its chunks are written.
    store.lexical_index_ensure()
    adding = sum(1 for note in notes if note.relative_path not in existing)
    with store.lexical_index_deferred(enabled=store.bulk_load_is(adding_notes=adding)):
        _write(notes=changed_notes(), vault=vault, embedder=embedder, result=result,
               timer=timer, reading=reading, prepare_workers=request.prepare_workers,
               knowledge_base_id=knowledge_base_id, source_names=source_names)
    fill_missing_vectors(needs_vectors, embedder=embedder, result=result, timer=timer)
    mark = time.perf_counter()
    if store.statistics_refresh(chunks_written=result.chunks_written):
        timer.add("analyze", mark)

    mark = time.perf_counter()
    present = {note.relative_path for note in notes}
    gone = sorted(path for path in existing
                  if path not in present and not scan.covers(path))
    result.documents_deleted = store.documents_delete(vault_path=vault, relative_paths=gone)
    timer.add("delete", mark)
    # After the deletes, so no work is spent on chunks that are about to go.
    fill_missing_lexical(vault=vault, result=result, timer=timer)


# A note waiting in a batch: its version, its vectors when its worker embedded it already (None:
# embedded with the batch), whether it is new.
_Pending = tuple[store.DocumentVersion,
                 Sequence[Sequence[float] | Vector | VectorRefused] | None, bool]


def _write(*, notes: Iterator[tuple[tuple[NoteFile, NoteContent, bool], str | bytes, str]],
           vault: str, embedder: EmbeddingProvider, result: IngestResult, timer: Timer,
           reading: _Reading, prepare_workers: int | None, knowledge_base_id: int,
           source_names: dict[str, str]) -> None:
    """Prepare the changed notes in the workers and write them in batches. An embedder that
    works in this process (a model, or servers over HTTP) embeds one batch while the one before
    is written, so neither the model nor the database waits for the other."""
    with (ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-embed")
          if not embedder.runs_in_workers else contextlib.nullcontext()) as embedding:
        batches = _Batches(vault=vault, embedder=embedder, result=result, timer=timer,
                           knowledge_base_id=knowledge_base_id, check=reading.check,
                           embedding=embedding)
        _prepare(notes=notes, batches=batches, embedder=embedder, result=result, timer=timer,
                 reading=reading, prepare_workers=prepare_workers, source_names=source_names)


def _prepare(*, notes: Iterator[tuple[tuple[NoteFile, NoteContent, bool], str | bytes, str]],
             batches: _Batches, embedder: EmbeddingProvider, result: IngestResult,
             timer: Timer, reading: _Reading, prepare_workers: int | None,
             source_names: dict[str, str]) -> None:
    pending: list[_Pending] = []
    pending_chunks = 0
    mark = time.perf_counter()
    for (note, content, is_new), prepared in notes_prepare(
            notes, embedder=embedder, workers=prepare_workers,
            options=reading.options, ocr_pages=reading.ocr_pages):
        timer.add("parse_chunk", mark)
        reading.check()
        if isinstance(prepared, PrepareFailed):
            result.files_rejected += 1
            result.warnings.append({"file": note.relative_path, "reason": prepared.reason})
        else:
            result.warnings.extend({"file": note.relative_path, "reason": warning}
                                   for warning in prepared.warnings)
            frontmatter, document_tags = prepared.frontmatter, prepared.tags
            metadata = dict(prepared.facts or {})
            if content.sidecar is not None:
                result.warnings.extend({"file": content.sidecar.stamp["file"], "reason": warning}
                                       for warning in content.sidecar.warnings)
                frontmatter, document_tags = sidecar_merge(
                    frontmatter=frontmatter, tags=prepared.tags,
                    is_note=prepared.format == "markdown", sidecar=content.sidecar)
                metadata["sidecar"] = content.sidecar.stamp
            if reading.options.page_texts:
                metadata["reviewed_pages"] = sorted(page for page, _ in reading.options.page_texts)
            pending.append((store.DocumentVersion(
                relative_path=note.relative_path, file_path=str(note.file_path),
                content_hash=content.content_hash, mtime_ns=content.mtime_ns,
                size_bytes=content.size_bytes, frontmatter=frontmatter,
                tags=prepared.tags, document_tags=document_tags, chunks=prepared.chunks,
                format=prepared.format, title=prepared.title, page_count=prepared.page_count,
                ocr_page_count=prepared.ocr_page_count, metadata=metadata,
                lexical=prepared.lexical, source_name=source_names.get(note.relative_path),
                review=prepared.review),
                prepared.vectors, is_new))
            pending_chunks += len(prepared.chunks)
            result.ocr_pages += prepared.ocr_page_count
        if pending_chunks >= EMBED_BATCH_CHUNKS:
            batches.add(pending)
            pending, pending_chunks = [], 0
        mark = time.perf_counter()
    batches.add(pending)
    batches.finish()


class _Batches:
    """Batches of prepared notes on their way to the index: each is embedded (what its worker
    did not embed already) and then written in one transaction. With `embedding` (a one-thread
    executor) a batch's embedding starts as it arrives and it is written once the next one has
    arrived, or at the end; without, both happen at once."""

    def __init__(self, *, vault: str, embedder: EmbeddingProvider, result: IngestResult,
                 timer: Timer, knowledge_base_id: int, check: Callable[[], None],
                 embedding: ThreadPoolExecutor | None) -> None:
        self.vault, self.embedder, self.result, self.timer = vault, embedder, result, timer
        self.knowledge_base_id, self.check, self.embedding = knowledge_base_id, check, embedding
        self.waiting: tuple[list[_Pending], Future[Sequence[Embedded]]] | None = None

    def add(self, pending: list[_Pending]) -> None:
        if not pending:
            return
        self.check()
        texts = [text for version, ready, _ in pending if ready is None
                 for text in chunk_texts(chunks=version.chunks, relative_path=version.source,
                                         tags=version.tags)]
        if self.embedding is None:
            mark = time.perf_counter()
            fresh = self.embedder.embed_documents(texts) if texts else []
            self.timer.add("embed", mark)
            self._write(pending, fresh)
            return
        future = self.embedding.submit(self.embedder.embed_documents, texts)
        self.finish()
        self.waiting = (pending, future)

    def finish(self) -> None:
        """Write the batch whose embedding is under way, once it is done."""
        if self.waiting is None:
            return
        pending, future = self.waiting
        self.waiting = None
        mark = time.perf_counter()
        fresh = future.result()  # the embedding's error, if any, ends the run here
        self.timer.add("embed", mark)  # the time the writer waited for it
        self._write(pending, fresh)

    def _write(self, pending: list[_Pending], fresh: Sequence[Embedded]) -> None:
        vectors = iter(fresh)
        per_note = [ready if ready is not None else [next(vectors) for _ in version.chunks]
                    for version, ready, _ in pending]
        _flush_write(pending, per_note, vault=self.vault, embedder=self.embedder,
                     result=self.result, timer=self.timer,
                     knowledge_base_id=self.knowledge_base_id, check=self.check)


def _flush_write(pending: list[_Pending], per_note: list, *, vault: str,
                 embedder: EmbeddingProvider, result: IngestResult, timer: Timer,
                 knowledge_base_id: int, check: Callable[[], None]) -> None:
    """Write embedded notes in one transaction (one by one when the batch is refused)."""
    check()  # embedding is the slow part: nothing is written for a run stopped meanwhile
    mark = time.perf_counter()
    try:
        store.documents_write(vault_path=vault, versions=[version for version, _, _ in pending],
                              vectors=[vector for vectors in per_note for vector in vectors],
                              embedder=embedder, knowledge_base_id=knowledge_base_id)
        stored = pending
    except NOTE_REFUSED:
        # A value PostgreSQL or the JSON encoder refuses (the batch was rolled back as a
        # whole): store the notes one by one so only the offending note is skipped, with a
        # warning naming it.
        stored = []
        for entry, vectors in zip(pending, per_note):
            try:
                store.documents_write(vault_path=vault, versions=[entry[0]], vectors=vectors,
                                      embedder=embedder, knowledge_base_id=knowledge_base_id)
                stored.append(entry)
            except NOTE_REFUSED as exc:
                result.files_rejected += 1
                result.warnings.append({"file": entry[0].relative_path,
                                        "reason": f"could not be stored: {first_line(exc)}"})
                if not entry[2]:  # an existing document keeps its version; the failure is kept
                    store.version_failed_record(
                        vault_path=vault, relative_path=entry[0].relative_path,
                        content_hash=entry[0].content_hash, embedder=embedder,
                        error=first_line(exc))
    kept = {id(entry) for entry in stored}
    for entry, vectors in zip(pending, per_note, strict=True):
        if id(entry) not in kept:
            continue
        version, _, is_new = entry
        refused = [vector for vector in vectors if isinstance(vector, VectorRefused)]
        if refused:
            vectors_refused_warn(result, relative_path=version.relative_path, refused=refused,
                                  chunks=len(version.chunks))
        result.chunks_written += len(version.chunks)
        result.embeddings_written += len(version.chunks) - len(refused)
        if is_new:
            result.documents_added += 1
        else:
            result.documents_updated += 1
    timer.add("write", mark)
    _versions_announce([entry[0] for entry in stored], vault=vault, result=result,
                       knowledge_base_id=knowledge_base_id)


def _versions_announce(versions: list[store.DocumentVersion], *, vault: str,
                       result: IngestResult, knowledge_base_id: int) -> None:
    """Tell the review queue about the stored versions with something to review; what its
    receiver fails at is the run's warning: the versions are stored either way."""
    reviewed = [StoredVersion(relative_path=version.relative_path,
                              content_hash=version.content_hash, review=version.review)
                for version in versions if version.review]
    if not reviewed:
        return
    for _, answer in versions_stored.send_robust(sender=vault_ingest,
                                                 knowledge_base_id=knowledge_base_id,
                                                 vault_path=vault, versions=reviewed):
        if isinstance(answer, Exception):
            result.warnings.append({"file": reviewed[0].relative_path,
                                    "reason": f"review tasks not recorded: {first_line(answer)}"})


def _sidecar_hash(stamp: dict[str, Any] | None) -> str | None:
    return stamp.get("sha256") if stamp else None
