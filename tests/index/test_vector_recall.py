"""HNSW recall measured on the stored vectors (index/vector_recall.py) and the path it picks
(index/vector_path.py), on two corpora: fake-lexical-v1 vectors of Zipf-distributed words
(a graph with no clusters to follow: a small ef_search misses the target) and the clustered
vectors of tests/retrieval/test_vector_index.py (a small ef_search already meets it)."""

from __future__ import annotations

import itertools
import random

import psycopg
import pytest
from pgvector import Vector

from access.callers import scope_all
from core.config import get_config
from embeddings import FakeLexicalEmbedder
from embeddings.base import ChunkText
from index.vector_index import vector_index_build, vector_index_name
from index.vector_path import vector_path_plan
from index.vector_recall import (
    EF_SEARCH_LADDER,
    SAMPLE,
    RecallStep,
    VectorIndexTuning,
    vector_index_facts,
    vector_index_tune,
    vector_index_tuning_current,
)
from knowledge.db_schema import index_connection
from retrieval import sql
from retrieval.vector import vector_search
from tests.harness import config_changed
from tests.retrieval.test_vector_index import CHUNKS, DOCUMENTS, corpus_seed, execute

EMBEDDER = FakeLexicalEmbedder()
ZIPF_NOTES, ZIPF_CHUNKS_PER_NOTE, ZIPF_WORDS = 200, 10, 3000
# A sparse graph (m 8, ef_construction 16): at 2,000 Zipf vectors its recall@10 on the stored
# vectors was 0.73 at ef_search 10, 0.81 at 20 and 0.99 at 320 over repeated builds.
SPARSE = {"hnsw_m": 8, "hnsw_ef_construction": 16}
COPY_EMBEDDINGS = """
COPY embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim, embedding)
FROM STDIN (FORMAT BINARY)
"""


def zipf_seed() -> None:
    """ZIPF_NOTES notes of chunks of 60 to 150 words drawn from a Zipf vocabulary, with the
    fake embedder's vectors of their text, headings and file name."""
    rng = random.Random(7)
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai")]
    words = list(dict.fromkeys("".join(rng.choices(syllables, k=rng.randint(2, 4)))
                               for _ in range(ZIPF_WORDS)))
    weights = list(itertools.accumulate(1 / rank ** 1.05 for rank in range(1, len(words) + 1)))
    execute(DOCUMENTS, [ZIPF_NOTES])
    execute(CHUNKS, [ZIPF_CHUNKS_PER_NOTE])
    rows = execute("SELECT c.id, d.relative_path, c.chunk_index FROM chunks c JOIN documents d "
                   "ON d.id = c.document_id WHERE d.vault_path = '/t' ORDER BY c.id")
    vectors = EMBEDDER.embed_documents([ChunkText(
        content=" ".join(rng.choices(words, cum_weights=weights, k=rng.randint(60, 150))),
        heading_path=["Note", f"Part {index}"], relative_path=path) for _, path, index in rows])
    with psycopg.Cursor(index_connection()) as cursor, cursor.copy(COPY_EMBEDDINGS) as copy:
        copy.set_types(["int8", "text", "text", "int4", "vector"])
        for (chunk_id, _, _), vector in zip(rows, vectors, strict=True):
            copy.write_row([chunk_id, EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dim, vector])


@pytest.fixture
def zipf(db):
    zipf_seed()


def config_of(**changes):
    return config_changed(get_config(), **changes)


def plan(**changes):
    return vector_path_plan(conn=index_connection(), config=config_of(**changes),
                            provider=EMBEDDER.provider, model=EMBEDDER.model)


def facts():
    return vector_index_facts(conn=index_connection(), index_name=vector_index_name(
        provider=EMBEDDER.provider, model=EMBEDDER.model))


def stored_vectors(count: int) -> list[list[float]]:
    rows = execute("SELECT embedding FROM embeddings ORDER BY chunk_id DESC LIMIT %s", [count])
    return [row[0].to_list() for row in rows]


def hnsw_ids(vector: list[float], *, ef_search: int, limit: int = 10) -> list[int]:
    """The chunk ids retrieval's own HNSW statement returns at this ef_search."""
    conn = index_connection()
    with conn.transaction(force_rollback=True), psycopg.Cursor(conn) as cursor:
        cursor.execute(sql.HNSW_SETTINGS, [str(ef_search)])
        key = facts().key
        assert key is not None
        cursor.execute(sql.search_hnsw(key, filtered=False),
                       [Vector(vector), EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dim,
                        list(scope_all().knowledge_base_ids), Vector(vector), limit],
                       prepare=False)
        return [row[0] for row in cursor.fetchall()]


