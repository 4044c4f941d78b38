"""What a search takes from the search index: candidates, and the chunks it must score itself.

PostgreSQL stays the judge: the index only proposes chunk ids, and the caller scores them, with
every chunk logged since the index's generation (the delta), in SQL in the search's own
snapshot, where deleted chunks and other bases' chunks are filtered out. So a stale index costs
candidates, never a wrong or missing result; an index that is missing, damaged, older than the
log or too far behind (more than DELTA_MAX chunks to score) is not used at all: the search
falls back to SQL alone and says why (`Unavailable`), and the server's background thread is
asked to catch up.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import tantivy
from psycopg.rows import class_row

from core.config import Config
from core.replicas import read_alias
from index import lexical_index, sparse_vectors, sql
from index.maintenance import Location, catch_up_request, location, vectors_indexed
from index.store import Manifest, manifest_read, manifest_stamp

logger = logging.getLogger("localrag.index")

# More chunks changed since the index's generation than this, and a search scores in SQL alone.
DELTA_MAX = 20_000


@dataclass(frozen=True)
class Unavailable:
    """The index could not answer for these bases: why, for explain and /health."""

    reason: str  # missing, behind_log, ahead, far_behind, damaged, off, not_sparse
    knowledge_base_id: int | None = None

    def explain(self) -> dict[str, Any]:
        return {"path": "sql", "reason": self.reason, "knowledge_base_id": self.knowledge_base_id}


@dataclass(frozen=True)
class Candidates:
    """Chunk ids the index proposes, and the delta the caller must score as well."""

    proposed: list[int]
    delta: list[int]
    generations: dict[int, int] = field(default_factory=dict)  # base -> index generation

    @property
    def chunk_ids(self) -> list[int]:
        return sorted(set(self.proposed) | set(self.delta))

    def explain(self) -> dict[str, Any]:
        return {"path": "index", "proposed": len(self.proposed), "delta": len(self.delta),
                "generations": {str(kb): generation
                                for kb, generation in self.generations.items()}}


@dataclass
class _Opened:
    stamp: tuple[int, int]
    manifest: Manifest
    lexical: tantivy.Index | None
    vectors: sparse_vectors.SparseVectors | None


_opened: dict[Path, _Opened] = {}
_opened_lock = threading.Lock()


def _open(folder: Path) -> _Opened | None:
    """The base's index as its manifest names it now, opened once per process and opened again
    when the manifest is replaced; None without a readable one."""
    stamp = manifest_stamp(folder)
    if stamp is None:
        return None
    with _opened_lock:
        cached = _opened.get(folder)
        if cached is not None and cached.stamp == stamp:
            return cached
    manifest = manifest_read(folder)
    if manifest is None:
        return None
    lexical = vectors = None
    try:
        if manifest.lexical is not None:
            if cached is not None and cached.lexical is not None and cached.manifest.lexical \
                    and cached.manifest.lexical.folder == manifest.lexical.folder:
                lexical = cached.lexical
                lexical.reload()  # caught up in place: its new commit
            else:
                lexical = lexical_index.index_open(folder / manifest.lexical.folder)
        if manifest.vectors is not None:
            if cached is not None and cached.vectors is not None and cached.manifest.vectors \
                    and cached.manifest.vectors.folder == manifest.vectors.folder:
                vectors = cached.vectors
            else:
                vectors = sparse_vectors.vectors_open(folder / manifest.vectors.folder)
    except Exception as exc:  # noqa: BLE001 - whatever tantivy or numpy raise: damaged
        logger.warning("search index in %s cannot be opened: %s", folder, exc)
        return None
    opened = _Opened(stamp=stamp, manifest=manifest, lexical=lexical, vectors=vectors)
    with _opened_lock:
        _opened[folder] = opened
    return opened


@dataclass(frozen=True)
class _Base:
    knowledge_base_id: int
    generation: int
    log_start: int


def _bases(cursor: psycopg.Cursor, knowledge_base_ids: Sequence[int]) -> tuple[Location,
                                                                                list[_Base]]:
    # Read by name on a cursor of its own, in `cursor`'s snapshot.
    with psycopg.Cursor(cursor.connection, row_factory=class_row(sql.StateRow)) as reading:
        reading.execute(sql.STATE, [list(knowledge_base_ids)])
        rows = reading.fetchall()
    alias = read_alias()
    if not rows:
        return location(alias=alias, identity="", database=""), []
    where = location(alias=alias, identity=rows[0].identity, database=rows[0].database)
    return where, [_Base(knowledge_base_id=row.knowledge_base_id, generation=row.generation,
                         log_start=row.log_start) for row in rows]


def _views(cursor: psycopg.Cursor, *, config: Config, knowledge_base_ids: Sequence[int],
           part: str) -> tuple[list[tuple[_Base, _Opened, int]], Unavailable | None]:
    """Each base's opened index and the generation of its `part`, or why one cannot serve."""
    where, bases = _bases(cursor, knowledge_base_ids)
    views = []
    for base in bases:
        folder = where.folder(config, base.knowledge_base_id)
        opened = _open(folder)
        chosen = getattr(opened.manifest, part) if opened is not None else None
        reason = None
        if opened is None or chosen is None:
            reason = "missing"
        elif chosen.generation > base.generation:
            reason = "ahead"  # the database went back (a restore or a rollback under it)
        elif chosen.generation < base.log_start - 1:
            reason = "behind_log"
        if reason is not None:
            catch_up_request(knowledge_base_id=base.knowledge_base_id, alias=where.alias)
            return [], Unavailable(reason=reason, knowledge_base_id=base.knowledge_base_id)
        assert opened is not None and chosen is not None
        if chosen.generation < base.generation:
            catch_up_request(knowledge_base_id=base.knowledge_base_id, alias=where.alias)
        views.append((base, opened, chosen.generation))
    return views, None


