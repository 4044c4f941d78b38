"""Building a base's index and bringing it up to date from PostgreSQL.

A catch-up reads, in one REPEATABLE READ snapshot of the database, the base's generation and
the chunks logged since the index's (the log of migration 0002), and applies them: the lexical index
deletes and re-adds those chunks; the vector index is rebuilt once they pass a share of it
(searches score the rest exactly in SQL, index/search.py). An index that is missing, damaged,
older than the log or newer than the database (a database restored or rolled back under it) is
rebuilt into a new folder, and the manifest switched to it once it is complete: a build killed
half-way leaves the previous index serving and a folder the next build removes.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.rows import class_row

from core.config import EMBEDDING_DIM, Config, get_config
from core.db import snapshot_connection
from embeddings.fake import FAKE_MODEL
from index import lexical_index, sparse_vectors, sql
from index.store import (
    Manifest,
    Part,
    base_folder,
    database_key,
    folders_unused_remove,
    manifest_read,
    manifest_write,
    writer_lock,
)
from parsing.lexical import HEADING_WEIGHT

logger = logging.getLogger("localrag.index")

# A lexical index further behind than this share of its documents (and LEXICAL_CATCH_UP_MIN) is
# rebuilt: re-adding most of an index costs more than writing it anew.
LEXICAL_REBUILD_SHARE = 0.25
LEXICAL_CATCH_UP_MIN = 20_000
# The vector matrix is rebuilt once this many of its rows (and at least VECTOR_DELTA_MIN) changed;
# fewer are scored in SQL by every search (a few milliseconds per thousand).
VECTOR_DELTA_SHARE = 0.02
VECTOR_DELTA_MIN = 2_000
# Rows read per fetch by a build.
BATCH = 5_000
# Change-log rows are kept this long after every index on the primary has read them, so an
# index built from a replica that lags a little still catches up instead of rebuilding.
LOG_GRACE_SECONDS = 3_600
# A server process starts a base's catch-up at most this often.
CATCH_UP_INTERVAL_SECONDS = 2.0

Progress = Callable[[str, int, int], None]  # (part, done, total)


@dataclass
class CatchUp:
    """What one catch-up of a base did."""

    knowledge_base_id: int
    generation: int  # the database's generation it read
    lexical: str = "current"  # current, applied, rebuilt, skipped (another writer held it)
    vectors: str = "current"  # current, rebuilt, delta (left to the searches), none
    changed: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Location:
    """Where the indexes of one database (a read alias) are."""

    alias: str
    key: str

    def folder(self, config: Config, knowledge_base_id: int) -> Path:
        return base_folder(config=config, key=self.key, knowledge_base_id=knowledge_base_id)


def location(*, alias: str, identity: str, database: str) -> Location:
    settings = connections[alias].settings_dict
    return Location(alias=alias, key=database_key(
        host=str(settings.get("HOST") or "local"), port=str(settings.get("PORT") or ""),
        database=database, identity=identity))


def vectors_indexed(config: Config) -> tuple[str, str] | None:
    """(provider, model) whose vectors the sparse index holds: fake-lexical-v1's only."""
    if config.embedding_provider == "fake":
        return "fake", FAKE_MODEL
    return None


@contextmanager
def snapshot(alias: str) -> Iterator[psycopg.Connection]:
    """A connection of its own to `alias`'s database in a read-only REPEATABLE READ
    transaction: what a build reads is one state of the database."""
    with snapshot_connection(connections[alias].settings_dict,
                             application_name="local-rag search index") as conn:
        yield conn


def base_catch_up(*, knowledge_base_id: int, config: Config | None = None,
                  alias: str = DEFAULT_DB_ALIAS, wait: bool = True, rebuild: bool = False,
                  progress: Progress | None = None) -> CatchUp:
    """Bring the base's index up to the database's current generation (rebuild it with
    `rebuild`); with `wait` off, skip it when another process is writing it. The two parts
    are built side by side, each from a snapshot of its own taken once the lock is held (each
    records the generation it read): their reads run in two server processes, so on two cores
    a first build takes about as long as the longer part."""
    config = config or get_config()
    started = time.perf_counter()
    with snapshot(alias) as conn:
        row = conn.execute(sql.STATE, [[knowledge_base_id]]).fetchone()
    assert row is not None  # one row per base asked for
    identity, database, _, generation, _ = row
    folder = location(alias=alias, identity=identity, database=database).folder(
        config, knowledge_base_id)
    outcome = CatchUp(knowledge_base_id=knowledge_base_id, generation=generation)
    with writer_lock(folder, wait=wait) as held:
        if not held:
            outcome.lexical = outcome.vectors = "skipped"
            return outcome
        manifest = manifest_read(folder) or Manifest(knowledge_base_id=knowledge_base_id)
        failures: list[BaseException] = []

        def vectors_build() -> None:
            try:
                with snapshot(alias) as vector_conn:
                    vector_generation, log_start = _state(vector_conn, knowledge_base_id)
                    manifest.vectors = _vectors(
                        vector_conn, folder=folder, part=manifest.vectors, kb=knowledge_base_id,
                        generation=vector_generation, log_start=log_start, rebuild=rebuild,
                        progress=progress, outcome=outcome, indexed=vectors_indexed(config))
            except BaseException as exc:  # noqa: BLE001 - raised again by the caller's thread
                failures.append(exc)

        side = threading.Thread(target=vectors_build, name="search-index-vectors")
        side.start()
        try:
            with snapshot(alias) as conn:
                outcome.generation, log_start = _state(conn, knowledge_base_id)
                manifest.lexical = _lexical(conn, folder=folder, part=manifest.lexical,
                                            kb=knowledge_base_id, generation=outcome.generation,
                                            log_start=log_start, rebuild=rebuild,
                                            progress=progress, outcome=outcome)
        finally:
            side.join()
        if failures:
            raise failures[0]
        manifest_write(folder, manifest)
        folders_unused_remove(folder, manifest)
    if alias == DEFAULT_DB_ALIAS:
        _log_prune(alias=alias, knowledge_base_id=knowledge_base_id, manifest=manifest)
    outcome.seconds = round(time.perf_counter() - started, 3)
    return outcome