def exact_ids(params: list) -> list[int]:
    """The chunk ids of retrieval's exact scan, kept off the index as retrieval keeps it."""
    conn = index_connection()
    with conn.transaction(force_rollback=True), psycopg.Cursor(conn) as cursor:
        cursor.execute(sql.EXACT_SETTINGS)
        cursor.execute(sql.SEARCH_EXACT, params)
        return [row[0] for row in cursor.fetchall()]


def searched_ids(vector: list[float], **changes) -> list[int]:
    return [hit.chunk_id for hit in vector_search(
        vector=vector, limit=10, config=config_of(**changes), embedder=EMBEDDER,
        knowledge_base_ids=scope_all().knowledge_base_ids)]


# Zipf vectors: the ladder climbs ---------------------------------------------------------------


def test_on_zipf_vectors_ef_search_climbs_until_the_target_is_met_and_search_uses_it(zipf):
    config = config_of(**SPARSE)
    vector_index_build(config=config)
    seen = []
    tuning = vector_index_tune(config=config, progress=seen.append)
    steps = list(tuning.steps)
    assert seen == steps and [s.ef_search for s in steps] == list(EF_SEARCH_LADDER[:len(steps)])
    assert steps[0].recall < 0.95 and len(steps) >= 4
    # Climbed to the first step that met the target, then one more (MARGIN), which searches take.
    first = next(index for index, step in enumerate(steps) if step.recall >= 0.98)
    assert first == len(steps) - 2 and steps[-1].recall >= 0.98
    assert tuning.chosen(target=0.98) == steps[-1]
    assert (tuning.sample_size, tuning.vectors) == (100, ZIPF_NOTES * ZIPF_CHUNKS_PER_NOTE)
    assert facts().tuning == tuning  # stored as measured
    chosen = steps[-1].ef_search
    auto = plan(rag_hnsw_min_chunks=0)
    assert (auto.path, auto.ef_search, auto.recall) == ("hnsw", chosen, steps[-1].recall)
    assert f"≥ target 0.98 at ef_search {chosen}" in auto.reason
    # HNSW_EF_SEARCH no longer decides once a measurement is stored: searches run at the tuned
    # ef_search, whose answers differ from those at ef_search 10 on this sparse graph.
    differs = 0
    for vector in stored_vectors(20):
        found = searched_ids(vector, rag_vector_index="hnsw", hnsw_ef_search=10)
        assert found == hnsw_ids(vector, ef_search=chosen)
        differs += found != hnsw_ids(vector, ef_search=10)
    assert differs > 0


def test_recall_is_the_share_of_the_exact_scans_ten_that_the_index_search_finds(zipf):
    # Worked out independently with retrieval's own statements, one query at a time: for each
    # sampled chunk, its 10 nearest other chunks by the exact scan and by the index.
    vector_index_build(config=config_of(**SPARSE))
    [step] = vector_index_tune(config=config_of(**SPARSE), ladder=(20,)).steps
    sample = execute(SAMPLE, [EMBEDDER.provider, EMBEDDER.model, 100])
    found = 0
    for (chunk_id,) in sample:
        [(vector,)] = execute("SELECT embedding FROM embeddings WHERE chunk_id = %s", [chunk_id])
        key = [vector, EMBEDDER.provider, EMBEDDER.model, EMBEDDER.dim,
               list(scope_all().knowledge_base_ids), 11]
        exact = [i for i in exact_ids(key) if i != chunk_id][:10]
        approximate = [i for i in hnsw_ids(vector.to_list(), ef_search=20, limit=11)
                       if i != chunk_id][:10]
        found += len(set(exact) & set(approximate))
    assert len(sample) == 100 and step.ef_search == 20
    assert step.recall == pytest.approx(found / 1000, abs=0.005)  # ties may count either way
    assert step.recall < 0.95  # a sparse graph at a small ef_search: visibly approximate


def test_auto_scans_exactly_where_the_largest_ef_search_tried_misses_the_target(zipf):
    vector_index_build(config=config_of(**SPARSE))
    tuning = vector_index_tune(config=config_of(**SPARSE), ladder=(10, 20))
    assert [s.ef_search for s in tuning.steps] == [10, 20]  # climbed to the end: not met
    recall = tuning.steps[-1].recall
    assert recall < 0.98
    auto = plan(rag_hnsw_min_chunks=0)
    assert (auto.path, auto.ef_search, auto.recall_ef_search) == ("exact", None, 20)
    assert f"HNSW recall@10 {int(recall * 1000) / 1000:.3f} < target 0.98 at ef_search 20" \
        in auto.reason
    vector = stored_vectors(1)[0]
    exact = searched_ids(vector, rag_vector_index="exact")
    assert searched_ids(vector, rag_vector_index="auto", rag_hnsw_min_chunks=0) == exact
    # `hnsw` was asked for: the index, at the best ef_search measured, with the recall said.
    forced = plan(rag_vector_index="hnsw")
    assert (forced.path, forced.ef_search) == ("hnsw", 20)
    assert forced.reason.startswith("RAG_VECTOR_INDEX=hnsw, although recall@10")
    # A lower target that the measurement reached turns the index on at that step.
    lower = plan(rag_hnsw_min_chunks=0, rag_hnsw_target_recall=recall)
    assert (lower.path, lower.ef_search) == ("hnsw", 20)
    # Measured to the end of the ladder: measuring again would not climb further.
    assert "measures again" not in plan(rag_hnsw_min_chunks=0).reason
    # A ladder that stopped where an older, lower target was met may climb further.
    execute("UPDATE vector_index_tuning SET target_recall = 0.5")
    higher = plan(rag_hnsw_min_chunks=0)
    assert higher.path == "exact"
    assert "(tuned for target 0.5: `rag db index --status` measures again)" in higher.reason


