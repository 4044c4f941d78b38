"""The impact cells and the per-base BM25 statistics: the cells parsing/lexical.py writes are
those the schema's function computes from the stored terms, and the statistics tables always
equal a recount of the chunks, whatever wrote or removed them."""

from __future__ import annotations

import random

import pytest
from django.db import connection

from knowledge.bases import kb_create
from parsing.lexical import (
    DL_CELL_LOWER,
    HEADING_WEIGHT,
    TF_CELL_UPPER,
    chunk_lexical_build,
    lexical_cell,
)

pytestmark = pytest.mark.django_db


def rows(query: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def test_cell_classes_follow_the_frequency_and_length_bounds():
    assert lexical_cell(tf=1, length=1) == "0.0"
    assert lexical_cell(tf=2, length=8) == "1.0" and lexical_cell(tf=2, length=9) == "1.1"
    assert lexical_cell(tf=6, length=100) == "4.7" and lexical_cell(tf=7, length=100) == "5.7"
    assert lexical_cell(tf=15, length=10**6) == f"{len(TF_CELL_UPPER)}.{len(DL_CELL_LOWER) - 1}"
    # A heading occurrence counts HEADING_WEIGHT times: one body and one heading occurrence.
    built = chunk_lexical_build(content="backup", heading_path=["Backup"])
    assert f"'backup~{TF_CELL_UPPER.index(1 + HEADING_WEIGHT)}.0'" in built.cells


def test_length_classes_in_sql_match_python():
    lengths = sorted({0, *DL_CELL_LOWER, *(bound - 1 for bound in DL_CELL_LOWER),
                      *(bound + 1 for bound in DL_CELL_LOWER), 10**6})
    found = rows("SELECT n, lexical_length_cell(n) FROM unnest(%s::int[]) AS n", [lengths])
    assert found == [(length, int(lexical_cell(tf=1, length=length).split(".")[1]))
                     for length in lengths]


def test_python_cells_equal_the_schema_function_on_random_chunks():
    rng = random.Random(3)
    words = ["alpha", "beta", "ERR-1042", "数据导出", "studies", "the", "x"] + \
        [f"w{i}" for i in range(40)]
    samples = []
    for _ in range(200):
        text = " ".join(rng.choices(words, k=rng.randint(1, 600)))
        if rng.random() < 0.1:
            text += " repeat" * 300  # over tsvector's 256 positions per lexeme
        headings = rng.sample(words, k=rng.randint(0, 3))
        built = chunk_lexical_build(content=text, heading_path=headings,
                                    relative_path=f"f/{rng.choice(words)}.md")
        samples.append(built)
    found = rows("SELECT lexical_cells_make(t::tsvector, n)::text = c::tsvector::text "
                 "FROM unnest(%s::text[], %s::int[], %s::text[]) AS s(t, n, c)",
                 [[s.terms for s in samples], [s.length for s in samples],
                  [s.cells for s in samples]])
    assert all(equal for (equal,) in found)


def recount() -> tuple[list, list, list]:
    return (rows("SELECT knowledge_base_id, count(*), sum(lexical_length) FROM chunks "
                 "WHERE lexical_terms IS NOT NULL GROUP BY 1 ORDER BY 1"),
            rows("SELECT knowledge_base_id, lexical_length_cell(lexical_length), count(*) "
                 "FROM chunks WHERE lexical_terms IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2"),
            rows("SELECT c.knowledge_base_id, t, count(*) FROM chunks c, "
                 "unnest(tsvector_to_array(c.lexical_terms)) AS t "
                 "WHERE c.lexical_terms IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2"))


def stored() -> tuple[list, list, list]:
    return (rows("SELECT knowledge_base_id, chunk_count, term_count FROM lexical_scope_stats "
                 "WHERE chunk_count > 0 ORDER BY 1"),
            rows("SELECT knowledge_base_id, length_cell, chunk_count FROM lexical_length_stats "
                 "WHERE chunk_count > 0 ORDER BY 1, 2"),
            rows("SELECT knowledge_base_id, term, df FROM lexical_term_stats ORDER BY 1, 2"))


def test_statistics_follow_inserts_updates_moves_and_deletes():
    other = kb_create(slug="other")
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash)"
                       " VALUES ('/v', '/v/a.md', 'a.md', 'h'), ('/v', '/v/b.md', 'b.md', 'h')"
                       " RETURNING id")
        first, second = (row[0] for row in cursor.fetchall())
        for document, texts in ((first, ["alpha beta", "beta gamma gamma", "数据导出"]),
                                (second, ["alpha", "delta ERR-1042 delta"])):
            for index, text in enumerate(texts):
                built = chunk_lexical_build(content=text)
                # No cells given: the schema's trigger makes them from the terms.
                cursor.execute(
                    "INSERT INTO chunks (document_id, chunk_index, content, file_path,"
                    " relative_path, content_hash, lexical_terms, lexical_length) VALUES"
                    " (%s, %s, %s, '/v/x.md', 'x.md', 'c', %s::tsvector, %s)",
                    [document, index, text, built.terms, built.length])
        assert rows("SELECT count(*) FROM chunks WHERE lexical_cells IS NULL") == [(0,)]
        assert stored() == recount() and recount()[2]
        # New terms for one chunk (an analyzer refresh), an update of other columns only.
        built = chunk_lexical_build(content="epsilon epsilon alpha")
        cursor.execute("UPDATE chunks SET lexical_terms = %s::tsvector, lexical_length = %s "
                       "WHERE content = 'alpha beta'", [built.terms, built.length])
        cursor.execute("UPDATE chunks SET token_count = 7")
        # The trigger made the refreshed chunk's cells anew from its new terms.
        assert rows("SELECT lexical_cells = %s::tsvector FROM chunks WHERE content = 'alpha beta'",
                    [built.cells]) == [(True,)]
        assert stored() == recount()
        # A document moves to another base: its chunks follow, and so do the statistics.
        cursor.execute("UPDATE documents SET knowledge_base_id = %s WHERE id = %s",
                       [other.id, second])
        assert stored() == recount()
        assert {row[0] for row in stored()[0]} == {row[0] for row in recount()[0]} \
            and len(stored()[0]) == 2
        # A delete cascading from documents.
        cursor.execute("DELETE FROM documents WHERE id = %s", [second])
        assert stored() == recount()
        assert not rows("SELECT 1 FROM lexical_term_stats WHERE df <= 0")


def test_rebuild_recounts_what_the_triggers_keep():
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash)"
                       " VALUES ('/v', '/v/a.md', 'a.md', 'h') RETURNING id")
        (document,) = cursor.fetchone()
        for index, text in enumerate(["one two", "two three three"]):
            built = chunk_lexical_build(content=text)
            cursor.execute(
                "INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path,"
                " content_hash, lexical_terms, lexical_length) VALUES (%s, %s, %s, '/v/a.md',"
                " 'a.md', 'c', %s::tsvector, %s)", [document, index, text, built.terms,
                                                    built.length])
        kept = stored()
        cursor.execute("SELECT lexical_scope_stats_rebuild()")
        assert stored() == kept == recount()