def _state(conn: psycopg.Connection, knowledge_base_id: int) -> tuple[int, int]:
    """(generation, log_start) of the base in `conn`'s snapshot."""
    with psycopg.Cursor(conn, row_factory=class_row(sql.StateRow)) as cursor:
        row = cursor.execute(sql.STATE, [[knowledge_base_id]]).fetchone()
    assert row is not None
    return int(row.generation), int(row.log_start)


def _usable(part: Part | None, *, folder: Path, generation: int, log_start: int) -> bool:
    """Whether a part can be brought to `generation` from the log: it exists, is not newer
    than the database, and the log still holds every change after it."""
    return (part is not None and (folder / part.folder).is_dir()
            and log_start - 1 <= part.generation <= generation)


def _changed(conn: psycopg.Connection, *, kb: int, since: int, limit: int) -> list[int]:
    rows = conn.execute(sql.DELTA, [[kb], [since], limit]).fetchall()
    return sorted(chunk_id for (chunk_id,) in rows)


def _lexical(conn: psycopg.Connection, *, folder: Path, part: Part | None, kb: int,
             generation: int, log_start: int, rebuild: bool, progress: Progress | None,
             outcome: CatchUp) -> Part:
    if not rebuild and part is not None and _usable(part, folder=folder, generation=generation,
                                                    log_start=log_start):
        if part.generation == generation:
            return part
        limit = max(LEXICAL_CATCH_UP_MIN, int(part.documents * LEXICAL_REBUILD_SHARE))
        changed = _changed(conn, kb=kb, since=part.generation, limit=limit + 1)
        if len(changed) <= limit:
            index = lexical_index.index_open(folder / part.folder)
            writer = lexical_index.writer_open(index)
            lexical_index.documents_delete(writer, changed)
            cursor = conn.execute(sql.CHUNK_TERMS_SOME, {"kb": kb, "ids": changed,
                                                         "heading_weight": HEADING_WEIGHT})
            lexical_index.documents_add(writer, cursor)
            writer.commit()
            writer.wait_merging_threads()
            index.reload()
            outcome.lexical, outcome.changed = "applied", len(changed)
            return Part(generation=generation, folder=part.folder,
                        documents=lexical_index.documents_count(index), built_at=time.time(),
                        rebuilt_at=part.rebuilt_at, build_seconds=part.build_seconds)
    started = time.perf_counter()
    name = f"lexical-{uuid.uuid4().hex[:12]}"
    index = lexical_index.index_create(folder / name)
    writer = lexical_index.writer_open(index)
    total = _chunk_count(conn, kb)
    done = 0
    with conn.cursor(name="search_index_terms") as cursor:
        cursor.itersize = BATCH
        cursor.execute(sql.CHUNK_TERMS_ALL, {"kb": kb, "heading_weight": HEADING_WEIGHT})
        while rows := cursor.fetchmany(BATCH):
            lexical_index.documents_add(writer, rows)
            done += len(rows)
            if progress:
                progress("lexical", done, total)
    writer.commit()
    writer.wait_merging_threads()
    outcome.lexical = "rebuilt"
    now = time.time()
    return Part(generation=generation, folder=name, documents=done, built_at=now,
                rebuilt_at=now, build_seconds=round(time.perf_counter() - started, 3))


