"""`rag db init` on a database of the release before each app owned its tables in its own
migrations (release_fe38ad4.sql, as that release's `rag db init` made it): every row and column
stays, every migration is recorded, a second run changes nothing, and the schema is the one a new
installation gets."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from django.db.migrations.loader import MigrationLoader
from psycopg import sql

from tests.conftest import cli_env

RELEASE = Path(__file__).with_name("release_fe38ad4.sql")
READY = "schema ready (every app's migrations applied, up to date)\n"

# What an installation of the release holds: a base with a source, a document with chunks, a
# vector and a version, an ingest run, a job, a live worker, a trace, a token failure, a user with
# a grant and a token, an HNSW measurement and a restore; written with the release's columns.
RELEASE_ROWS = """
INSERT INTO knowledge_bases (slug, name, description, outbound)
VALUES ('field', 'Field reports', 'Survey notes', 'allowed');
INSERT INTO knowledge_base_sources (knowledge_base_id, kind, path)
SELECT id, 'vault', '/vaults/field' FROM knowledge_bases WHERE slug = 'field';
INSERT INTO documents (vault_path, file_path, relative_path, content_hash, mtime_ns, size_bytes,
                       frontmatter, format, title, page_count, metadata, tags)
VALUES ('/vaults/field', '/vaults/field/ZK-0815.pdf', 'ZK-0815.pdf', 'doc-hash', 1700000000, 2048,
        '{"year": 2024}', 'pdf', '钻孔编录 ZK-0815', 2, '{"extractor": "pdfium"}',
        ARRAY['drilling']);
INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path, heading_path,
                    tags, content_hash, token_count, lexical_terms, lexical_length,
                    lexical_version, page_start, page_end)
SELECT d.id, c.chunk_index, c.content, d.file_path, d.relative_path, ARRAY['Assays'],
       ARRAY['drilling'], c.content_hash, 4, c.terms::tsvector, c.length, 3, 1, 1 + c.chunk_index
FROM documents d,
     (VALUES (0, '次生富集带 41.6 m', 'chunk-0', '''次生'':1 ''富集'':2 ''41.6'':3', 3),
             (1, 'Copper grade 0.8 %', 'chunk-1', '''copper'':1 ''grade'':2 ''0.8'':3', 3))
       AS c(chunk_index, content, content_hash, terms, length)
WHERE d.relative_path = 'ZK-0815.pdf';
INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim, embedding)
SELECT id, 'fake', 'fake-lexical-v1', 1024, array_fill(0.25::real, ARRAY[1024])::vector
FROM chunks;
INSERT INTO document_versions (document_id, content_hash, config_hash, config, status,
                               chunk_count, vector_count, activated_at)
SELECT id, 'doc-hash', 'config-hash', '{"chunking": 1}', 'active', 2, 2, now() FROM documents;
UPDATE documents SET active_version_id = (SELECT max(id) FROM document_versions);
INSERT INTO ingest_runs (vault_path, embedding_provider, embedding_model, embedding_dim, status,
                         finished_at, documents_added, chunks_written, embeddings_written)
VALUES ('/vaults/field', 'fake', 'fake-lexical-v1', 1024, 'success', now(), 1, 2, 2);
INSERT INTO background_jobs (type, resource, payload, status, stage, progress, attempt,
                             result, started_at, finished_at)
VALUES ('document.ingest', 'document:1', '{"document_id": 1}', 'succeeded', 'done', 1, 1,
        '{"chunks": 2}', now(), now());
INSERT INTO job_workers (owner) VALUES ('field-host:4242:worker-0');
INSERT INTO traces (id, operation, channel, caller, knowledge_base_ids, mode, parameters,
                    timings_ms, embedding_model, llm_model, prompt_tokens, completion_tokens,
                    token_source, prompt_version, citations)
SELECT '6f1c2a4e-0b7d-4c1e-9a55-3d2f0e1b7c90', 'ask', 'api', 'token:field', ARRAY[id], 'rag',
       '{"top_k": 5}', '{"total": 12.5}', 'fake-lexical-v1', 'fake', 120, 30, 'counted', 'v3',
       '[{"chunk_id": 1, "content_hash": "chunk-0"}]'
FROM knowledge_bases WHERE slug = 'field';
INSERT INTO token_failures (address, window_start, failures) VALUES ('203.0.113.9', now(), 3);
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff,
                       is_active, date_joined)
