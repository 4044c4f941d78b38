"""The vector channel on the real database: the exact scan unchanged, the HNSW index's recall,
iterative scans, provider isolation, the `auto` rule, and `rag db index` / `--drop` / `--status`
(the recall measurement itself: tests/knowledge/test_vector_recall.py)."""

from __future__ import annotations

import dataclasses
import json
from io import StringIO

import numpy as np
import psycopg
import pytest
from django.core.management import call_command
from pgvector import Vector

from access.callers import scope_all
from core.config import get_config
from embeddings import FakeLexicalEmbedder
from index.vector_index import (
    BUILDING_SUFFIX,
    HnswKey,
    vector_index_build,
    vector_index_name,
    vector_index_status,
)
from index.vector_recall import vector_index_tune
from knowledge.db_schema import index_connection
from retrieval import sql
from retrieval.vector import RetrievalNotReady, vector_path_choose, vector_search
from tests.harness import config_changed
from tests.retrieval import first_release

EMBEDDER = FakeLexicalEmbedder()
OTHER = ("local-qwen3", "Qwen/Qwen3-Embedding-0.6B")
NOTES, CHUNKS_PER_NOTE, CLUSTERS = 150, 10, 15

# Clustered synthetic vectors made inside PostgreSQL (a random walk would be HNSW's worst case,
# and nothing like notes): a cluster direction, a note direction, a chunk direction.
HELPERS = [
    "SELECT setseed(0.25)",
    """CREATE OR REPLACE FUNCTION pg_temp.unit_vector() RETURNS vector LANGUAGE sql VOLATILE AS
       $$ SELECT l2_normalize(array_agg(random_normal())::vector)
          FROM generate_series(1, 1024) $$""",
    """CREATE OR REPLACE FUNCTION pg_temp.scaled(v vector, k real) RETURNS vector LANGUAGE sql
       IMMUTABLE AS $$ SELECT v * array_fill(k, ARRAY[1024])::vector $$""",
    "DROP TABLE IF EXISTS pg_temp.test_clusters, pg_temp.test_notes",
    """CREATE TEMP TABLE test_clusters AS
       SELECT g AS id, pg_temp.unit_vector() AS v FROM generate_series(0, %s - 1) g""",
]
DOCUMENTS = """
INSERT INTO documents (vault_path, file_path, relative_path, content_hash)
SELECT '/t', '/t/n' || g || '.md', 'n' || g || '.md', g::text FROM generate_series(0, %s - 1) g
"""
CHUNKS = """
INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path, heading_path,
                    content_hash)
SELECT d.id, p, 'chunk ' || p, d.file_path, d.relative_path, ARRAY['Note', 'Part ' || p],
       d.content_hash || '-' || p
FROM documents d CROSS JOIN generate_series(0, %s - 1) p WHERE d.vault_path = '/t'
"""
NOTE_VECTORS = """
CREATE TEMP TABLE test_notes AS
SELECT d.id, k.v + pg_temp.scaled(pg_temp.unit_vector(), 0.6) AS v
FROM documents d JOIN test_clusters k ON k.id = d.content_hash::int %% %s
WHERE d.vault_path = '/t'
"""
EMBEDDINGS = """
INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim, embedding)
SELECT c.id, %s, %s, 1024, l2_normalize(n.v + pg_temp.scaled(pg_temp.unit_vector(), 0.6))
FROM chunks c JOIN test_notes n ON n.id = c.document_id
"""
QUERIES = """
SELECT l2_normalize(k.v + pg_temp.scaled(pg_temp.unit_vector(), 0.6)
                    + pg_temp.scaled(pg_temp.unit_vector(), 0.6))
FROM generate_series(1, %s) g JOIN test_clusters k ON k.id = g %% %s
"""


def execute(statement, params=()):
    with psycopg.Cursor(index_connection()) as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def corpus_seed() -> None:
    """NOTES notes of CHUNKS_PER_NOTE chunks with fake/fake-lexical-v1 vectors."""
    for statement in HELPERS[:-1]:
        execute(statement)
    execute(HELPERS[-1], [CLUSTERS])
    execute(DOCUMENTS, [NOTES])
    execute(CHUNKS, [CHUNKS_PER_NOTE])
    execute(NOTE_VECTORS, [CLUSTERS])
    execute(EMBEDDINGS, [EMBEDDER.provider, EMBEDDER.model])