# Clustered vectors: the first step suffices ----------------------------------------------------


def test_on_clustered_vectors_a_small_ef_search_already_meets_the_target(db):
    corpus_seed()
    vector_index_build(config=get_config())
    tuning = vector_index_tune(config=get_config())
    chosen = tuning.chosen(target=0.98)
    assert chosen.recall >= 0.98 and chosen.ef_search <= 40
    auto = plan(rag_hnsw_min_chunks=0)
    assert (auto.path, auto.ef_search) == ("hnsw", chosen.ef_search)


# What a measurement is tied to ------------------------------------------------------------------


def test_an_index_not_measured_is_not_trusted_by_auto(db):
    corpus_seed()
    vector_index_build(config=get_config())
    auto = plan(rag_hnsw_min_chunks=0)
    assert (auto.path, auto.recall) == ("exact", None)
    assert "not measured yet; `rag db index` measures it" in auto.reason
    forced = plan(rag_vector_index="hnsw", hnsw_ef_search=77)
    assert (forced.path, forced.ef_search) == ("hnsw", 77)  # HNSW_EF_SEARCH until measured
    few = plan(rag_hnsw_min_chunks=10**6)
    assert few.path == "exact" and "fewer than RAG_HNSW_MIN_CHUNKS (1000000)" in few.reason


def test_a_rebuilt_index_has_no_measurement_until_measured_again(db):
    corpus_seed()
    vector_index_build(config=get_config())
    vector_index_tune(config=get_config())
    assert facts().tuning is not None
    vector_index_build(config=config_of(hnsw_m=8))  # a new relation under the same name
    assert facts().tuning is None and plan(rag_hnsw_min_chunks=0).path == "exact"
    [(rows,)] = execute("SELECT count(*) FROM vector_index_tuning")
    assert rows == 1  # the old row stays until measured again or dropped; it matches no index


def test_a_measurement_far_from_todays_size_is_stale_but_still_used(db):
    corpus_seed()
    vector_index_build(config=get_config())
    tuning = vector_index_tune(config=get_config())
    name = vector_index_name(provider=EMBEDDER.provider, model=EMBEDDER.model)
    assert vector_index_tuning_current(index_name=name) == tuning
    execute("UPDATE vector_index_tuning SET vectors = vectors * 2")
    auto = plan(rag_hnsw_min_chunks=0)
    assert auto.stale and auto.path == "hnsw"
    assert "`rag db index --status` measures again" in auto.reason
    assert vector_index_tuning_current(index_name=name) is None  # `rag db index` re-measures
    execute("UPDATE vector_index_tuning SET vectors = round(vectors / 2 * 1.15)")
    assert not plan(rag_hnsw_min_chunks=0).stale  # 15% away: still current


def test_without_an_index_there_is_nothing_to_measure(db):
    corpus_seed()
    assert vector_index_tune(config=get_config()) is None
    assert plan(rag_vector_index="hnsw").path == "unavailable"
    assert plan().reason == "no HNSW index for the current embedding model"


def test_searches_take_one_step_above_the_first_that_meets_the_target():
    from datetime import UTC, datetime

    def tuning(*recalls: float) -> VectorIndexTuning:
        return VectorIndexTuning(
            steps=tuple(RecallStep(ef, recall) for ef, recall in zip(EF_SEARCH_LADDER, recalls,
                                                                     strict=False)),
            target_recall=0.98, sample_size=100, vectors=1000, seconds=1.0,
            measured_at=datetime.now(UTC))

    assert tuning(0.9, 0.985, 0.99).chosen(target=0.98).ef_search == 64
    # A measurement stored before the margin step existed, stopped where the target was met.
    assert tuning(0.9, 0.985).chosen(target=0.98).ef_search == 40
    # The step above dipped below the target (builds are approximate): the first that met it.
    assert tuning(0.985, 0.979, 0.99).chosen(target=0.98).ef_search == 20
    assert tuning(0.9, 0.95).chosen(target=0.98).ef_search == 40  # never met: the largest
