"""`rag db index`: the approximate (HNSW) index over the current embedding config's vectors.

One partial index per provider/model, not one over the whole table. The table holds the vectors
of every provider/model ingested so far (a provider switch keeps the old ones), and only one set
is ever searched at a time. A partial index (WHERE embedding_provider = … AND embedding_model
= …) holds exactly the vectors a query may return: a query filtering on the same values can use it
(the planner proves the predicate from the bound values), nothing is thrown away after the index
scan, and the graph never links two models' unrelated vector spaces. One shared index would make
every search walk, then discard, the other models' vectors (pgvector filters after the index
scan) and would cost memory and build time for vectors nobody searches. The dimension is not in
the predicate: the column is vector(1024), so every row has the same one.

The index is not built on that column but on an expression: the model's own dimensions in half
precision, `subvector(embedding, 1, D)::halfvec(D)` (HnswKey). Every provider zero-pads its
vectors to 1,024 dimensions, which leaves every cosine unchanged, so cutting the padding off
changes no distance; half precision changes a cosine by about 1e-3 at most on unit vectors, which
moves the graph's neighbours, not the scores: searches order by the key but report the full
precision distance and break ties on it (retrieval/sql.py). A 384-dimensional model's graph then
holds 768 bytes per vector instead of 4,096: it fits in memory 5 times sooner, and each distance
reads less. An index from before (on the column itself) is still searched as it is, and
`rag db index` rebuilds it with the new key.

The DDL cannot take bound parameters, so the statements below are composed with
psycopg.sql: the index name is derived from a hash (never from the input's characters) and the
provider/model are quoted as literals. Retrieval reads the facts through
index/vector_path.py; it never builds or drops anything.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from django.db import transaction
from psycopg import sql as pgsql

from core.config import EMBEDDING_DIM, Config, ConfigError
from core.db import db_errors_translated
from embeddings import embedding_native_dim
from knowledge.db_schema import index_connection

INDEX_PREFIX = "idx_embeddings_hnsw_"
# An interrupted build leaves its index under this suffix (invalid after a failed CONCURRENTLY):
# the next build or drop removes it, and retrieval never looks it up.
BUILDING_SUFFIX = "_new"
PROGRESS_INTERVAL_S = 0.5
MIB = 1024 * 1024
# Never below PostgreSQL's own default, never above this share of the machine's memory.
MAINTENANCE_WORK_MEM_FLOOR = 64 * MIB
MAINTENANCE_WORK_MEM_RAM_SHARE = 4

# Every HNSW index on the embeddings table, ours (by name) or not, with the type of its key
# ("halfvec" or "vector") and that type's dimensions.
INDEXES = """
SELECT c.relname, coalesce(pg_get_expr(i.indpred, i.indrelid), ''), i.indisvalid,
       pg_relation_size(c.oid), coalesce(c.reloptions, ARRAY[]::text[]), c.reltuples, c.oid,
       format_type(k.atttypid, NULL), k.atttypmod
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_am a ON a.oid = c.relam
JOIN pg_attribute k ON k.attrelid = c.oid AND k.attnum = 1
WHERE i.indrelid = 'embeddings'::regclass AND a.amname = 'hnsw'
ORDER BY c.relname
"""

# Whether any of a provider/model's vectors is non-zero past the model's own dimensions: then
# the key keeps every dimension (vectors stored under another EMBEDDING_DIMENSIONS, or a provider
# that does not pad). One pass over the vectors, before a build that reads them all anyway.
TAIL_NONZERO = """
SELECT EXISTS (
  SELECT 1 FROM embeddings
  WHERE embedding_provider = %s AND embedding_model = %s
    AND vector_norm(subvector(embedding, %s, %s)) > 0
)
"""

COUNT_VECTORS = """
SELECT count(*) FROM embeddings WHERE embedding_provider = %s AND embedding_model = %s
"""

# The graph is built in memory while it fits in maintenance_work_mem (pgvector says NOTICE
# "hnsw graph no longer fits into maintenance_work_mem" and gets several times slower after).
SET_MAINTENANCE_WORK_MEM = "SELECT set_config('maintenance_work_mem', %s, false)"
RESET_MAINTENANCE_WORK_MEM = "RESET maintenance_work_mem"

PROGRESS = """
SELECT phase, tuples_done, tuples_total
FROM pg_stat_progress_create_index
WHERE pid = %s
"""

BUILDS_RUNNING = """
SELECT p.pid, p.phase, p.tuples_done, p.tuples_total
FROM pg_stat_progress_create_index p
WHERE p.relid = 'embeddings'::regclass
"""

CREATE_INDEX = pgsql.SQL(
    "CREATE INDEX {concurrently} {name} ON embeddings "
    "USING hnsw ({key} {opclass}) WITH (m = {m}, ef_construction = {ef}) "
    "WHERE embedding_provider = {provider} AND embedding_model = {model}")
DROP_INDEX = pgsql.SQL("DROP INDEX {concurrently} IF EXISTS {name}")
# A dropped index's recall measurement (index/vector_recall.py) goes with it.
TUNING_FORGET = "DELETE FROM vector_index_tuning WHERE index_name = %s"
RENAME_INDEX = pgsql.SQL("ALTER INDEX {old} RENAME TO {new}")


@dataclass(frozen=True)
class HnswKey:
    """What an HNSW index is built on, and so what a search must order by to use it: the first
    `dims` components in half precision, or (an index built before) the column itself."""

    half: bool
    dims: int

    def of(self, vector: str) -> str:
        """The key of `vector`, an SQL expression of type vector (a column or a parameter).
        The planner uses the index only when a search orders by this very expression."""
        if not self.half:
            return vector
        dims = int(self.dims)  # composed into SQL: never anything but a number
        return f"(subvector({vector}, 1, {dims})::halfvec({dims}))"

    @property
    def opclass(self) -> str:
        return "halfvec_cosine_ops" if self.half else "vector_cosine_ops"

    def describe(self) -> str:
        return (f"half precision, {self.dims} dimensions" if self.half
                else f"full precision, {self.dims} dimensions")


def hnsw_key_read(type_name: str | None, typmod: int | None) -> HnswKey | None:
    """The key of an index whose first column has this type (the catalogue's format_type and
    atttypmod); None for a key this module does not build (no search may rely on it)."""
    if type_name == "halfvec" and typmod is not None and 0 < typmod <= EMBEDDING_DIM:
        return HnswKey(half=True, dims=typmod)
    if type_name == "vector":
        return HnswKey(half=False, dims=EMBEDDING_DIM)
    return None


@dataclass(frozen=True)
class VectorIndex:
    """One HNSW index on the embeddings table, as the catalogue describes it."""

    name: str
    predicate: str  # its WHERE clause as PostgreSQL prints it
    valid: bool  # False: a CONCURRENTLY build failed or is still running
    size_bytes: int
    m: int | None
    ef_construction: int | None
    vectors: int  # pg_class.reltuples: an estimate, exact right after a build
    current: bool  # the index of the configured provider/model
    oid: int  # a rebuild makes a new relation: what ties a recall measurement to this graph
    key: HnswKey | None  # None: not an index this module builds


@dataclass(frozen=True)
class IndexBuild:
    name: str
    action: str  # "created", "rebuilt" (parameters changed or left invalid) or "unchanged"
    vectors: int
    seconds: float
    maintenance_work_mem_mb: int  # what the build ran with; 0 when nothing was built
    key: HnswKey


@dataclass(frozen=True)
class BuildProgress:
    phase: str  # pg_stat_progress_create_index.phase, e.g. "building index: loading tuples"
    done: int
    total: int


def vector_index_name(*, provider: str, model: str) -> str:
    """The index name of one provider/model: a hash, so no input character reaches the DDL."""
    digest = hashlib.sha256(f"{provider}\0{model}".encode()).hexdigest()[:16]
    return f"{INDEX_PREFIX}{digest}"


def vector_index_status(*, config: Config) -> list[VectorIndex]:
    """Every HNSW index on the embeddings table, the configured provider/model's marked."""
    current = vector_index_name(provider=config.embedding_provider, model=config.embedding_model)
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn) as cursor:
            rows = cursor.execute(INDEXES).fetchall()
    return [_described(row, current=current) for row in rows]


