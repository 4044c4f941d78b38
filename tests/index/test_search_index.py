"""The search index against its oracle, SQL alone: random corpora and queries, the rows of the
exact vector scan, chunks written or deleted after the index, and a missing, damaged or newer
index (index/search.py). Everything here commits: the index is built from committed data."""

from __future__ import annotations

import random
import shutil

import pytest
from django.db import connection

from core.config import get_config
from embeddings import FakeLexicalEmbedder
from knowledge.ingest import IngestRequest, vault_ingest
from retrieval.lexical import LexicalReport, lexical_search
from retrieval.vector import vector_search
from tests.index.helpers import (
    base_folder,
    built,
    database_generation,
    index_generation,
    lexical_bases,
    vault_write,
)
from tests.retrieval.test_lexical_pruning import chunks_add, queries_make

pytestmark = pytest.mark.usefixtures("clean_tables")
EMBEDDER = FakeLexicalEmbedder()


def ranked(hits) -> list[tuple[int, float]]:
    return [(hit.chunk_id, round(hit.score, 9)) for hit in hits]


def query_found(rng, words, base: int) -> str:
    """A random query that finds something in the base."""
    for query in queries_make(rng, words, 50):
        if lexical_search(query=query, limit=1, knowledge_base_ids=[base], exhaustive=True):
            return query
    raise AssertionError("no query of 50 finds anything")


def indexed_search(query: str, *, limit: int, bases: list[int]):
    report = LexicalReport()
    hits = lexical_search(query=query, limit=limit, knowledge_base_ids=bases, report=report)
    return hits, report.index


@pytest.mark.parametrize("seed", [3, 17])
def test_indexed_lexical_search_equals_the_exhaustive_ranking(seed):
    rng, words, (first, second) = lexical_bases(seed)
    built(first)
    built(second)
    for query in queries_make(rng, words, 40):
        for bases in ([first], [second], [first, second]):
            limit = rng.choice([1, 5, 10, 50])
            hits, index = indexed_search(query, limit=limit, bases=bases)
            exhaustive = lexical_search(query=query, limit=limit, knowledge_base_ids=bases,
                                        exhaustive=True)
            assert ranked(hits) == ranked(exhaustive), (query, bases, limit)
            if exhaustive:
                assert index["path"] == "index", index


def test_indexed_lexical_search_equals_the_sql_path(config_override):
    rng, words, (first, second) = lexical_bases(5)
    built(first)
    built(second)
    queries = queries_make(rng, words, 30)
    indexed = [ranked(indexed_search(query, limit=10, bases=[first, second])[0])
               for query in queries]
    config_override(rag_search_index="off")
    found, paths = [], []
    for query in queries:
        hits, index = indexed_search(query, limit=10, bases=[first, second])
        paths.append(index)  # None: no term of the query is kept, nothing was searched
        found.append(ranked(hits))
    assert indexed == found
    assert {str(path) for path in paths} == {
        "None", str({"path": "sql", "reason": "off", "knowledge_base_id": None})}


def test_candidates_too_few_for_the_corpus_still_score_exactly(config_override):
    """With 10 candidates per base on 650 chunks, the index decides which chunks are scored;
    the scores of those it proposes are still the SQL formula's, never tantivy's."""
    rng, words, (first, second) = lexical_bases(11)
    built(first)
    built(second)
    config_override(rag_search_index_candidates=10)
    agreed = total = 0
    for query in queries_make(rng, words, 30):
        hits, index = indexed_search(query, limit=10, bases=[first, second])
        exhaustive = {hit.chunk_id: hit.score for hit in lexical_search(
            query=query, limit=650, knowledge_base_ids=[first, second], exhaustive=True)}
        for hit in hits:
            assert hit.score == pytest.approx(exhaustive[hit.chunk_id], rel=1e-9)
        top = set(list(exhaustive)[:10])
        agreed += len(top & {hit.chunk_id for hit in hits})
        total += len(top)
        if hits:
            assert index["path"] == "index" and index["proposed"] <= 20
    assert agreed / total > 0.8  # the index ranks as BM25 does, near enough at the top


def test_chunks_written_after_the_index_are_scored_as_a_delta():
    rng, words, (first, _) = lexical_bases(7, chunks=(200, 10))
    built(first)
    generation = index_generation(first)
    new = chunks_add(base_id=first, document_path="late.md",
                     rows=[("zorblax quintessence appears late", ["Late"], "late.md")])
    assert database_generation(first) > generation
    hits, index = indexed_search("zorblax", limit=5, bases=[first])
    assert [hit.chunk_id for hit in hits] == new
    assert index["path"] == "index" and index["delta"] == 1
    built(first)  # caught up: the same answer from the index alone
    hits, index = indexed_search("zorblax", limit=5, bases=[first])
    assert [hit.chunk_id for hit in hits] == new and index["delta"] == 0
    assert index_generation(first) == database_generation(first)


def test_a_chunk_deleted_after_the_index_is_never_returned():
    rng, words, (first, _) = lexical_bases(8, chunks=(200, 10))
    built(first)
    query = query_found(rng, words, first)
    before, _ = indexed_search(query, limit=10, bases=[first])
    assert before
    gone = [hit.chunk_id for hit in before[:3]]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM chunks WHERE id = ANY(%s)", [gone])
    after, index = indexed_search(query, limit=10, bases=[first])
    assert index["path"] == "index"  # the index still holds them: SQL drops them
    assert not set(gone) & {hit.chunk_id for hit in after}
    assert ranked(after) == ranked(lexical_search(query=query, limit=10,
                                                  knowledge_base_ids=[first], exhaustive=True))


