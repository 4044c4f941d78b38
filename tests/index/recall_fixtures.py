"""A stored recall measurement of the current HNSW index, made up: for the pages and endpoints
that report it, without building a corpus whose recall misses the target."""

from __future__ import annotations

from django.db import connection


def measurement_store(*, ef_searches: list[int], recalls: list[float]) -> None:
    """A recall measurement of the one HNSW index there is, as `rag db index` would store it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO vector_index_tuning (index_name, index_oid, embedding_provider, "
            "embedding_model, m, ef_construction, ef_searches, recalls, target_recall, "
            "sample_size, vectors, seconds) SELECT c.relname, c.oid, 'fake', 'fake-lexical-v1', "
            "16, 128, %s, %s, 0.98, 100, greatest(c.reltuples, 0), 1.5 FROM pg_class c "
            "WHERE c.relname LIKE 'idx_embeddings_hnsw_%%' AND c.relkind = 'i'",
            [ef_searches, recalls])
        assert cursor.rowcount == 1