def vector_index_builds_running() -> list[BuildProgress]:
    """CREATE INDEX statements on the embeddings table running now (any session of the role)."""
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn) as cursor:
            rows = cursor.execute(BUILDS_RUNNING).fetchall()
    return [BuildProgress(phase=phase, done=done or 0, total=total or 0)
            for _pid, phase, done, total in rows]


def vector_index_build(*, config: Config, concurrently: bool = False,
                       progress: Callable[[BuildProgress], None] | None = None,
                       key: HnswKey | None = None) -> IndexBuild:
    """Build the configured provider/model's HNSW index with HNSW_M and HNSW_EF_CONSTRUCTION;
    nothing to do when a valid one with those parameters and the same key exists.

    The key, unless given (benchmarks compare keys), is the configured model's own dimensions
    in half precision (EMBEDDING_DIM when they cannot be read, or when a stored vector is
    non-zero past them). A new or changed index is built under a temporary name and swapped in
    at the end, so a rebuild never leaves searches without an index. `concurrently` lets ingest
    keep writing during the build (CREATE INDEX CONCURRENTLY: slower, and not inside a
    transaction)."""
    provider, model = config.embedding_provider, config.embedding_model
    name = vector_index_name(provider=provider, model=model)
    started = time.monotonic()
    with db_errors_translated():
        conn = index_connection()
        key = key or HnswKey(half=True, dims=_key_dims(conn, config=config))
        existing = {index.name: index for index in vector_index_status(config=config)}
        old = existing.get(name)
        if old is not None and old.valid and old.key == key and (old.m, old.ef_construction) == (
                config.hnsw_m, config.hnsw_ef_construction):
            return IndexBuild(name=name, action="unchanged", vectors=old.vectors,
                              seconds=time.monotonic() - started, maintenance_work_mem_mb=0,
                              key=key)
        vectors = _vectors_count(conn, provider=provider, model=model)
        memory = _maintenance_work_mem(vectors=vectors, m=config.hnsw_m, dims=key.dims)
        building = name + BUILDING_SUFFIX
        keyword = pgsql.SQL("CONCURRENTLY" if concurrently else "")
        with psycopg.Cursor(conn) as cursor:
            cursor.execute(DROP_INDEX.format(concurrently=keyword,
                                             name=pgsql.Identifier(building)))
            cursor.execute(SET_MAINTENANCE_WORK_MEM, [f"{memory // MIB}MB"])
            try:
                with _progress_watched(conn, progress, expected=vectors):
                    cursor.execute(CREATE_INDEX.format(
                        concurrently=keyword, name=pgsql.Identifier(building),
                        key=pgsql.SQL(key.of("embedding")), opclass=pgsql.SQL(key.opclass),
                        m=pgsql.Literal(config.hnsw_m),
                        ef=pgsql.Literal(config.hnsw_ef_construction),
                        provider=pgsql.Literal(provider), model=pgsql.Literal(model)))
            finally:
                # After a failed build inside a caller's transaction, that transaction is
                # aborted and takes the setting with it: RESET would only mask the error.
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.INERROR:
                    cursor.execute(RESET_MAINTENANCE_WORK_MEM)
            with transaction.atomic():
                cursor.execute(DROP_INDEX.format(concurrently=pgsql.SQL(""),
                                                 name=pgsql.Identifier(name)))
                cursor.execute(RENAME_INDEX.format(old=pgsql.Identifier(building),
                                                   new=pgsql.Identifier(name)))
    return IndexBuild(name=name, action="created" if old is None else "rebuilt", vectors=vectors,
                      seconds=time.monotonic() - started, maintenance_work_mem_mb=memory // MIB,
                      key=key)


