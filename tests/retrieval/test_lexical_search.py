"""The lexical channel on the real database: BM25 against hand-computed scores, the dropped
common terms, the phrase bonus, Chinese words, identifiers and safe query building."""

from __future__ import annotations

import math

import psycopg
import pytest
from django.db import connection

from access.callers import scope_all
from core.errors import InvalidRequest
from knowledge.db_schema import index_connection
from parsing.lexical import chunk_lexical_build, tsvector_literal_build
from retrieval import sql
from retrieval.lexical import ALL_CELLS, lexical_search
from retrieval.lexical_query import lexical_query_terms

pytestmark = pytest.mark.django_db

K1, B = 1.2, 0.75  # written out here, so a changed constant fails the hand-computed scores


def add_chunks(*contents: str) -> list[int]:
    """One document holding these chunks, with their lexical terms; their ids in order."""
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash) "
                       "VALUES ('/v', '/v/n.md', 'n.md', 'h') RETURNING id")
        (document,) = cursor.fetchone()
        ids = []
        for index, content in enumerate(contents):
            lexical = chunk_lexical_build(content=content)
            cursor.execute(
                "INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path, "
                "heading_path, content_hash, lexical_terms, lexical_length) VALUES (%s, %s, %s, "
                "'/v/n.md', 'n.md', ARRAY['N', %s], %s, %s::tsvector, %s) RETURNING id",
                [document, index, content, f"H{index}", f"c{index}", lexical.terms,
                 lexical.length])
            ids.append(cursor.fetchone()[0])
    return ids


def idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def bm25(*, idf_value: float, tf: int, dl: int, avgdl: float) -> float:
    return idf_value * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))


def search(query: str, limit: int = 10):
    """The lexical channel over every knowledge base."""
    return lexical_search(knowledge_base_ids=scope_all().knowledge_base_ids, query=query,
                          limit=limit)


def ids(hits) -> list[int]:
    return [hit.chunk_id for hit in hits]


def test_scores_match_a_hand_computed_bm25():
    first, second, third, _ = add_chunks("alpha beta gamma", "alpha alpha delta",
                                         "beta epsilon zeta eta", "theta iota")
    avgdl = (3 + 3 + 4 + 2) / 4
    both = idf(4, 2)  # alpha and beta are each in 2 of 4 chunks: ln 2
    assert both == pytest.approx(math.log(2), abs=1e-12)
    hits = search("alpha beta")
    assert ids(hits) == [first, second, third]
    expected = [
        # both terms once, adjacent in query order: + 0.5 * mean idf of the pair
        bm25(idf_value=both, tf=1, dl=3, avgdl=avgdl) * 2 + 0.5 * (both + both) / 2,
        bm25(idf_value=both, tf=2, dl=3, avgdl=avgdl),
        bm25(idf_value=both, tf=1, dl=4, avgdl=avgdl),
    ]
    assert [hit.score for hit in hits] == pytest.approx(expected, abs=1e-6)
    assert [hit.rank for hit in hits] == [1, 2, 3]
    assert [hit.matched_share for hit in hits] == [1.0, 0.5, 0.5]
    assert (hits[0].content, hits[0].relative_path, hits[0].heading_path, hits[0].chunk_index,
            hits[0].content_hash) == ("alpha beta gamma", "n.md", ["N", "H0"], 0, "c0")


def test_terms_in_more_than_half_of_the_chunks_are_dropped():
    rare, *_ = add_chunks("common rare", "common other half", "common thing half",
                          "unrelated words")
    assert search("common") == []  # in 3 of 4 chunks
    (hit,) = search("common rare")
    avgdl = (2 + 3 + 3 + 2) / 4
    assert hit.chunk_id == rare and hit.matched_share == 1.0  # `common` is not counted at all
    assert hit.score == pytest.approx(bm25(idf_value=idf(4, 1), tf=1, dl=2, avgdl=avgdl),
                                      abs=1e-6)
    assert len(search("half")) == 2  # exactly half is kept


