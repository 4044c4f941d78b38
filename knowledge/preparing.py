"""Parse, chunk (and for light embedders, embed) notes and documents, in worker processes when
there are many.

Parsing, token counting, lexical analysis and lexical hashing are pure-Python CPU work; done in
one process they would leave the other cores idle while the database writes. After the first
notes have been prepared in process, the rest go to a pool of worker processes, in order, with a
bounded window so memory stays flat however large the vault is.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from itertools import chain, islice
from multiprocessing import get_context
from typing import Any, TypeVar

from pgvector import Vector

from embeddings import ChunkText, EmbeddingProvider
from embeddings.base import VectorRefused
from knowledge.signals import ReviewMaterial
from parsing.chunking import ChunkDraft, blocks_chunk, note_chunk
from parsing.formats import format_module, ocr
from parsing.formats.base import ExtractOptions, FormatRejected, TextBudget
from parsing.lexical import ChunkLexical, chunk_lexical_build
from parsing.markdown import note_parse

Item = TypeVar("Item")

# Below this many notes to prepare, starting worker processes costs more than it saves.
SERIAL_FIRST = 128
IN_FLIGHT_PER_WORKER = 256
# Notes go to a worker in tasks of up to this many, or this many bytes (a larger document goes
# alone): each task costs the pool's queues, pipes and wake-ups on both sides, which for one
# small note each cost more than pickling it (2,000 notes: 1.5 s of the writer's CPU, 0.2 s in
# tasks of 16).
TASK_NOTES_MAX = 16
TASK_BYTES_MAX = 256 * 1024
# Documents travel to the workers as bytes (a PDF may be 100 MB): the window is also bounded by
# the bytes it holds, so a vault of large scans never holds more than this in flight.
IN_FLIGHT_MAX_BYTES = 256 * 1024 * 1024
PARENT_CHECK_SECONDS = 0.5


@dataclass(frozen=True)
class PreparedNote:
    """A note or document ready to embed and store."""

    frontmatter: dict[str, Any]
    tags: list[str]
    warnings: list[str]
    chunks: list[ChunkDraft]
    # Set when the embedder runs in the workers; pgvector's compact form crosses the process
    # boundary far cheaper than 1024 Python floats per chunk.
    vectors: list[Vector | VectorRefused] | None = None
    format: str = "markdown"
    title: str | None = None
    page_count: int | None = None
    ocr_page_count: int = 0
    facts: dict[str, Any] | None = None  # documents.metadata
    # Each chunk's lexical terms and impact cells, made here so the writer only sends them.
    lexical: list[ChunkLexical] | None = None
    # For the review queue (knowledge/signals.py versions_stored); None when nothing to review.
    review: ReviewMaterial | None = None


@dataclass(frozen=True)
class PrepareFailed:
    """A note the parser or chunker could not handle; `reason` names the error."""

    reason: str


def note_prepare(text: str, relative_path: str, embedder: EmbeddingProvider | None = None,
                 options: ExtractOptions | None = None) -> PreparedNote | PrepareFailed:
    """Parse and chunk one note's text (and embed its chunks when given a light embedder);
    never raises, so one broken note cannot stop a vault."""
    options = options or ExtractOptions()
    budget = TextBudget(options)
    try:
        parsed = note_parse(text=budget.take(text), budget=budget)
        chunks = note_chunk(note=parsed)
    except FormatRejected as exc:  # past RAG_DOCUMENT_MAX_CHARS or RAG_DOCUMENT_MAX_PARAGRAPHS
        return PrepareFailed(reason=str(exc))
    except Exception as exc:
        return PrepareFailed(reason=f"could not parse: {type(exc).__name__}: {exc}")
    if len(chunks) > options.max_chunks:
        return PrepareFailed(reason=_chunk_limit_message(len(chunks), options))
    return PreparedNote(frontmatter=parsed.frontmatter, tags=parsed.tags,
                        warnings=parsed.warnings, chunks=chunks,
                        vectors=_vectors(chunks, relative_path, parsed.tags, embedder),
                        lexical=_lexical(chunks, relative_path))


def document_prepare(payload: str | bytes, relative_path: str,
                     embedder: EmbeddingProvider | None = None,
                     options: ExtractOptions | None = None) -> PreparedNote | PrepareFailed:
    """A note (decoded text) or a document of another format (its bytes): extract, chunk and
    (with a light embedder) embed it; never raises, so one broken file cannot stop a vault."""
    options = options or ExtractOptions()
    module = format_module(relative_path)
    if module is None:
        return note_prepare(payload if isinstance(payload, str) else payload.decode("utf-8"),
                            relative_path, embedder, options)
    try:
        assert isinstance(payload, bytes)  # a document of another format comes as its bytes
        extracted = module.extract(payload, name=relative_path, options=options)
        chunks = blocks_chunk(blocks=extracted.blocks, ocr_confidence=extracted.ocr_confidence)
    except FormatRejected as exc:
        return PrepareFailed(reason=str(exc))
    except Exception as exc:
        return PrepareFailed(reason=f"could not read {module.FORMAT.upper()}: "
                                    f"{type(exc).__name__}: {exc}")
    if len(chunks) > options.max_chunks:
        return PrepareFailed(reason=_chunk_limit_message(len(chunks), options))
    return PreparedNote(frontmatter=extracted.properties, tags=[], warnings=extracted.warnings,
                        chunks=chunks,
                        vectors=_vectors(chunks, relative_path, [], embedder),
                        format=extracted.format, title=extracted.title,
                        page_count=extracted.page_count,
                        ocr_page_count=len(extracted.ocr_confidence), facts=extracted.facts,
                        lexical=_lexical(chunks, relative_path),
                        review=ReviewMaterial(ocr_confidence=extracted.ocr_confidence,
                                              page_texts=extracted.page_texts,
                                              tables=extracted.tables) or None)


def _chunk_limit_message(count: int, options: ExtractOptions) -> str:
    return (f"file makes {count:,} chunks, more than the {options.max_chunks:,} of "
            "RAG_DOCUMENT_MAX_CHUNKS; not indexed (split it, or raise the limit)")


def _lexical(chunks: list[ChunkDraft], relative_path: str) -> list[ChunkLexical]:
    return [chunk_lexical_build(content=chunk.content, heading_path=chunk.heading_path,
                                relative_path=relative_path) for chunk in chunks]


def _vectors(chunks: list[ChunkDraft], relative_path: str, tags: Sequence[str],
             embedder: EmbeddingProvider | None) -> list[Vector | VectorRefused] | None:
    if embedder is None or not chunks:
        return None
    return [vector if isinstance(vector, VectorRefused) else Vector(vector)
            for vector in embedder.embed_documents(
                chunk_texts(chunks=chunks, relative_path=relative_path, tags=tags))]


def chunk_texts(*, chunks: Sequence[ChunkDraft], relative_path: str,
                tags: Sequence[str]) -> list[ChunkText]:
    """What the embedder sees of each chunk of one note."""
    return [ChunkText(content=chunk.content, heading_path=chunk.heading_path,
                      relative_path=relative_path, tags=tags, wikilinks=chunk.wikilinks)
            for chunk in chunks]


def notes_prepare(items: Iterable[tuple[Item, str | bytes, str]], *,
                  embedder: EmbeddingProvider, workers: int | None = None,
                  options: ExtractOptions | None = None, ocr_pages: int | None = None
                  ) -> Iterator[tuple[Item, PreparedNote | PrepareFailed]]:
    """(item, text or bytes, relative_path) in, (item, prepared) out, in the same order.

    `workers` is the number of worker processes (default: one per core); 0 prepares everything
    in this process. A provider marked `runs_in_workers` (cheap to build, no model to load)
    embeds in the workers too; other providers embed later, in this process, in batches.
    `ocr_pages` caps the scanned pages recognised in this call, across all its processes."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if workers <= 1 and not embedder.runs_in_workers:
        workers = 0  # a single worker would only move the parsing, not parallelise it
    light = embedder if embedder.runs_in_workers else None
    context = get_context("spawn")
    budget = context.Value("i", ocr_pages) if ocr_pages is not None else None
    ocr.budget_use(budget)
    try:
        yield from _prepare(items, light=light, workers=workers, options=options,
                            budget=budget, context=context)
    finally:
        ocr.budget_use(None)


