"""Parse, chunk (and for light embedders, embed) notes, in worker processes when there are many.

Parsing, token counting and lexical hashing are pure-Python CPU work; done in one process they
would leave the other cores idle while the database writes. After the first notes have been
prepared in process, the rest go to a pool of worker processes, in order, with a bounded window
so memory stays flat however large the vault is.
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

from knowledge.chunking import ChunkDraft, note_chunk
from knowledge.embeddings import ChunkText, EmbeddingProvider
from knowledge.markdown import note_parse

Item = TypeVar("Item")

# Below this many notes to prepare, starting worker processes costs more than it saves.
SERIAL_FIRST = 128
IN_FLIGHT_PER_WORKER = 256
PARENT_CHECK_SECONDS = 0.5


@dataclass(frozen=True)
class PreparedNote:
    frontmatter: dict[str, Any]
    tags: list[str]
    warnings: list[str]
    chunks: list[ChunkDraft]
    # Set when the embedder runs in the workers; pgvector's compact form crosses the process
    # boundary far cheaper than 1024 Python floats per chunk.
    vectors: list[Vector] | None = None


@dataclass(frozen=True)
class PrepareFailed:
    """A note the parser or chunker could not handle; `reason` names the error."""

    reason: str


def note_prepare(text: str, relative_path: str,
                 embedder: EmbeddingProvider | None = None) -> PreparedNote | PrepareFailed:
    """Parse and chunk one note's text (and embed its chunks when given a light embedder);
    never raises, so one broken note cannot stop a vault."""
    try:
        parsed = note_parse(text=text)
        chunks = note_chunk(note=parsed)
    except Exception as exc:
        return PrepareFailed(reason=f"could not parse: {type(exc).__name__}: {exc}")
    vectors = None
    if embedder is not None and chunks:
        vectors = [Vector(vector) for vector in embedder.embed_documents(
            chunk_texts(chunks=chunks, relative_path=relative_path, tags=parsed.tags))]
    return PreparedNote(frontmatter=parsed.frontmatter, tags=parsed.tags,
                        warnings=parsed.warnings, chunks=chunks, vectors=vectors)


def chunk_texts(*, chunks: Sequence[ChunkDraft], relative_path: str,
                tags: Sequence[str]) -> list[ChunkText]:
    """What the embedder sees of each chunk of one note."""
    return [ChunkText(content=chunk.content, heading_path=chunk.heading_path,
                      relative_path=relative_path, tags=tags, wikilinks=chunk.wikilinks)
            for chunk in chunks]


def notes_prepare(items: Iterable[tuple[Item, str, str]], *, embedder: EmbeddingProvider,
                  workers: int | None = None
                  ) -> Iterator[tuple[Item, PreparedNote | PrepareFailed]]:
    """(item, text, relative_path) in, (item, prepared) out, in the same order.

    `workers` is the number of worker processes (default: one per core); 0 prepares everything
    in this process. A provider marked `runs_in_workers` (cheap to build, no model to load)
    embeds in the workers too; other providers embed later, in this process, in batches."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if workers <= 1 and not embedder.runs_in_workers:
        workers = 0  # a single worker would only move the parsing, not parallelise it
    light = embedder if embedder.runs_in_workers else None
    iterator = iter(items)
    for item, text, relative_path in iterator if workers <= 0 else islice(iterator, SERIAL_FIRST):
        yield item, note_prepare(text, relative_path, light)
    rest = next(iterator, None)
    if rest is None:
        return  # all prepared in process: no worker was ever started
    iterator = chain([rest], iterator)
    # "spawn": a forked child would share the parent's open database socket.
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                             initializer=worker_parent_watch, initargs=(os.getpid(),)) as pool:
        window: deque[tuple[Item, Future]] = deque()
        for item, text, relative_path in iterator:
            window.append((item, pool.submit(note_prepare, text, relative_path, light)))
            if len(window) >= workers * IN_FLIGHT_PER_WORKER:
                done_item, future = window.popleft()
                yield done_item, future.result()
        while window:
            done_item, future = window.popleft()
            yield done_item, future.result()


def worker_parent_watch(parent_pid: int) -> None:
    """Runs first in every worker process: the worker ends itself once the ingest that started
    it is gone (killed, crashed), instead of living on as an orphan."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
