"""Recall of the HNSW index on the deployment's own vectors, and the ef_search that reaches
RAG_HNSW_TARGET_RECALL: measured by `rag db index` after a build and by `rag db index --status`,
stored in vector_index_tuning, read by index/vector_path.py on every search.

The queries are a fixed sample of the stored vectors themselves (the same chunks each time while
they exist: ordered by a hash of the chunk id): recall on synthetic vectors says little about
these (at 100k vectors and ef_search 100, 0.997 on clustered ones, 0.66 on hashed words of a Zipf
vocabulary: docs/benchmarks.md).
Each query's K nearest other chunks (the query's own chunk left out on both sides) come from the
exact scan and from the index at one ef_search; recall@K is the share of those exact neighbours
that the index found, a hit at the exact K-th distance counting as found (ties have no single
right answer). ef_search climbs a ladder until the target is met and one step more (MARGIN:
stored vectors are easier queries than questions), and every step is stored; searches take that
step above. Tried and left out: queries blended from two stored vectors. Their sum was harder
than questions on the clustered vectors by far (0.53 at ef_search 100 where questions got
0.999, so the ladder climbed to 1000), and a blend weighted 0.3 was easier than questions on
MiniLM (0.995 at 20 against 0.972): no blend stood for questions on both.

Cost: the exact side is one pass over the vectors in which every row is compared with every
query (about 0.7 µs per pair on one core, reading included: some 7 s for 100 queries over 100k
vectors), and only rows no farther than the index's own K-th result come back: the index's K
results are K real rows, so the true K nearest can be no farther. Each ladder step is one index
search per query, dearer as ef_search grows; a ladder cut short by a met target costs a few
seconds at 100k vectors, one that climbs to 1000 about half a minute (docs/benchmarks.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg
from django.db import transaction

from core.config import Config
from core.db import db_errors_translated
from index.vector_index import COUNT_VECTORS, HnswKey, hnsw_key_read, vector_index_status
from knowledge.db_schema import index_connection

K = 10
RECALL_SAMPLE = 100
# About 1.6 times the step before, up to the 1000 pgvector accepts.
EF_SEARCH_LADDER = (20, 40, 64, 100, 160, 250, 400, 640, 1000)
STALE_SHARE = 0.2
# Ladder steps searched above the first that meets the target. The stored vectors overstate what
# questions get: on all-MiniLM-L6-v2 vectors of SciFact (5,223 chunks, m 16, ef_construction
# 128) they gave recall@10 0.998 at ef_search 20, where 150 of its real questions got 0.972; at
# the next step, 40, the questions got 0.989. On clustered vectors at 100k the two agreed (0.997
# and 0.999 at 100), and the step above costs about a millisecond (docs/benchmarks.md).
MARGIN = 1

SAMPLE = """
SELECT e.chunk_id
FROM embeddings e
WHERE e.embedding_provider = %s AND e.embedding_model = %s AND vector_norm(e.embedding) > 0
ORDER BY md5(e.chunk_id::text), e.chunk_id
LIMIT %s
"""

# The settings of retrieval's own HNSW search (retrieval/sql.py HNSW_SETTINGS): recall is
# measured the way searches run.
HNSW_SETTINGS = """
SELECT set_config('hnsw.ef_search', %s, true),
       set_config('hnsw.iterative_scan', 'strict_order', true),
       set_config('enable_sort', 'off', true)
"""

# Every query's K nearest other chunks from the index, in one statement: the index scan runs
# once per query row, with that row's key as its search key. Ordered by the index's key as
# searches are (retrieval/sql.py); the distance reported is the full-precision one, which the
# exact side compares with.
HNSW_NEIGHBOURS = """
SELECT q.chunk_id, n.chunk_id, n.distance
FROM embeddings q
CROSS JOIN LATERAL (
  SELECT e.chunk_id, e.embedding <=> q.embedding AS distance
  FROM embeddings e
  WHERE e.embedding_provider = %(provider)s AND e.embedding_model = %(model)s
    AND e.chunk_id <> q.chunk_id
  ORDER BY {key} <=> {query_key}
  LIMIT %(k)s
) n
WHERE q.chunk_id = ANY(%(chunks)s)
  AND q.embedding_provider = %(provider)s AND q.embedding_model = %(model)s
"""

# Every row within its query's bound, in one pass over the vectors (no index can answer a
# distance filter; a zero vector's NaN distance passes no bound).
EXACT_NEIGHBOURS = """
WITH queries AS MATERIALIZED (
  SELECT s.chunk_id, s.embedding, b.bound
  FROM unnest(%(chunks)s::bigint[], %(bounds)s::float8[]) AS b(chunk_id, bound)
  JOIN embeddings s ON s.chunk_id = b.chunk_id
   AND s.embedding_provider = %(provider)s AND s.embedding_model = %(model)s
)
SELECT q.chunk_id, e.chunk_id, e.embedding <=> q.embedding
FROM embeddings e
JOIN queries q ON e.chunk_id <> q.chunk_id AND (e.embedding <=> q.embedding) <= q.bound
WHERE e.embedding_provider = %(provider)s AND e.embedding_model = %(model)s
"""

# clock_timestamp(), not now(): the time of the measurement, even inside a longer transaction.
TUNING_STORE = """
INSERT INTO vector_index_tuning (index_name, index_oid, embedding_provider, embedding_model, m,
                                 ef_construction, ef_searches, recalls, target_recall,
                                 sample_size, vectors, seconds, measured_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, clock_timestamp())