def queries(count: int) -> list[list[float]]:
    return [row[0].to_list() for row in execute(QUERIES, [count, CLUSTERS])]


@pytest.fixture
def corpus(db):
    corpus_seed()


def run(vector, *, mode: str, limit: int = 10, embedder=EMBEDDER, **changes) -> list:
    config = config_changed(get_config(), rag_vector_index=mode, **changes)
    return vector_search(knowledge_base_ids=scope_all().knowledge_base_ids, vector=vector,
                         limit=limit, config=config, embedder=embedder)


def build(**changes):
    return vector_index_build(config=config_changed(get_config(), **changes))


def index_oid() -> int | None:
    rows = execute("SELECT to_regclass(%s)::oid",
                   [vector_index_name(provider=EMBEDDER.provider, model=EMBEDDER.model)])
    return rows[0][0]


def current_key(embedder=EMBEDDER) -> HnswKey:
    [index] = [i for i in vector_index_status(config=config_changed(
        get_config(), embedding_provider=embedder.provider, embedding_model=embedder.model))
        if i.current]
    assert index.key is not None
    return index.key


def hnsw_plan(vector, embedder=EMBEDDER) -> str:
    conn = index_connection()
    with conn.transaction(force_rollback=True), psycopg.Cursor(conn) as cursor:
        cursor.execute(sql.HNSW_SETTINGS, ["100"])
        cursor.execute("EXPLAIN " + sql.search_hnsw(current_key(embedder), filtered=False),
                       [Vector(vector), embedder.provider, embedder.model, embedder.dim,
                        list(scope_all().knowledge_base_ids), Vector(vector), 10])
        return "\n".join(row[0] for row in cursor.fetchall())


def full_precision_index_create(embedder=EMBEDDER) -> None:
    """The index an earlier release built: on the full-precision column itself."""
    name = vector_index_name(provider=embedder.provider, model=embedder.model)
    execute(f"CREATE INDEX {name} ON embeddings USING hnsw (embedding vector_cosine_ops) "
            f"WITH (m = 16, ef_construction = 128) WHERE embedding_provider = "
            f"'{embedder.provider}' AND embedding_model = '{embedder.model}'")


# Exact scan -------------------------------------------------------------------------------------


def test_exact_mode_returns_search_rows_unchanged_with_or_without_the_index(corpus):
    vectors = queries(5)
    key = [EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dim]
    reference = [execute(first_release.SEARCH, [Vector(v), *key, 10]) for v in vectors]

    def exact_rows() -> list:
        return [[(h.content, h.relative_path, h.heading_path, h.chunk_index, h.document_id,
                  h.content_hash, h.distance) for h in run(v, mode="exact")] for v in vectors]

    assert exact_rows() == reference and all(len(rows) == 10 for rows in reference)
    # An index on the column itself, as earlier releases built (today's key is a half-precision
    # expression, which the first release's ORDER BY cannot use). At 100k vectors the planner
    # prices such an index below the scan; on this small table, a costlier operator makes it do
    # the same, and an ef_search of 1 makes the index's answer visibly approximate. SEARCH
    # itself then runs on the index; exact mode must not.
    full_precision_index_create()
    execute("SET LOCAL cpu_operator_cost = 1")
    execute("SET LOCAL hnsw.ef_search = 1")
    plan = "\n".join(row[0] for row in execute("EXPLAIN " + first_release.SEARCH,
                                               [Vector(vectors[0]), *key, 10]))
    assert "Index Scan using idx_embeddings_hnsw_" in plan
    assert len(execute(first_release.SEARCH, [Vector(vectors[0]), *key, 10])) < 10
    assert exact_rows() == reference
    hits = run(vectors[0], mode="exact")
    assert [h.rank for h in hits] == list(range(1, 11))
    assert [h.score for h in hits] == [max(0.0, min(1.0, 1 - h.distance)) for h in hits]
    assert hits[0].search_hit().score == hits[0].score
    assert hits[0].search_hit().heading == hits[0].heading_path[-1]


def test_a_query_without_any_direction_finds_nothing(corpus):
    assert run([0.0] * 1024, mode="exact") == [] == run([0.0] * 1024, mode="auto")


