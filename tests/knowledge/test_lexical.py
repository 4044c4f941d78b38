"""The lexical tokenizer, the tsvector literal on the real database, the corpus statistics that
triggers keep, the fill of older chunks by ingest, and the UTF-8 check of `rag db init`."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from django.db import connection

from core.config import get_config
from core.dburl import database_settings
from knowledge import store_sql as knowledge_sql
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.store import chunks_lexical_refresh
from ops.db_init import DatabaseNotUtf8, database_utf8_check
from parsing.lexical import (
    ANALYZER_VERSION,
    POSITION_MAX,
    TERM_MAX_CHARS,
    chunk_lexical_build,
    lexeme_quote,
    text_analyze,
    text_tokenize,
    tsvector_literal_build,
)
from tests.conftest import cli_env
from tests.harness import bootstrap_credentials


def terms(text: str) -> list[tuple[str, ...]]:
    return text_tokenize(text=text)


def rows(query: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


# The tokenizer ---------------------------------------------------------------------------------

def test_mixed_scripts_give_words_then_chinese_bigrams():
    assert terms("Atlas CRM的导出限制是多少") == [
        ("atlas",), ("crm",), ("的导",), ("导出",), ("出限",), ("限制",), ("制是",), ("是多",),
        ("多少",)]


def test_full_width_identifier_is_normalised_and_kept_whole_with_its_parts():
    assert terms("ＥＲＲ－１０４２") == [("err-1042", "err", "1042")]
    assert terms("ERR-1042") == terms("err-1042") == terms("ＥＲＲ－１０４２")


def test_identifiers_keep_inner_connectors_but_not_outer_punctuation():
    assert terms("(v2.3.1). inc-2024-031, a/b x.y #481 tag:") == [
        ("v2.3.1", "v2", "3", "1"), ("inc-2024-031", "inc", "2024", "031"), ("a/b", "a", "b"),
        ("x.y", "x", "y"), ("481",), ("tag",)]


def test_code_is_split_at_brackets_and_keeps_dotted_names():
    assert terms("arr[10] = foo_bar.baz();") == [
        ("arr",), ("10",), ("foo_bar.baz", "foo", "bar", "baz")]


def test_url_is_one_token_up_to_its_query_string():
    assert terms("see https://example.com/a/b?x=1.") == [
        ("see",), ("https://example.com/a/b", "https", "example", "com", "a", "b"), ("x",),
        ("1",)]


def test_chinese_punctuation_ends_a_run_and_a_single_character_stays_a_unigram():
    assert terms("数据导出限制。客户，车！") == [
        ("数据",), ("据导",), ("导出",), ("出限",), ("限制",), ("客户",), ("车",)]


def test_emoji_and_symbols_are_dropped():
    assert terms("deploy 🎉🚀 done👍 ✓ → ok") == [("deploy",), ("done",), ("ok",)]
    assert terms("🎉 ✓ ，。") == []


def test_other_scripts_are_case_folded_words():
    assert terms("Café ÉCOLE Привет МИР straße") == [
        ("café",), ("école",), ("привет",), ("мир",), ("strasse",)]
    # A dotted capital I folds to i + a combining dot, which stays inside the word.
    assert terms("İstanbul") == [("i\u0307stanbul",)]


def test_very_long_token_is_cut_without_a_trailing_connector():
    long = "a" * (TERM_MAX_CHARS - 1) + "-" + "b" * 50
    (token,) = terms(long)
    assert token[0] == "a" * (TERM_MAX_CHARS - 1)  # cut at the limit, then the `-` stripped
    assert token[1:] == ("b" * 50,)
    assert all(len(term) <= TERM_MAX_CHARS for term in token)


def test_positions_count_tokens_and_a_compound_shares_one_position():
    built = chunk_lexical_build(content="ERR-1042 timeout, ERR-1042 again")
    assert built.terms == ("'1042':1,3 'again':4 'err':1,3 'err-1042':1,3 'timeout':2")
    assert built.length == 8


def test_positions_are_capped_like_tsvector_does():
    built = tsvector_literal_build(positions={"x": range(1, 301), "y": [20000, 16383, 5]})
    x_part, y_part = built.terms.split(" ")
    assert x_part == "'x':" + ",".join(str(p) for p in range(1, 257))
    assert y_part == f"'y':5,{POSITION_MAX}"
    assert built.length == 256 + 2


def test_long_content_keeps_the_same_limits():
    built = chunk_lexical_build(content="x " * 16390 + "z z")
    assert built.terms == ("'x':" + ",".join(str(p) for p in range(1, 257))
                           + f" 'z':{POSITION_MAX}")  # 16391 and 16392 both become 16383
    assert built.length == 256 + 1


def test_quotes_and_backslashes_are_escaped_in_a_lexeme():
    assert lexeme_quote("it's") == "'it''s'"
    assert lexeme_quote("back\\slash") == "'back\\\\slash'"


# The analyzer ----------------------------------------------------------------------------------

def test_english_words_become_snowball_stems_shared_by_their_forms():
    assert text_analyze(text="Studies studying studied") == [("studi",), ("studi",), ("studi",)]
    assert text_analyze(text="restore restored restoring") == [("restor",)] * 3


def test_stop_words_give_no_term_but_keep_their_position():
    assert text_analyze(text="the export of data") == [(), ("export",), (), ("data",)]
    built = chunk_lexical_build(content="export the data")
    assert built.terms == "'data':3 'export':1" and built.length == 2


def test_identifiers_stay_whole_and_exact_and_their_parts_are_stemmed():
    assert text_analyze(text="ERR-1042 v2.3.1 read_cache_enabled") == [
        ("err-1042", "err", "1042"), ("v2.3.1", "v2", "3", "1"),
        ("read_cache_enabled", "read", "cach", "enabl")]
    # A part is never dropped as a stop word: `a/b` keeps `a`.
    assert text_analyze(text="a/b") == [("a/b", "a", "b")]


def test_chinese_bigrams_numbers_and_other_scripts_are_not_stemmed():
    assert text_analyze(text="数据导出 Atlas 2024 Привет café") == [
        ("数据",), ("据导",), ("导出",), ("atlas",), ("2024",), ("привет",), ("café",)]


def test_headings_are_indexed_after_the_content_with_weight_b():
    built = chunk_lexical_build(content="Restore the backups", heading_path=["Runbook", "Backups"])
    # content: restor 1, backup 3; one empty position, then `runbook` 5; again, then `backup` 7
    assert built.terms == "'backup':3,7B 'restor':1 'runbook':5B"
    assert built.length == 4


def test_the_file_name_is_the_first_heading_unless_the_title_says_it_already():
    page = chunk_lexical_build(content="次生富集带 41.6 m",
                               relative_path="reports/ZK-0815 编录.pdf")
    # content: 次生 1, 生富 2, 富集 3, 集带 4, 41.6 (+ 41, 6) 5, m 6; the file name from 8
    assert page.terms == ("'0815':8B '41':5 '41.6':5 '6':5 'm':6 'zk':8B 'zk-0815':8B "
                          "'富集':3 '次生':1 '生富':2 '编录':9B '集带':4")
    titled = chunk_lexical_build(content="Body", heading_path=["Backup Runbook"],
                                 relative_path="ops/backup runbook.md")
    assert titled.terms == "'backup':3B 'bodi':1 'runbook':4B"


def test_the_stale_chunk_queries_name_the_current_analyzer_version():
    schema = "".join(path.read_text(encoding="utf-8") for path in
                     sorted((Path(knowledge_sql.__file__).parent / "migrations").glob("*.sql")))
    literal = f"lexical_version IS DISTINCT FROM {ANALYZER_VERSION}"
    assert f"idx_chunks_lexical_stale_v{ANALYZER_VERSION}" in schema and literal in schema
    assert literal in knowledge_sql.CHUNKS_LEXICAL_STALE
    assert literal in knowledge_sql.FILL_CHUNKS_LEXICAL


# The tsvector literal on PostgreSQL ---------------------------------------------------------------

@pytest.mark.django_db
def test_chunk_terms_round_trip_through_postgresql_exactly():
    built = chunk_lexical_build(content="Atlas CRM 的导出限制 ERR-1042，导出！")
    stored = rows("SELECT lexeme, positions FROM unnest(%s::tsvector)", [built.terms])
    assert {lexeme: list(positions) for lexeme, positions in stored} == {
        "atlas": [1], "crm": [2], "的导": [3], "导出": [4, 8], "出限": [5], "限制": [6],
        "err-1042": [7], "err": [7], "1042": [7]}
    assert sum(len(positions) for _, positions in stored) == built.length == 10


@pytest.mark.django_db
def test_quotes_and_backslashes_round_trip_through_postgresql():
    built = tsvector_literal_build(positions={"it's": [1], "back\\slash": [2], "''": [3],
                                              "a\\'b": [4]})
    with connection.cursor() as cursor:  # stored the way ingest stores it, then read back
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash) "
                       "VALUES ('/v', '/v/q.md', 'q.md', 'h') RETURNING id")
        cursor.execute("INSERT INTO chunks (document_id, chunk_index, content, file_path, "
                       "relative_path, content_hash, lexical_terms, lexical_length) VALUES "
                       "(%s, 0, 'q', '/v/q.md', 'q.md', 'c', %s::tsvector, %s) "
                       "RETURNING lexical_terms::text",
                       [cursor.fetchone()[0], built.terms, built.length])
        (text,) = cursor.fetchone()
    # PostgreSQL sorts lexemes bytewise and prints them with its own quoting: the same as ours.
    assert text == "'''''':3 'a\\\\''b':4 'back\\\\slash':2 'it''s':1"
    stored = dict(rows("SELECT lexeme, positions FROM unnest(%s::tsvector)", [built.terms]))
    assert {lexeme: list(p) for lexeme, p in stored.items()} == {
        "it's": [1], "back\\slash": [2], "''": [3], "a\\'b": [4]}


# Corpus statistics ------------------------------------------------------------------------------

def stats() -> tuple[int, int]:
    return rows("SELECT chunk_count, term_count FROM lexical_stats")[0]


def recount() -> tuple[int, int]:
    return rows("SELECT count(*), coalesce(sum(lexical_length), 0) FROM chunks "
                "WHERE lexical_terms IS NOT NULL")[0]


def ingest(path: Path):
    return vault_ingest(IngestRequest(vault_path=path, prepare_workers=0), config=get_config())


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nAtlas CRM 的导出限制是多少 ERR-1042\n", encoding="utf-8")
    (root / "b.md").write_text("# B\n\n## One\n\nRunbook v2.3.1 restore.\n\n## Two\n\n数据备份。\n",
                               encoding="utf-8")
    return root


def expected_length(*chunks: tuple[str, list[str]]) -> int:
    return sum(chunk_lexical_build(content=content, heading_path=headings).length
               for content, headings in chunks)


def stored_chunks() -> list[tuple[str, list[str]]]:
    return rows("SELECT content, heading_path FROM chunks ORDER BY id")


@pytest.mark.django_db
def test_stats_follow_insert_update_and_cascade_delete(vault: Path):
    assert stats() == (0, 0)
    ingest(vault)
    contents = stored_chunks()
    assert stats() == recount() == (len(contents), expected_length(*contents))
    assert len(contents) == 3

    (vault / "a.md").write_text("# A\n\nA longer note now: ERR-1042 timeout after 30 s.\n\n"
                                "## More\n\n第二段。\n", encoding="utf-8")
    assert ingest(vault).documents_updated == 1
    contents = stored_chunks()
    assert len(contents) == 4
    assert stats() == recount() == (4, expected_length(*contents))

    with connection.cursor() as cursor:  # the cascade from documents, as `rag vault forget` does
        cursor.execute("DELETE FROM documents WHERE relative_path = 'a.md'")
    contents = stored_chunks()
    assert stats() == recount() == (2, expected_length(*contents))

    (vault / "a.md").unlink()
    (vault / "b.md").unlink()
    (vault / "c.md").write_text("# C\n\nonly this\n", encoding="utf-8")
    assert ingest(vault).documents_deleted == 1
    assert stats() == recount() == (1, expected_length(("# C\n\nonly this", ["C"])))


@pytest.mark.django_db
def test_truncate_resets_the_stats(vault: Path):
    ingest(vault)
    assert stats()[0] == 3
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE documents CASCADE")
    assert stats() == (0, 0)


@pytest.mark.django_db
def test_insert_with_only_the_old_columns_still_works_and_counts_nothing_yet():
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, content_hash) "
                       "VALUES ('/v', '/v/a.md', 'a.md', 'h') RETURNING id")
        (document,) = cursor.fetchone()
        cursor.execute("INSERT INTO chunks (document_id, chunk_index, content, file_path, "
                       "relative_path, content_hash) VALUES (%s, 0, 'text', '/v/a.md', 'a.md', "
                       "'c') RETURNING lexical_terms, lexical_length", [document])
        assert cursor.fetchone() == (None, None)
    assert stats() == (0, 0)


@pytest.mark.django_db
def test_ingest_fills_older_chunks_without_new_embeddings(vault: Path):
    ingest(vault)
    embeddings_before = rows("SELECT id, chunk_id, updated_at FROM embeddings ORDER BY id")
    expected = rows("SELECT id, lexical_terms::text, lexical_length FROM chunks ORDER BY id")
    with connection.cursor() as cursor:  # as chunks written before the lexical columns existed
        cursor.execute("UPDATE chunks SET lexical_terms = NULL, lexical_length = NULL")
    assert stats() == (0, 0)

    result = ingest(vault)
    assert result.chunks_lexical_filled == 3
    assert result.embeddings_written == 0 and result.documents_skipped == 2
    assert rows("SELECT id, lexical_terms::text, lexical_length FROM chunks ORDER BY id") \
        == expected
    assert rows("SELECT id, chunk_id, updated_at FROM embeddings ORDER BY id") \
        == embeddings_before
    assert stats() == recount() == (3, sum(length for _, _, length in expected))
    assert ingest(vault).chunks_lexical_filled == 0


@pytest.mark.django_db
def test_chunks_of_an_older_analyzer_are_reanalysed_by_ingest_and_db_init(vault: Path):
    ingest(vault)
    embeddings_before = rows("SELECT id, chunk_id, updated_at FROM embeddings ORDER BY id")
    expected = rows("SELECT id, lexical_terms::text, lexical_length FROM chunks ORDER BY id")
    first_release = [(chunk_id, chunk_lexical_v1(content))
                     for chunk_id, content in rows("SELECT id, content FROM chunks ORDER BY id")]

    def as_first_release() -> None:
        with connection.cursor() as cursor:  # as the first lexical analyzer stored them
            for chunk_id, (terms, length) in first_release:
                cursor.execute("UPDATE chunks SET lexical_terms = %s::tsvector, "
                               "lexical_length = %s, lexical_version = NULL WHERE id = %s",
                               [terms, length, chunk_id])
        assert rows("SELECT lexical_terms::text FROM chunks WHERE lexical_terms::text LIKE "
                    "'%%atlas%%'")  # unstemmed, as before

    as_first_release()
    result = ingest(vault)
    assert result.chunks_lexical_filled == 3 and result.embeddings_written == 0
    assert rows("SELECT id, lexical_terms::text, lexical_length FROM chunks ORDER BY id") \
        == expected
    assert rows("SELECT DISTINCT lexical_version FROM chunks") == [(ANALYZER_VERSION,)]
    assert stats() == recount()
    # `rag db init` re-analyses every vault's chunks the same way, in batches.
    as_first_release()
    assert chunks_lexical_refresh(vault_path=None, batch=2) == 3
    assert rows("SELECT id, lexical_terms::text, lexical_length FROM chunks ORDER BY id") \
        == expected
    assert chunks_lexical_refresh(vault_path=None, batch=2) == 0
    assert rows("SELECT id, chunk_id, updated_at FROM embeddings ORDER BY id") \
        == embeddings_before
    assert stats() == recount()


def chunk_lexical_v1(content: str) -> tuple[str, int]:
    """The first analyzer's literal: raw tokens, no stems, no stop words, no headings."""
    positions: dict[str, list[int]] = {}
    for position, terms in enumerate(text_tokenize(text=content), start=1):
        for term in terms:
            positions.setdefault(term, []).append(position)
    built = tsvector_literal_build(positions=positions)
    return built.terms, built.length


