"""BM25 top-k through the impact cells equals the exhaustive ranking: random corpora and queries
over two knowledge bases, small read budgets so that pruning really stops early, and scopes
that never see or depend on the other base's chunks."""

from __future__ import annotations

import itertools
import random

import pytest
from django.db import connection

from knowledge.bases import kb_create
from parsing.lexical import chunk_lexical_build
from retrieval import lexical
from retrieval.lexical import LexicalReport, lexical_search

pytestmark = pytest.mark.django_db

# A first read small enough for a corpus of a few hundred chunks: it reads a few cells, as the
# default budget does at 100k chunks.
SMALL_BUDGET = 15.0


def vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """Zipf-weighted words: a few very common ones (dropped or nearly), a long rare tail, some
    Chinese (bigrams) and identifiers (whole terms with parts)."""
    syllables = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]
    words = ["".join(rng.choices(syllables, k=rng.randint(2, 3))) for _ in range(300)]
    words += ["客户", "数据导出", "工单升级", "ERR-1042", "ERR-1043", "foo_bar.baz()", "v2.3.1"]
    rng.shuffle(words)
    return words, list(itertools.accumulate(1 / (rank + 1) ** 1.1 for rank in range(len(words))))


def corpus_add(rng: random.Random, words: tuple, *, base_id: int, chunks: int) -> list[int]:
    """`chunks` chunks of 1-400 words (lengths spread over many length classes, some words
    repeated many times), half with headings; their ids."""
    terms, weights = words
    document_path = f"n{rng.random()}.md"  # drawn first: the corpora stay what they were
    rows = []
    for _ in range(chunks):
        size = int(rng.choice([1, 3, 8, 20, 40, 80, 150, 400]) * rng.uniform(0.6, 1.4)) + 1
        text = rng.choices(terms, cum_weights=weights, k=size)
        if rng.random() < 0.2:  # a word repeated: high term-frequency cells
            text += [rng.choice(terms)] * rng.randint(3, 30)
        rng.shuffle(text)
        headings = ["Guide", rng.choice(terms)] if rng.random() < 0.5 else []
        rows.append((" ".join(text), headings, f"notes/{rng.choice(terms)}.md"))
    return chunks_add(base_id=base_id, document_path=document_path, rows=rows)


def chunks_add(*, base_id: int, document_path: str,
               rows: list[tuple[str, list[str], str]]) -> list[int]:
    """One document of the base holding chunks of (content, headings, file name the lexical
    terms take), their terms and cells made as the ingest makes them; their ids in order."""
    ids = []
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash,"
                       " knowledge_base_id) VALUES (%s, '/r/n.md', %s, 'h', %s) RETURNING id",
                       [f"/r{base_id}", document_path, base_id])
        (document,) = cursor.fetchone()
        for index, (content, headings, relative_path) in enumerate(rows):
            built = chunk_lexical_build(content=content, heading_path=headings,
                                        relative_path=relative_path)
            cursor.execute(
                "INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path,"
                " heading_path, content_hash, lexical_terms, lexical_length, lexical_cells)"
                " VALUES (%s, %s, %s, '/r/n.md', 'n.md', %s, %s, %s::tsvector, %s, %s::tsvector)"
                " RETURNING id",
                [document, index, content, headings, f"c{index}", built.terms,
                 built.length, built.cells])
            ids.append(cursor.fetchone()[0])
    return ids


def queries_make(rng: random.Random, words: tuple, count: int) -> list[str]:
    terms, weights = words
    return [" ".join(rng.choices(terms, cum_weights=weights, k=rng.randint(1, 8)))
            for _ in range(count)]


def ranking(hits) -> list[tuple[int, float, float]]:
    return [(hit.chunk_id, round(hit.score, 9), hit.matched_share) for hit in hits]


@pytest.fixture
def two_bases():
    rng = random.Random(5)
    words = vocabulary(rng)
    first = kb_create(slug="first")
    second = kb_create(slug="second")
    first_ids = corpus_add(rng, words, base_id=first.id, chunks=260)
    second_ids = corpus_add(rng, words, base_id=second.id, chunks=140)
    return rng, words, first, second, set(first_ids), set(second_ids)


def test_pruned_top_k_equals_the_exhaustive_ranking(two_bases, monkeypatch):
    rng, words, first, second, _, _ = two_bases
    monkeypatch.setattr(lexical, "FIRST_READ_BUDGET", SMALL_BUDGET)
    stopped_early = compared = combined = 0
    for query, limit, scope in itertools.product(queries_make(rng, words, 40), (1, 5, 20),
                                                 ([first.id], [first.id, second.id])):
        report = LexicalReport()
        pruned = lexical_search(query=query, limit=limit, knowledge_base_ids=scope,
                                report=report)
        full_report = LexicalReport()
        full = lexical_search(query=query, limit=limit, knowledge_base_ids=scope,
                              exhaustive=True, report=full_report)
        assert ranking(pruned) == ranking(full), (query, limit, scope)
        compared += bool(full)
        if report.scored < full_report.scored and report.cells_read < report.cells_total:
            stopped_early += 1
            combined += report.combinations > 0
    # The comparison means something: most rankings exist, and many stopped before the end.
    assert compared > 150
    assert stopped_early > 40
    assert combined > 10  # the second run's term sets settled some of them