def test_vectors_are_stored_inline_and_distances_do_not_depend_on_storage(corpus):
    [(storage,)] = execute("SELECT attstorage FROM pg_attribute WHERE attrelid = "
                           "'embeddings'::regclass AND attname = 'embedding'")
    [(out_of_line,)] = execute("SELECT count(*) FROM embeddings "
                               "WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL")
    assert (storage, out_of_line) == ("p", 0)
    # A vector written out of line (as before the change) is the same value.
    [(chunk_id, vector)] = execute("SELECT chunk_id, embedding FROM embeddings LIMIT 1")
    execute("ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE EXTERNAL")
    execute("INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim,"
            " embedding) VALUES (%s, 'local-qwen3', 'Qwen/Qwen3-Embedding-0.6B', 1024, %s)",
            [chunk_id, vector])
    query = Vector(queries(1)[0])
    rows = execute("SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL, embedding <=> %s "
                   "FROM embeddings WHERE chunk_id = %s ORDER BY embedding_provider",
                   [query, chunk_id])
    assert [row[0] for row in rows] == [False, True] and rows[0][1] == rows[1][1]


# HNSW -------------------------------------------------------------------------------------------


def test_hnsw_finds_what_the_exact_scan_finds(corpus):
    build()
    vectors = queries(20)
    assert "Index Scan using idx_embeddings_hnsw_" in hnsw_plan(vectors[0])
    found = []
    for vector in vectors:
        exact = [h.chunk_id for h in run(vector, mode="exact")]
        approximate = run(vector, mode="hnsw")
        assert [h.distance for h in approximate] == sorted(h.distance for h in approximate)
        found.append(len(set(exact) & {h.chunk_id for h in approximate}) / len(exact))
    assert sum(found) / len(found) >= 0.9


def test_exact_and_hnsw_paths_carry_each_chunks_page_span(corpus):
    # As a PDF's chunks would have them: chunk n of a note on pages n+1..n+2 for an even n; the
    # odd ones without pages, as a note's.
    execute("UPDATE chunks SET page_start = chunk_index + 1, page_end = chunk_index + 2 "
            "WHERE mod(chunk_index, 2) = 0")
    pages = {chunk_id: (start, end)
             for chunk_id, start, end in execute("SELECT id, page_start, page_end FROM chunks")}
    build()
    seen = set()
    for vector in queries(5):
        for mode in ("exact", "hnsw"):
            hits = run(vector, mode=mode)
            spans = [(h.page_start, h.page_end) for h in hits]
            assert len(hits) == 10 and spans == [pages[h.chunk_id] for h in hits]
            assert [(h.search_hit().page_start, h.search_hit().page_end) for h in hits] == spans
            seen.update(spans)
    assert (None, None) in seen and any(start is not None for start, _ in seen)


def test_iterative_scan_fills_top_k_past_deleted_rows_and_a_small_ef_search(corpus):
    build()
    vector = queries(1)[0]
    nearest = [h.chunk_id for h in run(vector, mode="exact", limit=30)]
    # Deleted but not vacuumed: still in the graph, dropped after the index scan. With an
    # ef_search of 20, a scan without iteration would return none of the 10 asked for.
    execute("DELETE FROM embeddings WHERE chunk_id = ANY(%s)", [nearest])
    hits = run(vector, mode="hnsw", hnsw_ef_search=20)
    exact = [h.chunk_id for h in run(vector, mode="exact")]
    assert len(hits) == 10 and not {h.chunk_id for h in hits} & set(nearest)
    assert len({h.chunk_id for h in hits} & set(exact)) >= 9
    assert len(run(vector, mode="hnsw", limit=40, hnsw_ef_search=5)) == 40


def test_vectors_of_another_provider_never_come_back(corpus):
    build()
    vectors = queries(3)
    # The other model's vectors are the queries themselves: distance 0, if they were searched.
    chunk_ids = [row[0] for row in execute("SELECT id FROM chunks ORDER BY id LIMIT 3")]
    for chunk_id, vector in zip(chunk_ids, vectors, strict=True):
        execute("INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, "
                "embedding_dim, embedding) VALUES (%s, %s, %s, 1024, %s)",
                [chunk_id, *OTHER, Vector(vector)])
    for vector in vectors:
        for mode in ("hnsw", "exact"):
            hits = run(vector, mode=mode)
            assert len(hits) == 10 and min(h.distance for h in hits) > 0.05