ON CONFLICT (index_name) DO UPDATE SET
  index_oid = EXCLUDED.index_oid, embedding_provider = EXCLUDED.embedding_provider,
  embedding_model = EXCLUDED.embedding_model, m = EXCLUDED.m,
  ef_construction = EXCLUDED.ef_construction, ef_searches = EXCLUDED.ef_searches,
  recalls = EXCLUDED.recalls, target_recall = EXCLUDED.target_recall,
  sample_size = EXCLUDED.sample_size, vectors = EXCLUDED.vectors, seconds = EXCLUDED.seconds,
  measured_at = EXCLUDED.measured_at
RETURNING measured_at
"""

# The valid index of one name with its measurement, if that measured this very relation: one
# catalogue lookup and one primary-key lookup.
INDEX_FACTS = """
SELECT c.reltuples, format_type(k.atttypid, NULL), k.atttypmod, t.ef_searches, t.recalls,
       t.target_recall, t.sample_size, t.vectors, t.seconds, t.measured_at
FROM pg_class c
JOIN pg_index i ON i.indexrelid = c.oid
JOIN pg_attribute k ON k.attrelid = c.oid AND k.attnum = 1
LEFT JOIN vector_index_tuning t ON t.index_name = c.relname AND t.index_oid = c.oid
WHERE c.relname = %s AND i.indrelid = 'embeddings'::regclass AND i.indisvalid
"""


@dataclass(frozen=True)
class RecallStep:
    ef_search: int
    recall: float  # recall@K against the exact scan, 0..1


@dataclass(frozen=True)
class VectorIndexTuning:
    """One index's recall measurement: every ef_search tried, in the order tried."""

    steps: tuple[RecallStep, ...]
    target_recall: float  # RAG_HNSW_TARGET_RECALL when measured: where the ladder stopped
    sample_size: int
    vectors: int  # the provider/model's vectors when measured
    seconds: float
    measured_at: datetime

    def chosen(self, *, target: float) -> RecallStep:
        """One ladder step above the smallest ef_search tried that reaches `target` (MARGIN),
        where that step was measured and reaches it too; else that smallest one; else the last
        (largest) tried."""
        met = next((index for index, step in enumerate(self.steps) if step.recall >= target),
                   None)
        if met is None:
            return self.steps[-1]
        above = self.steps[met + 1:met + 1 + MARGIN]
        return above[-1] if len(above) == MARGIN and above[-1].recall >= target else (
            self.steps[met])


@dataclass(frozen=True)
class IndexFacts:
    """What retrieval reads before a search: the valid index and its measurement, if any."""

    vectors: int  # pg_class.reltuples: an estimate, exact right after a build
    key: HnswKey | None  # what searches must order by to use it; None: not a key we build
    tuning: VectorIndexTuning | None

    @property
    def stale(self) -> bool:
        """Measured when the index held a count of vectors more than STALE_SHARE away from
        today's: the graph has changed enough for its recall to have moved."""
        return self.tuning is not None and (
            abs(self.vectors - self.tuning.vectors) > STALE_SHARE * max(self.tuning.vectors, 1))


def recall_text(share: float) -> str:
    """Three decimals, rounded down: 0.9795 shows as 0.979, never as a target it missed."""
    return f"{math.floor(share * 1000 + 1e-9) / 1000:.3f}"


def vector_index_facts(*, conn: psycopg.Connection, index_name: str) -> IndexFacts | None:
    """The valid HNSW index `index_name` and its recall measurement; None without a valid one."""
    with psycopg.Cursor(conn) as cursor:
        row = cursor.execute(INDEX_FACTS, [index_name]).fetchone()
    if row is None:
        return None
    (reltuples, key_type, key_typmod, ef_searches, recalls, target, sample, vectors, seconds,
     measured_at) = row
    tuning = None if ef_searches is None else VectorIndexTuning(
        steps=tuple(RecallStep(ef, recall) for ef, recall in zip(ef_searches, recalls,
                                                                 strict=True)),
        target_recall=target, sample_size=sample, vectors=vectors, seconds=seconds,
        measured_at=measured_at)
    return IndexFacts(vectors=max(0, int(reltuples)), key=hnsw_key_read(key_type, key_typmod),
                      tuning=tuning)


def vector_index_tuning_current(*, index_name: str) -> VectorIndexTuning | None:
    """The stored measurement of the valid index `index_name` while it is not stale; None when
    the index needs measuring (none stored, or measured at a quite different size)."""
    with db_errors_translated():
        facts = vector_index_facts(conn=index_connection(), index_name=index_name)
    return None if facts is None or facts.stale else facts.tuning