def test_a_missing_or_damaged_index_falls_back_to_sql_and_is_rebuilt():
    rng, words, (first, _) = lexical_bases(9, chunks=(150, 10))
    built(first)
    query = query_found(rng, words, first)
    expected = ranked(lexical_search(query=query, limit=10, knowledge_base_ids=[first],
                                     exhaustive=True))
    folder = base_folder(first)
    shutil.rmtree(folder)
    hits, index = indexed_search(query, limit=10, bases=[first])
    assert index == {"path": "sql", "reason": "missing", "knowledge_base_id": first}
    assert ranked(hits) == expected
    built(first)
    (folder / "manifest.json").write_text("{not json", encoding="utf-8")
    hits, index = indexed_search(query, limit=10, bases=[first])
    assert index["reason"] == "missing" and ranked(hits) == expected
    built(first)
    hits, index = indexed_search(query, limit=10, bases=[first])
    assert index["path"] == "index" and ranked(hits) == expected


def test_an_index_newer_than_the_database_is_not_trusted():
    """A database restored or rolled back under an index: its generation is behind the
    index's, whose chunks may be any."""
    rng, words, (first, _) = lexical_bases(10, chunks=(100, 10))
    built(first)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE search_index_state SET generation = 0 WHERE knowledge_base_id = %s",
                       [first])
    _, index = indexed_search(query_found(rng, words, first), limit=5, bases=[first])
    assert index == {"path": "sql", "reason": "ahead", "knowledge_base_id": first}


def test_an_index_older_than_the_log_is_not_used():
    rng, words, (first, _) = lexical_bases(12, chunks=(100, 10))
    built(first)
    chunks_add(base_id=first, document_path="x.md", rows=[("later text", [], "x.md")])
    with connection.cursor() as cursor:  # the log was pruned past the index
        cursor.execute("UPDATE search_index_state SET log_start = generation + 1 "
                       "WHERE knowledge_base_id = %s", [first])
    _, index = indexed_search("later", limit=5, bases=[first])
    assert index == {"path": "sql", "reason": "behind_log", "knowledge_base_id": first}


def test_an_index_too_far_behind_falls_back(monkeypatch):
    rng, words, (first, _) = lexical_bases(13, chunks=(100, 10))
    built(first)
    chunks_add(base_id=first, document_path="y.md",
               rows=[(f"late words {number}", [], "y.md") for number in range(5)])
    monkeypatch.setattr("index.search.DELTA_MAX", 3)
    _, index = indexed_search("late words", limit=5, bases=[first])
    assert index == {"path": "sql", "reason": "far_behind", "knowledge_base_id": None}


@pytest.fixture
def fake_vault(tmp_path):
    """A vault of 60 random notes, ingested (which builds its base's index at the end)."""
    folder = vault_write(tmp_path / "vault", random.Random(21), notes=60)
    result = vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM knowledge_bases WHERE slug = 'default'")
        (base,) = cursor.fetchone()
    return folder, result, base


def vector_rows(vector, *, limit: int, bases: list[int], config=None):
    report: dict = {}
    hits = vector_search(vector=vector, limit=limit, config=config or get_config(),
                         embedder=EMBEDDER, knowledge_base_ids=bases, report=report)
    return [(hit.chunk_id, hit.distance) for hit in hits], report.get("search_index")


def test_a_first_ingest_builds_the_index(fake_vault):
    _, result, base = fake_vault
    assert result.chunks_written > 100
    assert index_generation(base) == database_generation(base)


def test_sparse_vector_search_gives_the_exact_scans_rows(fake_vault, config_override):
    _, result, base = fake_vault
    rng = random.Random(4)
    with connection.cursor() as cursor:
        cursor.execute("SELECT content FROM chunks ORDER BY id")
        texts = [row[0] for row in cursor.fetchall()]
    queries = [" ".join(rng.sample(text.split(), min(3, len(text.split())))) for text in
               rng.sample(texts, 25)] + ["nothing shares these buckets qqqq", "a"]
    exact_config = config_override(rag_vector_index="exact")
    config_override(rag_vector_index="auto")
    for query in queries:
        vector = EMBEDDER.embed_query(query)
        # 400 deep: past every chunk sharing a bucket, into the ties at distance 1.
        for limit in (1, 10, 400):
            found, index = vector_rows(vector, limit=limit, bases=[base])
            exact, exact_index = vector_rows(vector, limit=limit, bases=[base],
                                             config=exact_config)
            assert exact_index is None
            # A query without a direction (no token) is answered by no path at all.
            assert (index or {}).get("path") == ("index" if any(vector) else None)
            assert found == exact, (query, limit)


def test_vectors_written_after_the_index_are_scored_as_a_delta(fake_vault, config_override):
    folder, _, base = fake_vault
    vector = EMBEDDER.embed_query("wibblequark")
    found, _ = vector_rows(vector, limit=3, bases=[base])
    (folder / "late.md").write_text("# Late\n\nwibblequark wibblequark\n", encoding="utf-8")
    from index import maintenance
    from knowledge.signals import chunks_committed
    # As if the process was killed between the ingest's commit and the index's.
    chunks_committed.disconnect(dispatch_uid="search_index_catch_up")
    try:
        vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    finally:
        chunks_committed.connect(maintenance.on_chunks_committed,
                                 dispatch_uid="search_index_catch_up")
    assert index_generation(base) < database_generation(base)
    exact_config = config_override(rag_vector_index="exact")
    config_override(rag_vector_index="auto")
    late, index = vector_rows(vector, limit=3, bases=[base])
    assert index["path"] == "index" and index["delta"] >= 1
    assert late == vector_rows(vector, limit=3, bases=[base], config=exact_config)[0]
    assert late != found
    built(base)
    assert vector_rows(vector, limit=3, bases=[base])[0] == late
