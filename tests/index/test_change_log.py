"""The generation and change log that every chunk and vector write leaves in its own transaction
(index/migrations/0002_change_log.sql): what an index is brought up to date from."""

from __future__ import annotations

import pytest
from django.db import connection

from knowledge.bases import kb_create
from tests.retrieval.test_lexical_pruning import chunks_add

pytestmark = pytest.mark.django_db


def state(base: int) -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT generation, log_start FROM search_index_state "
                       "WHERE knowledge_base_id = %s", [base])
        row = cursor.fetchone()
    return row or (0, 1)


def logged(base: int, after: int = 0) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT chunk_id FROM search_index_changes WHERE knowledge_base_id = %s "
                       "AND generation > %s ORDER BY chunk_id", [base, after])
        return [row[0] for row in cursor.fetchall()]


def test_inserting_chunks_bumps_their_bases_generation_once_per_statement_and_logs_them():
    base = kb_create(slug="log-a", name="A").id
    other = kb_create(slug="log-b", name="B").id
    # A base id may have been used (and its state kept) before a TRUNCATE ... RESTART IDENTITY.
    start, other_start = state(base)[0], state(other)
    ids = chunks_add(base_id=base, document_path="a.md",
                     rows=[("one two", [], "a.md"), ("three", [], "a.md")])
    generation, _ = state(base)
    assert generation == start + 2  # two INSERT statements (one per chunk here)
    assert logged(base, start) == ids
    assert state(other) == other_start and logged(other, other_start[0]) == []
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO chunks (document_id, chunk_index, content, file_path, "
                       "relative_path, content_hash) SELECT document_id, chunk_index + 10, "
                       "content, file_path, relative_path, 'x' FROM chunks WHERE id = ANY(%s)",
                       [ids])
    assert state(base)[0] == generation + 1  # one statement, two rows: one generation


def test_updating_terms_or_deleting_logs_the_chunk_and_other_columns_do_not():
    base = kb_create(slug="log-c", name="C").id
    (chunk,) = chunks_add(base_id=base, document_path="c.md", rows=[("alpha", [], "c.md")])
    generation, _ = state(base)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET metadata = '{\"k\": 1}' WHERE id = %s", [chunk])
        assert state(base)[0] == generation
        cursor.execute("UPDATE chunks SET lexical_terms = 'beta:1'::tsvector WHERE id = %s",
                       [chunk])
        assert state(base)[0] == generation + 1 and logged(base, generation) == [chunk]
        cursor.execute("DELETE FROM chunks WHERE id = %s", [chunk])
        assert state(base)[0] == generation + 2 and logged(base, generation + 1) == [chunk]


def test_writing_a_vector_logs_its_chunk():
    base = kb_create(slug="log-d", name="D").id
    (chunk,) = chunks_add(base_id=base, document_path="d.md", rows=[("gamma", [], "d.md")])
    generation, _ = state(base)
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, "
                       "embedding_dim, embedding) VALUES (%s, 'fake', 'fake-lexical-v1', 1024, "
                       "array_fill(0.5, ARRAY[1024])::vector)", [chunk])
        assert state(base)[0] == generation + 1 and logged(base, generation) == [chunk]
        cursor.execute("DELETE FROM embeddings WHERE chunk_id = %s", [chunk])
        assert state(base)[0] == generation + 2


def test_a_truncate_starts_every_log_after_the_current_generation():
    """A truncate logs no rows: an index built before it must be rebuilt, not caught up."""
    base = kb_create(slug="log-e", name="E").id
    chunks_add(base_id=base, document_path="e.md", rows=[("delta", [], "e.md")])
    generation, _ = state(base)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE chunks CASCADE")
    after, log_start = state(base)  # chunks and, by cascade, embeddings: each bumps once
    assert after > generation and log_start == after + 1
    assert logged(base) == []


def test_a_rolled_back_write_leaves_no_generation():
    base = kb_create(slug="log-f", name="F").id
    before = state(base)
    from django.db import transaction
    with pytest.raises(RuntimeError), transaction.atomic():
        chunks_add(base_id=base, document_path="f.md", rows=[("eps", [], "f.md")])
        assert state(base)[0] == before[0] + 1  # seen inside the transaction
        raise RuntimeError("abort")
    assert state(base) == before and logged(base, before[0]) == []