def _prepare(items: Iterable[tuple[Item, str | bytes, str]], *,
             light: EmbeddingProvider | None, workers: int, options: ExtractOptions | None,
             budget: Any, context: Any) -> Iterator[tuple[Item, PreparedNote | PrepareFailed]]:
    iterator = iter(items)
    for item, text, relative_path in iterator if workers <= 0 else islice(iterator, SERIAL_FIRST):
        yield item, document_prepare(text, relative_path, light, options)
    rest = next(iterator, None)
    if rest is None:
        return  # all prepared in process: no worker was ever started
    iterator = chain([rest], iterator)
    # "spawn": a forked child would share the parent's open database socket.
    with ProcessPoolExecutor(max_workers=workers, mp_context=context,
                             initializer=worker_init, initargs=(os.getpid(), budget)) as pool:
        window: deque[tuple[list[Item], Future, int]] = deque()
        in_flight = 0
        for task in _tasks(iterator):
            size = sum(len(text) for _, text, _ in task)
            window.append(([item for item, _, _ in task],
                           pool.submit(_task_prepare, [(text, path) for _, text, path in task],
                                       light, options), size))
            in_flight += size
            while window and (len(window) * TASK_NOTES_MAX >= workers * IN_FLIGHT_PER_WORKER
                              or in_flight > IN_FLIGHT_MAX_BYTES):
                done_items, future, done_size = window.popleft()
                in_flight -= done_size
                yield from zip(done_items, future.result(), strict=True)
        while window:
            done_items, future, _ = window.popleft()
            yield from zip(done_items, future.result(), strict=True)


def _tasks(items: Iterator[tuple[Item, str | bytes, str]]
           ) -> Iterator[list[tuple[Item, str | bytes, str]]]:
    """Consecutive items grouped into tasks of at most TASK_NOTES_MAX items and (unless one
    item is larger alone) TASK_BYTES_MAX bytes."""
    task: list[tuple[Item, str | bytes, str]] = []
    size = 0
    for entry in items:
        if task and (len(task) >= TASK_NOTES_MAX or size + len(entry[1]) > TASK_BYTES_MAX):
            yield task
            task, size = [], 0
        task.append(entry)
        size += len(entry[1])
    if task:
        yield task


def _task_prepare(payloads: list[tuple[str | bytes, str]], light: EmbeddingProvider | None,
                  options: ExtractOptions | None) -> list[PreparedNote | PrepareFailed]:
    """One worker task: each document prepared on its own (document_prepare never raises)."""
    return [document_prepare(payload, relative_path, light, options)
            for payload, relative_path in payloads]


def worker_init(parent_pid: int, ocr_budget: Any) -> None:
    """Runs first in every worker process: share the run's OCR page budget, watch the parent."""
    ocr.budget_use(ocr_budget)
    worker_parent_watch(parent_pid)


def worker_parent_watch(parent_pid: int) -> None:
    """Runs first in every worker process: the worker ends itself once the ingest that started
    it is gone (killed, crashed), instead of living on as an orphan."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