VALUES ('!', false, 'geologist', '', '', 'geo@example.org', false, true, now());
INSERT INTO knowledge_grant (role, created_at, knowledge_base_id, user_id)
SELECT 'maintainer', now(), b.id, u.id FROM knowledge_bases b, auth_user u WHERE b.slug = 'field';
INSERT INTO knowledge_apitoken (name, prefix, token_hash, read_only, narrowed, created_at, user_id)
SELECT 'survey', 'lr_abcd', repeat('0', 64), true, true, now(), id FROM auth_user;
INSERT INTO knowledge_apitoken_knowledge_bases (apitoken_id, knowledgebase_id)
SELECT t.id, b.id FROM knowledge_apitoken t, knowledge_bases b WHERE b.slug = 'field';
INSERT INTO vector_index_tuning (index_name, index_oid, embedding_provider, embedding_model, m,
                                 ef_construction, ef_searches, recalls, target_recall,
                                 sample_size, vectors, seconds)
VALUES ('idx_embeddings_hnsw_fake', 1, 'fake', 'fake-lexical-v1', 16, 64, ARRAY[40],
        ARRAY[0.99], 0.95, 2, 2, 0.1);
INSERT INTO restore_runs (id, finished_at) VALUES ('0123456789abcdef', now());
"""

# What the schema is made of, each as sorted rows: a new installation and an upgraded one must
# hold the same. Columns by their place among the table's columns (a dump leaves out the
# numbers of dropped ones).
SCHEMA = {
    "columns": """
        SELECT c.relname, row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum), a.attname,
               format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attstorage
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
          AND a.attnum > 0 AND NOT a.attisdropped""",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace""",
    "triggers": """
        SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal""",
    "functions": """
        SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p
        WHERE p.pronamespace = 'public'::regnamespace AND NOT EXISTS (
          SELECT 1 FROM pg_depend e WHERE e.objid = p.oid AND e.deptype = 'e')""",
    "sequences": "SELECT relname FROM pg_class WHERE relkind = 'S'",
    "extensions": "SELECT extname FROM pg_extension",
    "migrations": "SELECT app, name FROM django_migrations",
    "content types": "SELECT app_label, model FROM django_content_type",
    "permissions": """
        SELECT t.app_label, p.codename FROM auth_permission p
        JOIN django_content_type t ON t.id = p.content_type_id""",
}


# Columns added since the release (additively: NULL on the release's rows), by table.
ADDED_COLUMNS = {"traces": ("cost_amount", "cost_currency"), "conversations_message": ("cost",),
                 "workbench_evalrun": ("code_version", "config_hash", "corpus_digest", "cost",
                                       "knowledge_base_ids", "leakage", "prompt_version",
                                       "set_version_id")}
# Tables added since the release: empty after an upgrade.
ADDED_TABLES = ("audit_logs", "review_tasks", "evaluation_questionsetversion")


def release_shaped(rows: dict[str, list[str]]) -> dict[str, list[str]]:
    """`rows` as the release held them: each added table, empty, and each added column, NULL on
    every row, taken out (the rows of those tables compared as parsed JSON)."""
    kept = dict(rows)
    for table in ADDED_TABLES:
        assert kept.pop(table, []) == []
    for table, columns in ADDED_COLUMNS.items():
        values = [json.loads(row) for row in rows[table]]
        assert all(value.pop(column, None) is None for value in values for column in columns)
        kept[table] = sorted(json.dumps(value, sort_keys=True) for value in values)
    return kept


# Apps and models that came after the release: they bring content types and permissions of
# their own, which the release did not hold.
ADDED_APPS = ("audit", "review")
ADDED_MODELS = (("evaluation", "questionsetversion"),)