def test_iterative_scan_gives_top_k_when_a_shared_index_is_mostly_other_providers(db):
    # Why the index is partial: one index over every provider's vectors leaves the filter to
    # run after the index scan. Here 4 in 5 index entries belong to other models and sit right
    # around the query. Without iteration the scan comes back short; with strict_order it
    # usually finds the k rows, but not always: the iterative scan also stops at its memory
    # limit (hnsw.scan_mem_multiplier × work_mem), so only a partial index per model is sure.
    corpus_seed()
    vector = queries(1)[0]
    for model in ("m1", "m2", "m3", "m4"):
        execute("INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, "
                "embedding_dim, embedding) SELECT id, 'other', %s, 1024, "
                "l2_normalize(%s + pg_temp.scaled(pg_temp.unit_vector(), 0.3)) FROM chunks",
                [model, Vector(vector)])
    execute("CREATE INDEX test_shared_hnsw ON embeddings USING hnsw "
            "(embedding vector_cosine_ops)")
    params = [Vector(vector), EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dim,
              list(scope_all().knowledge_base_ids), Vector(vector), 10]
    conn = index_connection()

    def search(iterative: str) -> list:
        with conn.transaction(force_rollback=True), psycopg.Cursor(conn) as cursor:
            cursor.execute(sql.HNSW_SETTINGS, ["20"])
            cursor.execute("SELECT set_config('hnsw.iterative_scan', %s, true)", [iterative])
            cursor.execute(sql.search_hnsw(HnswKey(half=False, dims=1024), filtered=False),
                           params, prepare=False)
            return [row[0] for row in cursor.fetchall()]

    exact = [h.chunk_id for h in run(vector, mode="exact")]
    assert len(exact) == 10
    assert len(search("off")) < 10  # the shared index without iteration comes back short


# The half-precision key ------------------------------------------------------------------------

SMALL = ("sentence-transformers", "test-minilm-384")  # a model of 384 dimensions


@dataclasses.dataclass(frozen=True)
class SmallEmbedder:
    """Only what vector_search reads of an embedder: whose vectors to search."""

    provider: str = SMALL[0]
    model: str = SMALL[1]
    dim: int = 1024


def small_vectors_store(*, dims: int = 384, tail: bool = False) -> None:
    """The corpus's chunks again, under SMALL: `dims` clustered components zero-padded to 1024,
    as every provider stores a smaller model's vectors (with `tail`, one vector is not)."""
    rng = np.random.default_rng(7)
    chunk_ids = [row[0] for row in execute("SELECT id FROM chunks ORDER BY id")]
    centres = rng.normal(size=(CLUSTERS, dims))
    rows = []
    for position, chunk_id in enumerate(chunk_ids):
        vector = np.zeros(1024)
        vector[:dims] = centres[position % CLUSTERS] + rng.normal(scale=0.6, size=dims)
        if tail and position == 0:
            vector[1000] = 0.5
        rows.append((chunk_id, *SMALL, Vector((vector / np.linalg.norm(vector)).tolist())))
    with psycopg.Cursor(index_connection()) as cursor:
        cursor.executemany("INSERT INTO embeddings (chunk_id, embedding_provider, "
                           "embedding_model, embedding_dim, embedding) VALUES (%s, %s, %s, 1024, "
                           "%s)", rows)


def small_queries(count: int) -> list[list[float]]:
    """Queries near the stored vectors (each a stored one, nudged), in the model's space."""
    rows = execute("SELECT embedding FROM embeddings WHERE embedding_model = %s "
                   "ORDER BY chunk_id LIMIT %s", [SMALL[1], count])
    rng = np.random.default_rng(11)
    found = []
    for (stored,) in rows:
        vector = stored.to_numpy().copy()
        vector[:384] += rng.normal(scale=0.02, size=384)
        found.append((vector / np.linalg.norm(vector)).tolist())
    return found


@pytest.fixture
def small_model(corpus, monkeypatch):
    """SMALL's model folder, as the build reads it: 384 dimensions."""
    from index import vector_index

    monkeypatch.setattr(vector_index, "embedding_native_dim",
                        lambda *, config: 384 if config.embedding_model == SMALL[1] else 1024)


def small_build(**changes):
    config = config_changed(get_config(), embedding_provider=SMALL[0],
                            embedding_model=SMALL[1], **changes)
    return vector_index_build(config=config)


