"""What `rag index status`, /health and the status page say about the search indexes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS
from psycopg.rows import class_row

from core.config import Config
from index import sql
from index.maintenance import location, snapshot, vectors_indexed
from index.search import DELTA_MAX
from index.store import folder_bytes, manifest_read


@dataclass(frozen=True)
class BaseIndex:
    """One base's index as this machine holds it."""

    knowledge_base_id: int
    slug: str
    generation: int  # the database's
    lexical_generation: int | None  # the index's; None: none built
    vector_generation: int | None  # None: none built, or not a sparse-indexed provider
    chunks: int  # in the database
    documents: int  # in the database
    indexed: int  # chunks in the lexical index
    bytes: int  # on disk
    built_at: float | None  # last build or catch-up (epoch seconds)
    rebuilt_at: float | None
    build_seconds: float | None  # of the last full build
    state: str  # ok, behind (searches score the delta), missing, stale (SQL until rebuilt),
    # empty (no chunks: nothing to index)
    folder: str

    @property
    def lag(self) -> int | None:
        if self.lexical_generation is None:
            return None
        return self.generation - self.lexical_generation

    def as_dict(self) -> dict[str, Any]:
        return {"knowledge_base": self.slug, "knowledge_base_id": self.knowledge_base_id,
                "state": self.state, "generation": self.generation,
                "lexical_generation": self.lexical_generation,
                "vector_generation": self.vector_generation, "lag": self.lag,
                "chunks": self.chunks, "documents": self.documents, "indexed": self.indexed,
                "bytes": self.bytes, "built_at": self.built_at, "rebuilt_at": self.rebuilt_at,
                "build_seconds": self.build_seconds, "folder": self.folder}


def index_status(*, config: Config, alias: str = DEFAULT_DB_ALIAS, counts: bool = True,
                 knowledge_base_ids: list[int] | None = None) -> list[BaseIndex]:
    """Every base's index on this machine (those of `knowledge_base_ids` only, when given), for
    the database `alias` reads; without `counts`, no chunk or document is counted (0)."""
    found = []
    with snapshot(alias) as conn:
        bases = [(kb, slug) for kb, slug in conn.execute(sql.BASES).fetchall()
                 if knowledge_base_ids is None or kb in knowledge_base_ids]
        ids = [kb for kb, _ in bases]
        with psycopg.Cursor(conn, row_factory=class_row(sql.StateRow)) as cursor:
            states = {row.knowledge_base_id: row
                      for row in cursor.execute(sql.STATE, [ids]).fetchall()}
        for kb, slug in bases:
            state_row = states[kb]
            generation, log_start = state_row.generation, state_row.log_start
            folder = location(alias=alias, identity=state_row.identity,
                              database=state_row.database).folder(config, kb)
            documents = chunks = 0
            if counts:
                documents, chunks = conn.execute(sql.BASE_COUNTS, [kb, kb]).fetchone() or (0, 0)
            manifest = manifest_read(folder)
            lexical = manifest.lexical if manifest else None
            vectors = manifest.vectors if manifest else None
            state = "ok"
            if lexical is None or not (folder / lexical.folder).is_dir():
                # A base without chunks needs no index: nothing to search.
                has_chunks = chunks > 0 if counts else bool(
                    (conn.execute(sql.BASE_HAS_CHUNKS, [kb]).fetchone() or (False,))[0])
                state = "missing" if has_chunks else "empty"
            elif not log_start - 1 <= lexical.generation <= generation:
                state = "stale"
            elif lexical.generation < generation:
                behind = conn.execute(sql.DELTA, [[kb], [lexical.generation],
                                                  DELTA_MAX + 1]).fetchall()
                state = "stale" if len(behind) > DELTA_MAX else "behind"
            if state == "ok" and vectors_indexed(config) is not None and vectors is None:
                state = "missing"
            found.append(BaseIndex(
                knowledge_base_id=kb, slug=slug, generation=generation,
                lexical_generation=lexical.generation if lexical else None,
                vector_generation=vectors.generation if vectors else None,
                chunks=int(chunks), documents=int(documents),
                indexed=lexical.documents if lexical else 0, bytes=folder_bytes(folder),
                built_at=lexical.built_at if lexical else None,
                rebuilt_at=lexical.rebuilt_at if lexical else None,
                # The parts are built side by side: the longer one is the build's time.
                build_seconds=max(part.build_seconds for part in (lexical, vectors) if part)
                if lexical else None, state=state,
                folder=str(folder)))
    return found


def health_section(*, config: Config, knowledge_base_ids: list[int] | None,
                   admin: bool) -> dict[str, Any]:
    """/health's `search_index`: the setting, and whether every base the caller reads has a
    usable index; which bases search in SQL alone (missing or stale indexes) only to a caller
    who reads them. Without a caller (a probe), the state alone."""
    if config.rag_search_index != "on":
        return {"setting": "off", "state": "off",
                "reason": "RAG_SEARCH_INDEX=off: every search ranks in SQL"}
    bases = index_status(config=config, counts=False,
                         knowledge_base_ids=None if admin else knowledge_base_ids)
    fallback = [base.slug for base in bases if base.state in ("missing", "stale")]
    behind = [base.slug for base in bases if base.state == "behind"]
    section: dict[str, Any] = {"setting": "on", "state": "degraded" if fallback else "ok"}
    if knowledge_base_ids is not None or admin:
        section.update(
            sql_fallback=fallback, behind=behind,
            reason=(f"no usable search index for {', '.join(fallback)}: those searches rank "
                    "in SQL (exact, slower) until the index is rebuilt (`rag index rebuild`)"
                    if fallback else "every base's search index is usable"))
    return section
