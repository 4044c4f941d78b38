"""Metadata filters of a search: each kind admits exactly the matching documents, in every mode,
before ranking (so `top_k` still come back), and a malformed filter is a 422 naming its field."""

from __future__ import annotations

import pytest
from django.db import connection

from access.callers import scope_all
from core.config import get_config
from core.errors import InvalidRequest
from knowledge.ingest import IngestRequest, vault_ingest
from retrieval import lexical, vector
from retrieval.filters import filtered_scope, filters_parse
from retrieval.lexical import lexical_search
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.harness import config_changed

MODES = ("vector", "lexical", "hybrid")
QUERY = "copper porphyry drilling assay intervals"
SECTIONS = 3


def _note(*, title: str, frontmatter: str, words: str) -> str:
    sections = "\n\n".join(f"## Part {n}\n\n{words} section {n} of {title}: drilling assay "
                           f"intervals, copper grades and core recovery." for n in
                           range(1, SECTIONS + 1))
    return f"---\n{frontmatter}\n---\n# {title}\n\n{sections}\n"


@pytest.fixture
def reports(db, tmp_path):
    """Twelve reports: four per year 2019-2021, in folders by region; 2021's say the query's
    words most often and 2019's least, so an unfiltered search returns none of 2019."""
    vault = tmp_path / "vault"
    regions = ("yunnan", "sichuan", "tibet", "gansu")
    for year, repeat in ((2019, 0), (2020, 1), (2021, 4)):
        for number, region in enumerate(regions):
            folder = vault / "reports" / region
            folder.mkdir(parents=True, exist_ok=True)
            year_value = f'"{year}"' if number % 2 else str(year)  # written both ways
            frontmatter = (f"year: {year_value}\nregion: {region.title()}\n"
                           f"mineral: [copper, {'gold' if number < 2 else 'molybdenum'}]\n"
                           f"surveyed: {year}-0{number + 1}-15\ntags: [geology, y{year}]")
            words = " ".join(["copper porphyry drilling"] * repeat)
            (folder / f"{region}-{year}.md").write_text(_note(
                title=f"{region.title()} survey {year}", frontmatter=frontmatter, words=words))
    (vault / "notes.txt").write_text("copper porphyry drilling assay intervals in a plain file")
    # Other subjects, so the query's words stay rare enough to count for BM25.
    other = vault / "admin"
    other.mkdir()
    for number in range(60):
        (other / f"memo-{number}.md").write_text(
            f"# Memo {number}\n\nCanteen menu, parking permits and holiday rota {number}.\n")
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    return vault


def run(query: str = QUERY, *, filters, mode: str = "hybrid", top_k: int = 5):
    config = config_changed(get_config(), rag_retrieval=mode)
    return search(RetrievalRequest(query=query, scope=scope_all(), top_k=top_k,
                                   filters=filters_parse(filters)), config=config)


def paths(outcome) -> set[str]:
    return {hit.relative_path for hit in outcome.results}


@pytest.mark.parametrize("mode", MODES)
def test_a_year_and_a_folder_return_only_matching_documents_and_still_top_k(reports, mode):
    unfiltered = run(filters=None, mode=mode, top_k=5)
    assert not any("2019" in path for path in paths(unfiltered))
    outcome = run(filters={"frontmatter": {"year": 2019}, "folder": "reports/yunnan"},
                  mode=mode, top_k=5)
    # One document of three sections matches: all its chunks, no other.
    assert paths(outcome) == {"reports/yunnan/yunnan-2019.md"}
    assert len(outcome.results) == SECTIONS
    outcome = run(filters={"frontmatter": {"year": 2019}}, mode=mode, top_k=5)
    assert len(outcome.results) == 5
    assert paths(outcome) <= {f"reports/{r}/{r}-2019.md"
                              for r in ("yunnan", "sichuan", "tibet", "gansu")}