def _vectors(conn: psycopg.Connection, *, folder: Path, part: Part | None, kb: int,
             generation: int, log_start: int, rebuild: bool, progress: Progress | None,
             outcome: CatchUp, indexed: tuple[str, str] | None) -> Part | None:
    if indexed is None:
        outcome.vectors = "none"
        return None
    provider, model = indexed
    if not rebuild and part is not None and (part.provider, part.model) == indexed and _usable(
            part, folder=folder, generation=generation, log_start=log_start):
        if part.generation == generation:
            return part
        limit = max(VECTOR_DELTA_MIN, int(part.documents * VECTOR_DELTA_SHARE))
        if len(_changed(conn, kb=kb, since=part.generation, limit=limit + 1)) <= limit:
            outcome.vectors = "delta"
            return part
    started = time.perf_counter()
    name = f"vectors-{uuid.uuid4().hex[:12]}"
    total = _chunk_count(conn, kb)

    def batches() -> Iterator[sparse_vectors.SparseRows]:
        done = 0
        with conn.cursor(name="search_index_vectors", binary=True) as cursor:
            cursor.itersize = BATCH
            cursor.execute(sql.BASE_VECTORS, [kb, provider, model, EMBEDDING_DIM])
            while rows := cursor.fetchmany(BATCH):
                done += len(rows)
                if progress:
                    progress("vectors", done, total)
                yield sparse_vectors.sparse_rows([chunk_id for chunk_id, _ in rows],
                                                 [encoded for _, encoded in rows])

    rows = sparse_vectors.vectors_write(folder / name, batches())
    outcome.vectors = "rebuilt"
    now = time.time()
    return Part(generation=generation, folder=name, documents=rows, built_at=now,
                rebuilt_at=now, build_seconds=round(time.perf_counter() - started, 3),
                provider=provider, model=model)


def _chunk_count(conn: psycopg.Connection, kb: int) -> int:
    row = conn.execute(sql.BASE_COUNTS, [kb, kb]).fetchone()
    return int(row[1]) if row else 0


def _log_prune(*, alias: str, knowledge_base_id: int, manifest: Manifest) -> None:
    """Drop the log rows both parts have read (on the primary; a failure only keeps them)."""
    parts = [part for part in (manifest.lexical, manifest.vectors) if part is not None]
    if not parts:
        return
    through = min(part.generation for part in parts)
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(sql.PRUNE, [knowledge_base_id, through, LOG_GRACE_SECONDS,
                                       knowledge_base_id])
    except Exception:  # noqa: BLE001 - pruning is housekeeping: the next catch-up retries
        logger.warning("could not prune the search index log of base %s", knowledge_base_id,
                       exc_info=True)


# The server's catch-ups: a search that finds a base's index missing or behind asks for one,
# run by one thread per process, never in the request. The thread is started by the first
# request of each process: gunicorn loads the site in its master (--preload) and forks the
# workers, which inherit no thread.
class _Background:
    def __init__(self) -> None:
        self.enabled = False
        self.pid: int | None = None
        self.lock = threading.Lock()
        self.requests: queue.Queue[tuple[int, str]] = queue.Queue()
        self.pending: set[tuple[int, str]] = set()
        self.started: dict[tuple[int, str], float] = {}  # when each base's last catch-up began

    def request(self, item: tuple[int, str]) -> bool:
        with self.lock:
            if self.pid != os.getpid():  # a new process: a new thread, a new queue
                self.pid = os.getpid()
                self.requests, self.pending, self.started = queue.Queue(), set(), {}
                threading.Thread(target=self.run, name="search-index", daemon=True).start()
            # A catch-up that keeps failing (a full disk) is not tried again at every search.
            if item in self.pending or time.monotonic() - self.started.get(
                    item, -math.inf) < CATCH_UP_INTERVAL_SECONDS:
                return False
            self.pending.add(item)
            self.started[item] = time.monotonic()
        self.requests.put(item)
        return True

    def run(self) -> None:
        requests = self.requests
        while True:
            knowledge_base_id, alias = item = requests.get()
            try:
                base_catch_up(knowledge_base_id=knowledge_base_id, alias=alias, wait=False)
            except Exception:  # noqa: BLE001 - searches use SQL until a later try works
                logger.warning("search index catch-up of base %s failed", knowledge_base_id,
                               exc_info=True)
            finally:
                with self.lock:
                    self.pending.discard(item)
                connections.close_all()


_background = _Background()


def background_enable() -> None:
    """Let this process's searches (and its children's) ask for catch-ups: the server's."""
    _background.enabled = True


def catch_up_request(*, knowledge_base_id: int, alias: str) -> bool:
    """Ask this process's background thread to bring the base's index up to date; False when
    the process runs none (a command, a test) or the base is already asked for."""
    if not _background.enabled:
        return False
    return _background.request((knowledge_base_id, alias))


def on_chunks_committed(sender: Any, *, knowledge_base_ids: list[int], **_: Any) -> None:
    """After a run that wrote chunks committed: bring those bases' indexes up to date in this
    process (a first ingest builds them here). Inside a transaction the writes are not
    committed yet: the searches score them as a delta until a later catch-up."""
    config = get_config()
    if config.rag_search_index != "on" or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return
    for knowledge_base_id in knowledge_base_ids:
        try:
            base_catch_up(knowledge_base_id=knowledge_base_id, config=config)
        except Exception:  # noqa: BLE001 - the index is a cache: the ingest itself succeeded
            logger.warning("search index catch-up of base %s failed; searches use SQL for it "
                           "until `rag index rebuild`", knowledge_base_id, exc_info=True)