def test_the_index_keys_the_models_own_dimensions_in_half_precision(small_model):
    small_vectors_store()
    built = small_build()
    assert built.action == "created" and built.key == HnswKey(half=True, dims=384)
    embedder = SmallEmbedder()
    assert current_key(embedder) == HnswKey(half=True, dims=384)
    vectors = small_queries(20)
    plan = hnsw_plan(vectors[0], embedder)
    assert "Index Scan using idx_embeddings_hnsw_" in plan
    assert "subvector(embedding, 1, 384))::halfvec(384)" in plan
    found = []
    for vector in vectors:
        exact = run(vector, mode="exact", embedder=embedder)
        approximate = run(vector, mode="hnsw", embedder=embedder)
        assert len(approximate) == 10
        # Ordered and scored by the full-precision distance: a row both paths return has the
        # same distance on both, to the last bit.
        assert [h.distance for h in approximate] == sorted(h.distance for h in approximate)
        by_id = {h.chunk_id: h.distance for h in exact}
        assert all(by_id[h.chunk_id] == h.distance for h in approximate if h.chunk_id in by_id)
        found.append(len(set(by_id) & {h.chunk_id for h in approximate}) / 10)
    assert sum(found) / len(found) >= 0.9
    # The fake embedder's own index keeps its 1,024 dimensions, also in half precision.
    assert build().key == HnswKey(half=True, dims=1024)


def test_a_vector_non_zero_past_the_models_dimensions_keeps_every_dimension(small_model):
    small_vectors_store(tail=True)
    assert small_build().key == HnswKey(half=True, dims=1024)


def test_an_index_from_an_earlier_release_is_still_used_then_rebuilt_smaller(small_model,
                                                                            config_override):
    small_vectors_store()
    embedder = SmallEmbedder()
    full_precision_index_create(embedder)
    assert current_key(embedder) == HnswKey(half=False, dims=1024)
    vector = small_queries(1)[0]
    assert "Index Scan using idx_embeddings_hnsw_" in hnsw_plan(vector, embedder)
    assert len(run(vector, mode="hnsw", embedder=embedder)) == 10
    config = config_override(embedding_provider=SMALL[0], embedding_model=SMALL[1])
    plan = vector_path_choose(conn=index_connection(), config=config_changed(
        config, rag_vector_index="hnsw"), embedder=embedder)
    assert "`rag db index` rebuilds it on half-precision ones" in plan.reason
    assert plan.details()["hnsw_key"] == "full precision, 1024 dimensions"
    [before] = [i for i in vector_index_status(config=config) if i.current]
    # Same m and ef_construction, another key: rebuilt, not kept.
    rebuilt = small_build()
    [after] = [i for i in vector_index_status(config=config) if i.current]
    assert rebuilt.action == "rebuilt" and after.key == HnswKey(half=True, dims=384)
    assert after.size_bytes * 3 < before.size_bytes
    assert small_build().action == "unchanged"


# The `auto` rule and readiness ------------------------------------------------------------------


def test_auto_takes_the_index_only_when_measured_and_holding_enough_vectors(corpus,
                                                                           config_override):
    conn = index_connection()

    def path(mode: str, threshold: int) -> str:
        config = config_override(rag_vector_index=mode, rag_hnsw_min_chunks=threshold)
        return vector_path_choose(conn=conn, config=config, embedder=EMBEDDER).path

    assert path("auto", 0) == "exact"  # no index yet
    build()
    assert path("auto", 0) == "exact"  # its recall is not measured yet
    vector_index_tune(config=get_config())
    vectors = NOTES * CHUNKS_PER_NOTE
    assert [path("auto", vectors), path("auto", vectors + 1)] == ["hnsw", "exact"]
    assert [path("exact", 0), path("hnsw", 10**9)] == ["exact", "hnsw"]


def test_hnsw_without_an_index_is_not_ready(corpus):
    with pytest.raises(RetrievalNotReady) as err:
        run(queries(1)[0], mode="hnsw")
    assert "rag db index" in err.value.message
    assert (err.value.code, err.value.http_status, err.value.exit_code) == (
        "retrieval_not_ready", 503, 3)


# `rag db index` ---------------------------------------------------------------------------------


def command(*args: str, stderr: StringIO | None = None) -> str:
    out = StringIO()
    call_command("db", "index", *args, stdout=out, stderr=stderr or StringIO())
    return out.getvalue()


def measured_at() -> list:
    return [row[0] for row in execute("SELECT measured_at FROM vector_index_tuning")]