@pytest.mark.parametrize("mode", MODES)
def test_every_kind_of_filter(reports, mode):
    def matched(filters) -> set[str]:
        return paths(run(filters=filters, mode=mode, top_k=20))

    # A number matches 2020 and "2020"; a string "2020" matches both too.
    assert matched({"frontmatter": {"year": 2020}}) == matched({"frontmatter": {"year": "2020"}})
    assert len(matched({"frontmatter": {"year": 2020}})) == 4
    # A list field matches when one item does; a list condition is one-of.
    assert matched({"frontmatter": {"mineral": "molybdenum", "year": [2019, 2021]}}) == {
        "reports/tibet/tibet-2019.md", "reports/gansu/gansu-2019.md",
        "reports/tibet/tibet-2021.md", "reports/gansu/gansu-2021.md"}
    # A numeric range reads "2020" as the number it is; a string range orders ISO dates.
    assert matched({"frontmatter": {"year": {"gte": 2020, "lt": 2021}}}) == matched(
        {"frontmatter": {"year": 2020}})
    assert matched({"frontmatter": {"surveyed": {"gte": "2020-03-01", "lte": "2020-12-31"}}}) == {
        "reports/tibet/tibet-2020.md", "reports/gansu/gansu-2020.md"}
    assert matched({"frontmatter": {"region": {"in": ["Tibet", "Gansu"], "eq": "Tibet"}}}) == {
        f"reports/tibet/tibet-{year}.md" for year in (2019, 2020, 2021)}
    # Tags: every one of `tags`, one of `tags_any`, ignoring case and `#`.
    assert matched({"tags": ["#Geology", "y2019"]}) == matched({"frontmatter": {"year": 2019}})
    either = filters_parse({"tags_any": ["y2019", "Y2020"]})
    assert either is not None
    assert len(filtered_scope(filters=either, knowledge_base_ids=scope_all().knowledge_base_ids)
               .document_ids) == 8
    assert matched({"tags_any": ["y2019", "Y2020"]}) <= {
        f"reports/{region}/{region}-{year}.md" for region in ("tibet", "gansu", "yunnan",
                                                           "sichuan") for year in (2019, 2020)}
    assert matched({"format": ["txt"]}) == {"notes.txt"}
    assert matched({"folder": ["reports/tibet/", "./reports/gansu"]}) == {
        f"reports/{region}/{region}-{year}.md" for region in ("tibet", "gansu")
        for year in (2019, 2020, 2021)}
    # A note's title is its frontmatter `title`, else its path; case is ignored. A folder is a
    # whole folder, not a prefix of a name.
    assert matched({"title": "SICHUAN-2020"}) == {"reports/sichuan/sichuan-2020.md"}
    assert matched({"folder": "reports/tib"}) == set()
    assert matched({"frontmatter": {"year": 1999}}) == set()


def test_dates_ingested_and_updated(reports):
    with connection.cursor() as cursor:
        cursor.execute("UPDATE documents SET created_at = '2020-06-01T00:00:00Z' "
                       "WHERE relative_path LIKE %s", ["reports/yunnan/%"])
        cursor.execute("UPDATE documents SET updated_at = '2030-01-01T00:00:00+08:00' "
                       "WHERE relative_path = 'notes.txt'")
    assert paths(run(filters={"ingested": {"lt": "2021-01-01"}}, top_k=20)) == {
        f"reports/yunnan/yunnan-{year}.md" for year in (2019, 2020, 2021)}
    # 2030-01-01T00:00+08:00 is 2029-12-31T16:00Z: after 15:00 UTC, not after 17:00.
    assert paths(run(filters={"updated": {"gte": "2029-12-31T17:00:00Z"}}, top_k=20)) == set()
    assert paths(run(filters={"updated": {"gte": "2029-12-31T15:00:00"}}, top_k=20)) == {
        "notes.txt"}


@pytest.mark.parametrize("mode", ("vector", "lexical"))
def test_the_large_scope_paths_give_the_same_results(reports, mode, monkeypatch):
    """Below the bounds a filtered search scans its chunks whole; above them it reads the
    index as an unfiltered search does, with the filter inside the statement. Same results."""
    filters = {"frontmatter": {"year": {"gte": 2020}}, "tags_any": ["y2021", "y2020"]}
    small = run(filters=filters, mode=mode, top_k=7)
    monkeypatch.setattr(vector, "FILTER_EXACT_CHUNKS", 0)
    monkeypatch.setattr(lexical, "FILTER_SCORE_ALL_CHUNKS", 0)
    large = run(filters=filters, mode=mode, top_k=7)
    assert [(h.relative_path, h.chunk_index, h.score) for h in large.results] == [
        (h.relative_path, h.chunk_index, h.score) for h in small.results]
    assert len(small.results) == 7 and all("2019" not in path for path in paths(small))


def test_lexical_filtered_is_the_exhaustive_ranking_of_the_admitted_chunks(reports):
    scope = filtered_scope(filters=filters_parse({"frontmatter": {"mineral": "gold"}}),
                           knowledge_base_ids=scope_all().knowledge_base_ids)
    assert len(scope.document_ids) == 6 and scope.chunks == 6 * SECTIONS
    pruned = lexical_search(query=QUERY, limit=4, knowledge_base_ids=scope_all()
                            .knowledge_base_ids, scope=scope)
    everything = lexical_search(query=QUERY, limit=100, knowledge_base_ids=scope_all()
                                .knowledge_base_ids, exhaustive=True)
    admitted = [hit for hit in everything if hit.document_id in set(scope.document_ids)]
    assert [(h.chunk_id, h.score) for h in pruned] == [(h.chunk_id, h.score)
                                                       for h in admitted[:4]]