def test_query_terms_adjacent_in_query_order_earn_the_phrase_bonus():
    in_order, reversed_pair, apart, *_ = add_chunks(
        "red apple pie", "apple red pie", "red big apple", "x y z", "u v w", "k l m")
    hits = search("red apple")
    assert ids(hits) == [in_order, reversed_pair, apart]  # equal scores: by chunk id
    assert hits[1].score == hits[2].score
    assert hits[0].score - hits[1].score == pytest.approx(0.5 * idf(6, 3), abs=1e-9)


def test_chinese_two_character_word_is_found_inside_a_longer_run():
    export_limits, imported, _, limits_note = add_chunks("数据导出限制", "导入数据", "客户升级",
                                                         "限制说明")
    assert ids(search("导出")) == [export_limits]
    hits = search("导出限制是多少？")
    assert ids(hits) == [export_limits, limits_note]
    assert imported not in ids(hits)


def test_identifier_is_found_exactly_and_not_inside_a_longer_number():
    exact, other_code, longer, *_ = add_chunks(
        "ERR-1042 timeout", "ERR-1043 timeout", "ERR-10420 other", "lorem ipsum", "dolor sit",
        "amet elit", "sed do")
    hits = search("ＥＲＲ－１０４２")
    assert hits[0].chunk_id == exact and hits[0].matched_share == 1.0
    # The others hold only `err`: never `err-1042` or `1042`, not even as a substring.
    assert ids(hits[1:]) == [other_code, longer]
    assert hits[1].matched_share == hits[2].matched_share == pytest.approx(1 / 3)


def test_identifier_split_differently_in_the_text_is_found_through_trigrams():
    dotted, glued, *_ = add_chunks("call foo_bar.baz() now", "foo_barx is another name",
                                   "lorem ipsum", "dolor sit", "amet elit")
    hits = search("foo_bar")
    # `foo_bar` is no term of `foo_bar.baz` (only the whole and foo, bar, baz are): the text
    # holds it between `call ` and `.`, which the trigram lookup finds; `foo_barx` does not.
    assert hits[0].chunk_id == dotted and hits[0].matched_share == 1.0
    # call | foo_bar.baz foo bar baz | now: 6 terms; foo_barx foo barx | another | name: 5 (`is`
    # is a stop word)
    n, avgdl = 5, (6 + 5 + 2 + 2 + 2) / 5
    expected = sum(bm25(idf_value=idf(n, 1), tf=1, dl=6, avgdl=avgdl) for _ in range(2)) \
        + bm25(idf_value=idf(n, 2), tf=1, dl=6, avgdl=avgdl)  # foo_bar, bar: 1 chunk; foo: 2
    assert hits[0].score == pytest.approx(expected, abs=1e-6)
    assert glued in ids(hits) and hits[1].matched_share == pytest.approx(1 / 3)  # only `foo`


def test_identifier_characters_are_matched_literally():
    add_chunks("abxc12 here", "lorem ipsum", "dolor sit")
    assert search("ab.c12") == []  # `.` is no wildcard