def vector_index_drop(*, config: Config, every: bool = False) -> list[str]:
    """Drop the configured provider/model's HNSW index (with `every`: every index this command
    built, whatever its provider/model); returns the names dropped."""
    current = vector_index_name(provider=config.embedding_provider, model=config.embedding_model)
    names = [index.name for index in vector_index_status(config=config)
             if index.name.startswith(INDEX_PREFIX)
             and (every or index.name in (current, current + BUILDING_SUFFIX))]
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn) as cursor:
            for name in names:
                cursor.execute(DROP_INDEX.format(concurrently=pgsql.SQL(""),
                                                 name=pgsql.Identifier(name)))
                cursor.execute(TUNING_FORGET, [name])
    return names


def _described(row: tuple, *, current: str) -> VectorIndex:
    name, predicate, valid, size, options, reltuples, oid, key_type, key_typmod = row
    settings = dict(option.split("=", 1) for option in options)
    return VectorIndex(name=name, predicate=predicate, valid=valid, size_bytes=size,
                       m=_int_or_none(settings.get("m")),
                       ef_construction=_int_or_none(settings.get("ef_construction")),
                       vectors=max(0, int(reltuples)), current=name == current, oid=oid,
                       key=hnsw_key_read(key_type, key_typmod))


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _vectors_count(conn: psycopg.Connection, *, provider: str, model: str) -> int:
    with psycopg.Cursor(conn) as cursor:
        row = cursor.execute(COUNT_VECTORS, [provider, model]).fetchone()
        assert row is not None  # count(*) returns a row
        return row[0]