def vector_index_tune(*, config: Config, sample: int = RECALL_SAMPLE,
                      ladder: Sequence[int] = EF_SEARCH_LADDER,
                      progress: Callable[[RecallStep], None] | None = None
                      ) -> VectorIndexTuning | None:
    """Measure recall@K of the configured provider/model's HNSW index on `sample` of its own
    vectors, at each ef_search of `ladder` until RAG_HNSW_TARGET_RECALL is reached, and store
    the measurement. None when there is no valid index or no vector to measure with."""
    provider, model = config.embedding_provider, config.embedding_model
    index = next((i for i in vector_index_status(config=config) if i.current and i.valid), None)
    if index is None or index.key is None:
        return None
    started = time.monotonic()
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn) as cursor:
            chunks = [row[0] for row in cursor.execute(SAMPLE, [provider, model, sample])]
            row = cursor.execute(COUNT_VECTORS, [provider, model]).fetchone()
            assert row is not None  # count(*) returns a row
            vectors = row[0]
        steps: list[RecallStep] = []
        exact: dict[int, list[tuple[float, int]]] | None = None
        for ef_search in ladder:
            found = _hnsw_neighbours(conn, provider=provider, model=model, chunks=chunks,
                                     ef_search=ef_search, key=index.key)
            if exact is None:
                exact = _exact_neighbours(conn, provider=provider, model=model, bounds={
                    chunk: found[chunk][-1][0] if len(found.get(chunk, ())) == K else math.inf
                    for chunk in chunks})
            recall = _recall(exact=exact, found=found)
            if recall is None:
                return None
            steps.append(RecallStep(ef_search=ef_search, recall=recall))
            if progress is not None:
                progress(steps[-1])
            if sum(step.recall >= config.rag_hnsw_target_recall for step in steps) > MARGIN:
                break  # met, and measured MARGIN steps above
        seconds = time.monotonic() - started
        with psycopg.Cursor(conn) as cursor:
            row = cursor.execute(TUNING_STORE, [
                index.name, index.oid, provider, model, index.m, index.ef_construction,
                [step.ef_search for step in steps], [step.recall for step in steps],
                config.rag_hnsw_target_recall, len(chunks), vectors, seconds]).fetchone()
            assert row is not None  # the upsert returns its row
            measured_at = row[0]
    return VectorIndexTuning(steps=tuple(steps), target_recall=config.rag_hnsw_target_recall,
                             sample_size=len(chunks), vectors=vectors, seconds=seconds,
                             measured_at=measured_at)


def _hnsw_neighbours(conn: psycopg.Connection, *, provider: str, model: str,
                     chunks: list[int], ef_search: int,
                     key: HnswKey) -> dict[int, list[tuple[float, int]]]:
    """Each query chunk's K nearest other chunks by the index: (distance, chunk id), nearest
    first. Rolled back like a search, which also undoes the settings."""
    with transaction.atomic(), psycopg.Cursor(conn) as cursor:
        cursor.execute(HNSW_SETTINGS, [str(ef_search)])
        # Never a generic plan: only the bound values prove the partial index's predicate.
        statement = HNSW_NEIGHBOURS.format(key=key.of("e.embedding"),
                                           query_key=key.of("q.embedding"))
        rows = cursor.execute(statement, {"provider": provider, "model": model, "k": K,
                                          "chunks": chunks}, prepare=False).fetchall()
        transaction.set_rollback(True)
    return _nearest(rows)


def _exact_neighbours(conn: psycopg.Connection, *, provider: str, model: str,
                      bounds: dict[int, float]) -> dict[int, list[tuple[float, int]]]:
    """Each query chunk's K nearest other chunks by the exact distance, ties by chunk id, from
    the rows within the query's bound."""
    with psycopg.Cursor(conn) as cursor:
        rows = cursor.execute(EXACT_NEIGHBOURS, {
            "provider": provider, "model": model, "chunks": list(bounds),
            "bounds": list(bounds.values())}).fetchall()
    return _nearest(rows)


def _nearest(rows: list[tuple[int, int, float]]) -> dict[int, list[tuple[float, int]]]:
    by_query: dict[int, list[tuple[float, int]]] = {}
    for query, chunk, distance in rows:
        if not math.isnan(distance):
            by_query.setdefault(query, []).append((distance, chunk))
    return {query: sorted(found)[:K] for query, found in by_query.items()}


def _recall(*, exact: dict[int, list[tuple[float, int]]],
            found: dict[int, list[tuple[float, int]]]) -> float | None:
    """The share of all the exact neighbours that the index found (an index hit no farther
    than its query's exact K-th distance counts); None when no query has a neighbour. One
    division of two counts: 98 of 100 is exactly the 0.98 a target is written as."""
    hits = slots = 0
    for query, nearest in exact.items():
        farthest = nearest[-1][0]
        hits += min(len(nearest), sum(1 for distance, _ in found.get(query, ())
                                      if distance <= farthest))
        slots += len(nearest)
    return hits / slots if slots else None