def test_explain_reports_the_filter(reports):
    config = config_changed(get_config(), rag_retrieval="hybrid")
    outcome = search(RetrievalRequest(
        query=QUERY, scope=scope_all(), top_k=3, explain=True,
        filters=filters_parse({"format": "markdown", "folder": "reports/gansu"})), config=config)
    assert outcome.explain is not None
    assert outcome.explain["parameters"]["filters"] == {
        "format": ["markdown"], "folder": ["reports/gansu/"], "documents": 3,
        "chunks": 3 * SECTIONS}
    assert "filter" in outcome.explain["timings_ms"]


@pytest.mark.parametrize(("filters", "field"), [
    ({"frontmatter": {"year": {"between": 1}}}, "filters.frontmatter.year.between"),
    ({"frontmatter": {"year": {"gte": 2019, "lt": "2021"}}}, "filters.frontmatter.year"),
    ({"frontmatter": {"year": []}}, "filters.frontmatter.year"),
    ({"frontmatter": {"year": {"gte": True}}}, "filters.frontmatter.year.gte"),
    ({"frontmatter": {"year": float("nan")}}, "filters.frontmatter.year"),
    ({"frontmatter": {f"f{n}": 1 for n in range(21)}}, "filters.frontmatter"),
    ({"format": ["pptx"]}, "filters.format"),
    ({"folder": "/"}, "filters.folder"),
    ({"tags": ["#"]}, "filters.tags"),
    ({"ingested": {"gte": "last tuesday"}}, "filters.ingested.gte"),
    ({"ingested": {"after": "2020-01-01"}}, "filters.ingested.after"),
    ({"region": "yunnan"}, "filters.region"),
    ({"title": "x" * 501}, "filters.title"),
])
def test_malformed_filters_name_their_field(filters, field):
    with pytest.raises(InvalidRequest) as raised:
        filters_parse(filters)
    assert raised.value.details["field"] == field and raised.value.http_status == 422


def test_empty_filters_are_no_filter():
    assert filters_parse(None) is None and filters_parse({}) is None


def test_a_value_cannot_reach_the_statement(reports):
    """Quotes, jsonpath syntax and LIKE wildcards in values are values: they match nothing."""
    for filters in ({"frontmatter": {'year" || true || "': 1}},
                    {"frontmatter": {"region": '") || (@ == @'}},
                    {"title": "%"}, {"folder": "reports/_ibet"},
                    {"frontmatter": {"region": "' OR 1=1 --"}}):
        outcome = run(filters=filters, top_k=20)
        assert outcome.results == [], filters


def test_a_filtered_search_through_the_hnsw_index_keeps_to_the_filter(reports, monkeypatch):
    """Above FILTER_EXACT_CHUNKS the vector channel walks the HNSW graph with the documents
    inside its statement (search_hnsw, filtered): every hit admitted and still top_k of them."""
    from embeddings import get_embedder
    from index.vector_index import vector_index_build
    from retrieval.filters import filtered_scope
    from retrieval.vector import vector_search

    vector_index_build(config=get_config())
    scope = filtered_scope(filters=filters_parse({"frontmatter": {"year": [2019, 2020]}}),
                           knowledge_base_ids=scope_all().knowledge_base_ids)
    embedder = get_embedder(config=get_config())
    query = embedder.embed_query(QUERY)

    def hits(index: str) -> list:
        config = config_changed(get_config(), rag_vector_index=index)
        return vector_search(vector=query, limit=6, config=config, embedder=embedder,
                             knowledge_base_ids=scope_all().knowledge_base_ids, scope=scope)

    exact = hits("exact")
    monkeypatch.setattr(vector, "FILTER_EXACT_CHUNKS", 0)
    # The graph is walked first (its statement always runs); on a graph this small it may run
    # out of admitted chunks before six, and the exact scan of them answers instead.
    ran = []
    statements = vector.sql.search_hnsw
    monkeypatch.setattr(vector.sql, "search_hnsw", lambda key, *, filtered: _Noted(
        statements(key, filtered=filtered), ran) if filtered else statements(key, filtered=False))
    walked = hits("hnsw")
    assert ran
    assert len(walked) == 6 and {hit.document_id for hit in walked} <= set(scope.document_ids)
    assert [hit.distance for hit in walked] == sorted(hit.distance for hit in walked)
    # Approximate: never nearer than the exact scan of the admitted chunks.
    assert all(round(found.distance, 6) >= round(best.distance, 6)
               for found, best in zip(walked, exact, strict=True))


class _Noted(str):
    """A statement that notes each time psycopg reads it."""

    def __new__(cls, text: str, ran: list) -> _Noted:
        noted = super().__new__(cls, text)
        noted.ran = ran
        return noted

    def encode(self, *args, **kwargs) -> bytes:  # type: ignore[override]
        self.ran.append(True)
        return super().encode(*args, **kwargs)