@pytest.mark.django_db
def test_fill_runs_in_batches_and_only_for_the_ingested_vault(vault: Path, tmp_path: Path,
                                                               monkeypatch):
    from knowledge import ingest_fill as ingest_module

    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("# X\n\nother vault\n", encoding="utf-8")
    ingest(vault)
    ingest(other)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET lexical_terms = NULL, lexical_length = NULL")
    monkeypatch.setattr(ingest_module, "LEXICAL_FILL_BATCH", 2)
    assert ingest(vault).chunks_lexical_filled == 3
    assert rows("SELECT d.relative_path FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.lexical_terms IS NULL") == [("x.md",)]


# The UTF-8 check of `rag db init` -------------------------------------------------------------

C_DATABASE = "local_rag_ctype_c_test"


@pytest.fixture
def c_ctype_database():
    """A database with a C character type, made by the bootstrap superuser, owned by the app."""
    credentials = bootstrap_credentials()
    if credentials is None:
        pytest.skip("needs the bootstrap superuser of tests/run_with_cluster.py")
    app = database_settings(get_config().test_database_url)
    server = {"host": app["HOST"], "port": app["PORT"] or None, "dbname": app["NAME"]}
    with psycopg.connect(**server, user=credentials[0], password=credentials[1],
                         autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{C_DATABASE}"')
        admin.execute(f'CREATE DATABASE "{C_DATABASE}" TEMPLATE template0 ENCODING \'UTF8\' '
                      f'LC_COLLATE \'C\' LC_CTYPE \'C\' OWNER "{app["USER"]}"')
        try:
            yield app
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{C_DATABASE}" WITH (FORCE)')


def connect(app: dict, dbname: str) -> psycopg.Connection:
    return psycopg.connect(host=app["HOST"], port=app["PORT"] or None, user=app["USER"],
                           password=app["PASSWORD"], dbname=dbname, autocommit=True)


def test_c_ctype_database_loses_chinese_in_trigrams_and_is_refused(c_ctype_database):
    with connect(c_ctype_database, C_DATABASE) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                            ).fetchone() == (False,)
        conn.execute("CREATE EXTENSION pg_trgm")  # trusted: the owner may, no superuser needed
        # What goes wrong there: no trigram from Chinese, no case folding beyond ASCII.
        assert conn.execute("SELECT show_trgm('数据导出限制'), 'ÉCOLE' ILIKE 'école'").fetchone() \
            == ([], False)
        with pytest.raises(DatabaseNotUtf8) as err:
            database_utf8_check(conn=conn)
    assert err.value.code == "database_not_utf8" and err.value.exit_code == 3
    assert err.value.details == {"database": C_DATABASE, "encoding": "UTF8", "ctype": "C"}
    assert "LC_CTYPE 'C.UTF-8'" in err.value.message


def test_utf8_database_passes_the_check_and_sees_chinese_trigrams():
    app = database_settings(get_config().test_database_url)
    with connect(app, app["NAME"]) as conn:
        database_utf8_check(conn=conn)
        assert len(conn.execute("SELECT show_trgm('数据导出限制')").fetchone()[0]) > 0


def test_rag_db_init_refuses_a_c_ctype_database(c_ctype_database, run_cli):
    app = c_ctype_database
    url = f"postgresql://{app['USER']}:{app['PASSWORD']}@/{C_DATABASE}?host={app['HOST']}"
    if app["PORT"]:
        url += f"&port={app['PORT']}"
    result = run_cli("db", "init", env=cli_env(DATABASE_URL=url, TEST_DATABASE_URL=url))
    assert result.returncode == 3, result.stderr
    assert "error [database_not_utf8]" in result.stderr
    with connect(app, C_DATABASE) as conn:  # refused before anything was created
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone() == (0,)