def test_index_command_builds_once_measures_reports_and_drops(corpus):
    name = vector_index_name(provider=EMBEDDER.provider, model=EMBEDDER.model)
    status = command("--status")
    assert "no HNSW index for fake/fake-lexical-v1" in status
    assert "RAG_VECTOR_INDEX=auto: searches use the exact scan; no HNSW index" in status
    progress = StringIO()
    created = command(stderr=progress)
    assert f"{name} created: {NOTES * CHUNKS_PER_NOTE} vectors" in created
    # Measured right after the build: each step on stderr, the outcome on stdout.
    steps = progress.getvalue()
    assert ("measuring recall@10 against the exact scan on up to 100 stored vectors and 100 "
            "blends of two (the lower counts; target 0.98)") in steps
    assert "  ef_search 20: recall@10 " in steps
    assert f"100 + 100 queries over {NOTES * CHUNKS_PER_NOTE} vectors" in created
    assert "(target 0.98: met)" in created and created.rstrip().endswith("; stored")
    oid, first = index_oid(), measured_at()
    again = command()  # idempotent: not rebuilt, and a current measurement is not repeated
    assert "up to date" in again and index_oid() == oid and measured_at() == first
    assert "`rag db index --status` measures again" in again
    execute("UPDATE vector_index_tuning SET vectors = vectors * 2")  # as if measured when larger
    stale = command()
    assert "up to date" in stale and stale.rstrip().endswith("; stored")
    assert measured_at() != first and index_oid() == oid
    first = measured_at()
    status = command("--status")
    assert f"* {name}:" in status and "m=16, ef_construction=128" in status
    assert "embedding_provider = 'fake'" in status and measured_at() != first
    assert "RAG_VECTOR_INDEX=auto: searches use the exact scan; the HNSW index holds fewer " \
           "than RAG_HNSW_MIN_CHUNKS (20000)" in status
    body = json.loads(command("--status", "--json", "--sample", "30"))
    [entry] = body["indexes"]
    assert (entry["name"], entry["current"], entry["valid"], entry["m"]) == (name, True, True, 16)
    assert entry["vectors"] == NOTES * CHUNKS_PER_NOTE and entry["size_bytes"] > 0
    assert body["recall"]["sample_size"] == 30 and body["recall"]["steps"][0]["ef_search"] == 20
    assert body["vector_search"]["recall_at_10"] == body["recall"]["steps"][-1]["recall_at_10"]
    assert command("--drop") == f"dropped {name}\n"
    assert index_oid() is None and command("--drop") == "no HNSW index to drop\n"
    assert measured_at() == []  # the measurement went with its index


def test_changed_parameters_rebuild_and_a_leftover_build_is_replaced(corpus, config_override):
    name = vector_index_name(provider=EMBEDDER.provider, model=EMBEDDER.model)
    command()
    # What an interrupted build leaves behind: an index under the temporary name.
    execute(f"CREATE INDEX {name}{BUILDING_SUFFIX} ON embeddings USING hnsw "
            "(embedding vector_cosine_ops) WHERE embedding_provider = 'fake'")
    config_override(hnsw_m=8, hnsw_ef_construction=32)
    assert f"{name} rebuilt" in command()
    [index] = vector_index_status(config=get_config())
    assert (index.name, index.m, index.ef_construction, index.valid) == (name, 8, 32, True)


def test_build_reports_progress_from_pg_stat_progress_create_index(corpus, monkeypatch):
    from index import vector_index

    monkeypatch.setattr(vector_index, "PROGRESS_INTERVAL_S", 0.005)
    readings = []
    result = vector_index_build(config=get_config(), progress=readings.append)
    assert result.action == "created" and result.maintenance_work_mem_mb >= 64
    assert readings and all(r.phase.startswith("building index") for r in readings)
    assert any(r.done > 0 for r in readings)


def test_concurrent_build_from_the_cli(clean_tables, run_cli):
    corpus_seed()
    try:
        built = run_cli("db", "index", "--concurrently")
        assert built.returncode == 0, built.stderr
        assert "created" in built.stdout
        status = json.loads(run_cli("db", "index", "--status", "--json").stdout)
        assert [(i["current"], i["valid"]) for i in status["indexes"]] == [(True, True)]
        again = run_cli("db", "index", "--concurrently")
        assert again.returncode == 0 and "up to date" in again.stdout
    finally:
        dropped = run_cli("db", "index", "--drop", "--all")
    assert dropped.returncode == 0 and "dropped idx_embeddings_hnsw_" in dropped.stdout
    assert vector_index_status(config=get_config()) == []