def without_added_apps(rows: dict[str, list[str]]) -> dict[str, list[str]]:
    kept = dict(rows)
    types = [json.loads(row) for row in kept["django_content_type"]]
    added = {value["id"] for value in types if value["app_label"] in ADDED_APPS
             or (value["app_label"], value["model"]) in ADDED_MODELS}
    kept["django_content_type"] = [row for row, value in zip(kept["django_content_type"], types,
                                                             strict=True)
                                   if value["id"] not in added]
    kept["auth_permission"] = [row for row in kept["auth_permission"]
                               if json.loads(row)["content_type_id"] not in added]
    return kept


def schema_of(url: str) -> dict[str, list[tuple]]:
    with psycopg.connect(url) as conn:
        return {part: sorted(conn.execute(query).fetchall()) for part, query in SCHEMA.items()}


def rows_of(url: str) -> dict[str, list[str]]:
    """Every row of every table, as JSON."""
    with psycopg.connect(url) as conn:
        tables = [name for (name,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return {table: sorted(row for (row,) in conn.execute(
            sql.SQL("SELECT row_to_json(t)::text FROM {} t").format(sql.Identifier(table))))
            for table in tables}


def release_database(url: str, *, rows: bool) -> None:
    """The database as the release's `rag db init` left it; with `rows`, in use."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(RELEASE.read_text(encoding="utf-8"))
    if rows:
        with psycopg.connect(url) as conn:
            conn.execute(RELEASE_ROWS)


def db_init(run_cli, url: str) -> str:
    result = run_cli("db", "init", env=cli_env(DATABASE_URL=url, TEST_DATABASE_URL=url))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_db_init_upgrades_a_release_database_keeping_every_row_and_repeats_as_a_no_op(
        new_database, run_cli):
    url = new_database()
    release_database(url, rows=True)
    before, schema_before = rows_of(url), schema_of(url)
    assert len(before["chunks"]) == 2 and len(before["traces"]) == 1
    assert len(before["lexical_term_stats"]) == 6  # kept by the release's triggers

    assert db_init(run_cli, url) == READY
    after = rows_of(url)
    recorded = {tuple(row) for row in schema_of(url)["migrations"]}
    assert recorded == set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    assert recorded > {tuple(row) for row in schema_before["migrations"]}
    # Nothing lost or changed: every table's rows as they were, the migrations' record grown.
    migrations = after.pop("django_migrations")
    assert set(before.pop("django_migrations")) < set(migrations)
    # The one intended change: the models that moved to evaluation take their content types
    # (same ids, so permissions and admin history follow them).
    before["django_content_type"] = sorted(
        row.replace('"app_label":"workbench","model":"questionset"',
                    '"app_label":"evaluation","model":"questionset"')
        .replace('"app_label":"workbench","model":"evalrun"',
                 '"app_label":"evaluation","model":"evalrun"')
        for row in before["django_content_type"])
    assert release_shaped(without_added_apps(after)) == release_shaped(before)
    assert [column for column in schema_of(url)["columns"]
            if column[2] not in ADDED_COLUMNS.get(column[0], ())
            and column[0] not in ADDED_TABLES] == schema_before["columns"]

    assert db_init(run_cli, url) == READY
    again = rows_of(url)
    assert again.pop("django_migrations") == migrations
    assert release_shaped(without_added_apps(again)) == release_shaped(before)


def test_a_new_installation_gets_the_schema_of_an_upgraded_one(new_database, run_cli):
    fresh, upgraded = new_database(), new_database()
    release_database(upgraded, rows=False)
    db_init(run_cli, upgraded)
    db_init(run_cli, fresh)
    fresh_schema, upgraded_schema = schema_of(fresh), schema_of(upgraded)
    for part in SCHEMA:
        assert fresh_schema[part] == upgraded_schema[part], part
    assert {"traces", "background_jobs", "token_failures", "search_index_changes"} <= {
        table for table, *_ in fresh_schema["columns"]}