def _key_dims(conn: psycopg.Connection, *, config: Config) -> int:
    """The dimensions the key keeps: the configured model's own, unless a stored vector of
    this provider/model is non-zero past them (then all EMBEDDING_DIM)."""
    try:
        dims = embedding_native_dim(config=config)
    except ConfigError:
        dims = None  # a provider this installation does not know: keep every dimension
    if dims is None or not 0 < dims < EMBEDDING_DIM:
        return EMBEDDING_DIM
    with psycopg.Cursor(conn) as cursor:
        row = cursor.execute(TAIL_NONZERO, [config.embedding_provider, config.embedding_model,
                                            dims + 1, EMBEDDING_DIM - dims]).fetchone()
    return EMBEDDING_DIM if row is not None and row[0] else dims


def _maintenance_work_mem(*, vectors: int, m: int, dims: int) -> int:
    """Enough for the whole graph in memory (the half-precision key, 2·m neighbours of 16
    bytes on layer 0 and bookkeeping per element, plus a quarter), within [64 MiB, a quarter of
    this machine's memory]. The embedded server runs on this machine; another server gets the
    same bound."""
    needed = int(vectors * (2 * dims + 8 + 2 * m * 16 + 256) * 1.25)
    ceiling = max(MAINTENANCE_WORK_MEM_FLOOR, _physical_memory() // MAINTENANCE_WORK_MEM_RAM_SHARE)
    return max(MAINTENANCE_WORK_MEM_FLOOR, min(needed, ceiling))


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 * 1024 * MIB


@contextmanager
def _progress_watched(conn: psycopg.Connection, progress: Callable[[BuildProgress], None] | None,
                      *, expected: int) -> Iterator[None]:
    """While the block runs, poll pg_stat_progress_create_index for the building session from a
    second connection (the first is busy with CREATE INDEX) and hand each reading to
    `progress`; `expected` stands in for tuples_total, which pgvector leaves at 0. Nothing is
    polled without a callback."""
    if progress is None:
        yield
        return
    pid = conn.info.backend_pid
    dsn, password = conn.info.dsn, conn.info.password
    stop = threading.Event()

    def watch() -> None:
        try:
            with psycopg.connect(dsn, password=password, autocommit=True) as watcher:
                while not stop.wait(PROGRESS_INTERVAL_S):
                    row = watcher.execute(PROGRESS, [pid]).fetchone()
                    if row is not None:
                        progress(BuildProgress(phase=row[0], done=row[1] or 0,
                                               total=row[2] or expected))
        except psycopg.Error:
            return  # progress is a courtesy: the build's own outcome is what counts

    thread = threading.Thread(target=watch, name="hnsw-build-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