def test_quotes_and_backslashes_in_terms_are_bound_safely():
    # The tokenizer never makes such terms, but the statement must quote whatever it gets.
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash) "
                       "VALUES ('/v', '/v/q.md', 'q.md', 'h') RETURNING id")
        (document,) = cursor.fetchone()
        for index, term in enumerate(["it's", "back\\slash", "plain"]):
            lexical = tsvector_literal_build(positions={term: [1]})
            cursor.execute(
                "INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path, "
                "content_hash, lexical_terms, lexical_length) VALUES (%s, %s, %s, '/v/q.md', "
                "'q.md', 'c', %s::tsvector, %s)",
                [document, index, term, lexical.terms, lexical.length])
    conn = index_connection()
    kb_ids = list(scope_all().knowledge_base_ids)
    for term in ["it's", "back\\slash"]:
        with psycopg.Cursor(conn) as cursor:
            cursor.execute(sql.LEXICAL_STATS, {"terms": [term], "identifier_parts": [term],
                                               "cells": ALL_CELLS, "kb_ids": kb_ids})
            assert cursor.fetchone()[4] == [1]  # its df, through the quoted lexeme
            # Through its cells, and through the prefix of a combination.
            for cells, combination in (([f"{term}~{cell}" for cell in ALL_CELLS], []),
                                       ([], [term])):
                cursor.execute(sql.LEXICAL_SCORE, {
                    "terms": [term], "idfs": [1.0], "hit_terms": [], "hit_chunks": [],
                    "read_cells": cells, "combination_terms": combination,
                    "combination_groups": [0] * len(combination),
                    "anchor_terms": combination, "pair_left": [],
                    "pair_right": [], "k1": sql.BM25_K1, "b": sql.BM25_B, "avgdl": 1.0,
                    "phrase_weight": sql.LEXICAL_PHRASE_WEIGHT,
                    "heading_weight": sql.LEXICAL_HEADING_WEIGHT, "limit": 5, "kb_ids": kb_ids})
                assert [row[1] for row in cursor.fetchall()] == [term]


def test_a_chunk_both_read_through_a_term_set_and_hit_as_an_identifier_is_scored_once():
    # `foo_bar` only inside the compound `foo_bar.baz()`: an identifier hit; `deploy` reads the
    # chunk again as a term set's chunk. Scored once, it holds both kept terms once each.
    compound, other = add_chunks("see foo_bar.baz() and deploy", "deploy elsewhere")
    conn = index_connection()
    kb_ids = list(scope_all().knowledge_base_ids)
    with psycopg.Cursor(conn) as cursor:
        scores = {}
        for reading, sets in ((["deploy~" + cell for cell in ALL_CELLS], []),
                              (["unrelated~0.0"], ["deploy"])):
            cursor.execute(sql.LEXICAL_SCORE, {
                "terms": ["deploy", "foo_bar"], "idfs": [1.0, 2.0],
                "hit_terms": ["foo_bar"], "hit_chunks": [compound], "read_cells": reading,
                "combination_terms": sets, "combination_groups": [0] * len(sets),
                "anchor_terms": sets, "pair_left": [], "pair_right": [], "k1": sql.BM25_K1,
                "b": sql.BM25_B, "avgdl": 4.0, "phrase_weight": sql.LEXICAL_PHRASE_WEIGHT,
                "heading_weight": sql.LEXICAL_HEADING_WEIGHT, "limit": 5, "kb_ids": kb_ids})
            rows = cursor.fetchall()
            assert [(row[0], row[11]) for row in rows] == [(compound, 1.0), (other, 0.5)]
            scores[bool(sets)] = [row[10] for row in rows]
        assert scores[True] == scores[False]  # the same scores through the cells or the set


def test_ties_are_broken_by_chunk_id_and_limit_applies():
    chunk_ids = add_chunks("same words", "same words", "same words", "x", "y", "z", "w")
    hits = search("same", limit=2)
    assert ids(hits) == chunk_ids[:2] and [hit.rank for hit in hits] == [1, 2]
    assert hits[0].score == hits[1].score


def test_query_without_usable_terms_finds_nothing():
    add_chunks("deploy notes", "other")
    assert search("🎉 ，。!", limit=5) == []
    assert search("missing", limit=5) == []


def test_limit_below_one_is_invalid():
    with pytest.raises(InvalidRequest):
        search("x", limit=0)


def test_query_terms_are_distinct_tokenizer_terms_in_order():
    assert lexical_query_terms("Atlas CRM 导出限制 ERR-1042 atlas") == [
        "atlas", "crm", "导出", "出限", "限制", "err-1042", "err", "1042"]