def _delta(cursor: psycopg.Cursor, views: list[tuple[_Base, _Opened, int]]) -> list[int] | None:
    behind = [(base.knowledge_base_id, generation) for base, _, generation in views
              if generation < base.generation]
    if not behind:
        return []
    cursor.execute(sql.DELTA, [[kb for kb, _ in behind], [generation for _, generation in behind],
                               DELTA_MAX + 1])
    delta = [chunk_id for (chunk_id,) in cursor.fetchall()]
    return None if len(delta) > DELTA_MAX else delta


def _serving(cursor: psycopg.Cursor, *, config: Config, knowledge_base_ids: Sequence[int],
             part: str) -> tuple[list[tuple[_Base, _Opened, int]], list[int]] | Unavailable:
    """Each base's opened index and the delta to score beside it, or why SQL alone ranks."""
    if config.rag_search_index != "on":
        return Unavailable(reason="off")
    views, unavailable = _views(cursor, config=config, knowledge_base_ids=knowledge_base_ids,
                                part=part)
    if unavailable is not None:
        return unavailable
    delta = _delta(cursor, views)
    if delta is None:
        return Unavailable(reason="far_behind")
    return views, delta


def _generations(views: list[tuple[_Base, _Opened, int]]) -> dict[int, int]:
    return {base.knowledge_base_id: generation for base, _, generation in views}


def lexical_candidates(cursor: psycopg.Cursor, *, config: Config,
                       knowledge_base_ids: Sequence[int], terms: Sequence[str],
                       limit: int) -> Candidates | Unavailable:
    """The chunks each base's lexical index ranks first for `terms` (at least
    RAG_SEARCH_INDEX_CANDIDATES, at least `limit`, plus one per chunk in the delta, which may
    stand in the index with its old terms), and the delta; read in `cursor`'s snapshot."""
    serving = _serving(cursor, config=config, knowledge_base_ids=knowledge_base_ids,
                       part="lexical")
    if isinstance(serving, Unavailable):
        return serving
    views, delta = serving
    width = max(config.rag_search_index_candidates, limit) + len(delta)
    proposed: list[int] = []
    try:
        for _, opened, _ in views:
            assert opened.lexical is not None  # the part exists: _views checked it
            proposed.extend(lexical_index.top_chunks(opened.lexical, terms=terms, limit=width))
    except (OSError, ValueError) as exc:
        logger.warning("lexical search index unreadable: %s", exc)
        return Unavailable(reason="damaged")
    return Candidates(proposed=proposed, delta=delta, generations=_generations(views))


def vector_candidates(cursor: psycopg.Cursor, *, config: Config, provider: str, model: str,
                      knowledge_base_ids: Sequence[int], vector: Sequence[float],
                      limit: int) -> Candidates | Unavailable:
    """The chunks nearest to `vector` in each base's sparse vector index, with every chunk
    within rounding of the `limit`-th, and the delta (never proposed from the index: its rows
    there may be old); read in `cursor`'s snapshot. A provider without a sparse index
    (`not_sparse`: a real model) takes retrieval's own vector path."""
    if config.rag_search_index == "on" and vectors_indexed(config) != (provider, model):
        return Unavailable(reason="not_sparse")
    serving = _serving(cursor, config=config, knowledge_base_ids=knowledge_base_ids,
                       part="vectors")
    if isinstance(serving, Unavailable):
        return serving
    views, delta = serving
    query = np.asarray(vector, dtype=np.float32)
    proposed: list[int] = []
    try:
        for _, opened, _ in views:
            assert opened.vectors is not None  # the part exists: _views checked it
            proposed.extend(sparse_vectors.nearest(opened.vectors, query=query, limit=limit,
                                                   exclude=set(delta)))
    except (OSError, ValueError) as exc:
        logger.warning("vector search index unreadable: %s", exc)
        return Unavailable(reason="damaged")
    return Candidates(proposed=proposed, delta=delta, generations=_generations(views))