def test_default_budgets_give_the_exhaustive_ranking_too(two_bases):
    rng, words, first, second, _, _ = two_bases
    for query in queries_make(rng, words, 20):
        scope = [first.id, second.id]
        assert ranking(lexical_search(query=query, limit=10, knowledge_base_ids=scope)) \
            == ranking(lexical_search(query=query, limit=10, knowledge_base_ids=scope,
                                      exhaustive=True))


def test_a_scoped_search_never_returns_or_depends_on_another_base(two_bases, monkeypatch):
    rng, words, first, second, first_ids, second_ids = two_bases
    monkeypatch.setattr(lexical, "FIRST_READ_BUDGET", SMALL_BUDGET)
    queries = queries_make(rng, words, 25)
    before = {query: ranking(lexical_search(query=query, limit=20,
                                            knowledge_base_ids=[first.id]))
              for query in queries}
    for query in queries:
        assert {hit for hit, _, _ in before[query]} <= first_ids
        only_second = lexical_search(query=query, limit=20, knowledge_base_ids=[second.id])
        assert {hit.chunk_id for hit in only_second} <= second_ids
    # More text in the other base, with the same words: the first base's scores stay the same.
    corpus_add(rng, words, base_id=second.id, chunks=120)
    for query in queries:
        assert ranking(lexical_search(query=query, limit=20,
                                      knowledge_base_ids=[first.id])) == before[query]


def test_identifier_hits_inside_compounds_are_scored_at_every_budget(monkeypatch):
    monkeypatch.setattr(lexical, "FIRST_READ_BUDGET", 1.0)
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash)"
                       " VALUES ('/v', '/v/n.md', 'n.md', 'h') RETURNING id")
        (document,) = cursor.fetchone()
        texts = ["call foo_bar.baz() now"] + [f"foo filler {i} bar" for i in range(30)]
        for index, text in enumerate(texts):
            built = chunk_lexical_build(content=text)
            cursor.execute(
                "INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path,"
                " content_hash, lexical_terms, lexical_length) VALUES (%s, %s, %s, '/v/n.md',"
                " 'n.md', 'c', %s::tsvector, %s) RETURNING id",
                [document, index, text, built.terms, built.length])
            if index == 0:
                (compound,) = cursor.fetchone()
    from access.callers import scope_all

    kb_ids = scope_all().knowledge_base_ids
    hits = lexical_search(query="foo_bar", limit=3, knowledge_base_ids=kb_ids)
    assert hits[0].chunk_id == compound and hits[0].matched_share == 1.0
    assert ranking(hits) == ranking(lexical_search(query="foo_bar", limit=3,
                                                   knowledge_base_ids=kb_ids, exhaustive=True))


def test_a_first_read_short_of_k_widens_instead_of_reading_everything(monkeypatch):
    """A rare term holds fewer chunks than asked for: the rest of the top k come from a common
    term, whose best cells (repeated, in short chunks) are read next; its other cells are not."""
    monkeypatch.setattr(lexical, "FIRST_READ_BUDGET", 2.0)
    rng = random.Random(11)
    base = kb_create(slug="widening")
    texts = [f"zebrafinch walrus {' '.join(['filler'] * rng.randint(5, 40))}" for _ in range(3)]
    # A third of the chunks hold the common term (a term in more than half is dropped).
    texts += [" ".join(["walrus"] * (rng.randint(1, 12) if index % 3 == 0 else 0)
                       + ["filler"] * rng.randint(1, 300) + [f"word{index}"])
              for index in range(400)]
    chunks_add(base_id=base.id, document_path="n.md", rows=[(text, [], "") for text in texts])
    report = LexicalReport()
    pruned = lexical_search(query="zebrafinch walrus", limit=10, knowledge_base_ids=[base.id],
                            report=report)
    full = lexical_search(query="zebrafinch walrus", limit=10, knowledge_base_ids=[base.id],
                          exhaustive=True)
    assert ranking(pruned) == ranking(full) and len(pruned) == 10
    assert {hit.content for hit in pruned[:3]} == set(texts[:3])
    assert report.levels >= 2  # the first run found the three chunks of the rare term only
    assert report.cells_read < report.cells_total  # and the widening stopped before the end
    assert report.scored < 3 + 134


def test_every_term_set_holds_one_of_the_anchors_read_for_it():
    plan = lexical._Plan(terms=["rare", "common", "mid", "other"], idfs=[4.0, 0.5, 2.0, 1.0],
                         dfs=[10, 5_000, 300, 2_000], avgdl=50.0, cells=[], pair_bonuses=[])
    combinations = ((0, 1), (0, 2), (1, 2), (1, 3), (2, 3))
    anchors = plan.anchors(combinations)
    assert all(set(group) & set(anchors) for group in combinations)
    # The rare term covers two sets for 10 chunks, then `mid` the sets left but the last, which
    # only `common` or `other` can cover: `other` is rarer.
    assert anchors == [0, 2, 3]
    assert plan.anchors(()) == []
