"""Ingest on the real database: incremental sync, crash safety, locking and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.db import connection

from core.config import get_config
from core.db import DatabaseRefused, SchemaNotInitialized
from embeddings import FakeLexicalEmbedder
from knowledge import ingest as ingest_module
from knowledge import store
from knowledge.ingest import IngestLocked, IngestRequest, vault_ingest
from parsing.vault import VaultNotFound
from tests.harness import ROOT

SAMPLE_VAULT = ROOT / "samples" / "acme-vault"

pytestmark = pytest.mark.django_db


def rows(query: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def write(vault: Path, relative: str, text: str | bytes) -> Path:
    path = vault / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "alpha.md", "---\ntags: [ops]\n---\n# Alpha\n\nAlpha body about [[Beta]] #deploy\n")
    write(root, "notes/beta.md", "# Beta\n\n## Part one\n\nBeta text.\n\n## Part two\n\nMore.\n")
    return root


def ingest(path, **kwargs):
    return vault_ingest(IngestRequest(vault_path=path, **kwargs), config=get_config())


def test_sample_vault_is_indexed_with_metadata():
    result = ingest(SAMPLE_VAULT)
    assert result.status == "success"
    assert result.documents_added == 9 and result.files_rejected == 0
    assert result.chunks_written == result.embeddings_written > 9
    documents = {r[0] for r in rows("SELECT relative_path FROM documents")}
    # Exactly the notes: `.obsidian/` is skipped and no path is written with a leading `./`.
    assert documents == {
        "00-index.md", "policies/Data Handling Policy.md", "policies/Support Escalation Policy.md",
        "products/Atlas CRM FAQ.md", "products/Atlas CRM.md", "runbooks/API Latency Runbook.md",
        "runbooks/Postgres Incident Runbook.md", "sales/Competitive Positioning.md",
        "support/Common Customer Issues.md"}
    chunk = rows("SELECT heading_path, tags, wikilinks, frontmatter, token_count, content "
                 "FROM chunks WHERE relative_path = 'policies/Support Escalation Policy.md' "
                 "ORDER BY chunk_index LIMIT 1")[0]
    heading_path, tags, _, frontmatter, token_count, content = chunk
    assert heading_path[0].startswith("Support Escalation Policy")
    assert tags and "owner" in frontmatter and token_count > 0 and content.strip()
    run = rows("SELECT status, documents_added, chunks_written, finished_at IS NOT NULL "
               "FROM ingest_runs WHERE id = %s", [result.run_id])[0]
    assert run == ("success", 9, result.chunks_written, True)


def test_unchanged_vault_is_skipped(vault: Path):
    first = ingest(vault)
    chunk_ids = rows("SELECT id FROM chunks ORDER BY id")
    second = ingest(vault)
    assert (first.documents_added, second.documents_skipped) == (2, 2)
    assert second.chunks_written == second.embeddings_written == 0
    assert rows("SELECT id FROM chunks ORDER BY id") == chunk_ids


def test_add_modify_delete_and_rename(vault: Path):
    ingest(vault)
    write(vault, "gamma.md", "# Gamma\n\nNew note.\n")
    write(vault, "alpha.md", "# Alpha\n\nRewritten alpha.\n")
    (vault / "notes/beta.md").rename(vault / "notes/beta-renamed.md")
    result = ingest(vault)
    assert (result.documents_added, result.documents_updated, result.documents_deleted,
            result.documents_skipped) == (2, 1, 1, 0)
    paths = [r[0] for r in rows("SELECT relative_path FROM documents ORDER BY 1")]
    assert paths == ["alpha.md", "gamma.md", "notes/beta-renamed.md"]
    alpha = rows("SELECT content FROM chunks WHERE relative_path = 'alpha.md'")
    assert alpha == [("# Alpha\n\nRewritten alpha.",)]
    # The old chunks and their embeddings went with the old version (cascade).
    assert rows("SELECT count(*) FROM chunks c LEFT JOIN embeddings e ON e.chunk_id = c.id "
                "WHERE e.id IS NULL") == [(0,)]
    assert rows("SELECT count(*) FROM chunks WHERE content LIKE '%%Alpha body%%'") == [(0,)]


class OtherModelEmbedder(FakeLexicalEmbedder):
    provider = "fake-alt"
    model = "fake-alt-v1"


def test_provider_switch_adds_only_missing_vectors(vault: Path, monkeypatch):
    ingest(vault)
    chunks_before = rows("SELECT id, content, updated_at FROM chunks ORDER BY id")
    monkeypatch.setattr(ingest_module, "get_embedder", lambda config: OtherModelEmbedder())
    switched = ingest(vault)
    assert switched.documents_skipped == 2 and switched.chunks_written == 0
    assert switched.embeddings_written == len(chunks_before)
    assert rows("SELECT id, content, updated_at FROM chunks ORDER BY id") == chunks_before
    per_provider = rows("SELECT embedding_provider, count(*) FROM embeddings GROUP BY 1 ORDER BY 1")
    assert per_provider == [("fake", len(chunks_before)), ("fake-alt", len(chunks_before))]
    again = ingest(vault)
    assert again.embeddings_written == 0


def test_failure_mid_document_keeps_the_previous_version(vault: Path):
    ingest(vault)
    before = rows("SELECT relative_path, chunk_index, content FROM chunks ORDER BY 1, 2")
    write(vault, "alpha.md", "# Alpha\n\nA new version that will fail to store.\n")
    # A real server-side error in the last statement of the document's transaction, after its
    # old chunks were deleted and while the new ones are being inserted: a trigger that refuses
    # every new vector (created inside the test's transaction, so it is rolled back with it).
    with connection.cursor() as cursor:
        cursor.execute("CREATE FUNCTION refuse_vectors() RETURNS trigger LANGUAGE plpgsql AS "
                       "$$ BEGIN RAISE EXCEPTION 'vector refused by the test trigger'; END $$")
        cursor.execute("CREATE TRIGGER refuse_vectors BEFORE INSERT ON embeddings "
                       "FOR EACH ROW EXECUTE FUNCTION refuse_vectors()")
    with pytest.raises(DatabaseRefused) as refused:
        ingest(vault)
    # The client sees the condition, never the database's own text; the run records it.
    assert refused.value.details == {"sqlstate": "P0001", "condition": "RaiseException"}
    assert rows("SELECT relative_path, chunk_index, content FROM chunks ORDER BY 1, 2") == before
    assert rows("SELECT count(*) FROM embeddings") == [(len(before),)]
    status, summary = rows("SELECT status, error_summary FROM ingest_runs ORDER BY id DESC "
                           "LIMIT 1")[0]
    assert status == "failed" and "vector refused by the test trigger" in summary


def test_bad_files_are_skipped_with_warnings(vault: Path, tmp_path: Path):
    write(vault, "binary.md", b"\x89PNG\r\n\x1a\n\x00\x00data")
    write(vault, "latin1.md", "# Caf\xe9\n".encode("latin-1"))
    write(vault, "huge.md", "# Huge\n\n" + "word " * 5000)
    write(vault, "broken-yaml.md", "---\ntitle: [unclosed\n---\n# Still indexed\n\nBody text.\n")
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\nOutside the vault.\n")
    os.symlink(outside, vault / "escape.md")
    write(vault, ".obsidian/workspace.md", "# Not a note\n")
    write(vault, ".trash/old.md", "# Deleted note\n")
    result = ingest(vault, max_file_bytes=10_000)
    reasons = {w["file"]: w["reason"] for w in result.warnings}
    assert "NUL" in reasons["binary.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "larger than" in reasons["huge.md"]
    assert "outside the vault" in reasons["escape.md"]
    assert "YAML" in reasons["broken-yaml.md"]
    assert result.status == "success"
    paths = {r[0] for r in rows("SELECT relative_path FROM documents")}
    assert paths == {"alpha.md", "notes/beta.md", "broken-yaml.md"}
    assert rows("SELECT frontmatter = '{}'::jsonb FROM documents "
                "WHERE relative_path = 'broken-yaml.md'") == [(True,)]
    stored = rows("SELECT metadata ->> 'warnings' FROM ingest_runs WHERE id = %s", [result.run_id])
    assert {"file": "binary.md", "reason": reasons["binary.md"]} in json.loads(stored[0][0])


def test_empty_note_gets_a_document_and_no_chunks(vault: Path):
    write(vault, "empty.md", "   \n\n")
    write(vault, "only-frontmatter.md", "---\nowner: ops\n---\n")
    first = ingest(vault)
    second = ingest(vault)
    assert first.documents_added == 4 and second.documents_skipped == 4
    counts = rows("SELECT d.relative_path, count(c.id) FROM documents d LEFT JOIN chunks c "
                  "ON c.document_id = d.id GROUP BY 1 ORDER BY 1")
    assert ("empty.md", 0) in counts and ("only-frontmatter.md", 0) in counts


def test_path_spellings_are_one_vault(vault: Path, monkeypatch):
    monkeypatch.chdir(vault.parent)
    ingest("vault")
    again = [ingest("./vault/"), ingest(str(vault)), ingest(vault / ".." / "vault")]
    assert [r.documents_skipped for r in again] == [2, 2, 2]
    assert rows("SELECT DISTINCT vault_path FROM documents") == [(str(vault.resolve()),)]


def test_missing_or_file_vault_path_is_rejected(vault: Path):
    with pytest.raises(VaultNotFound) as missing:
        ingest(vault / "nope")
    with pytest.raises(VaultNotFound):
        ingest(vault / "alpha.md")
    with pytest.raises(VaultNotFound, match="not usable"):
        ingest(vault / "alpha.md" / "inside")
    assert missing.value.exit_code == 2


def test_uninitialised_schema_is_reported_and_nothing_is_created(vault: Path):
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP TABLE ingest_runs, embeddings, chunks, documents CASCADE")
    with pytest.raises(SchemaNotInitialized) as err:
        ingest(vault)
    assert "rag db init" in err.value.message and err.value.exit_code == 3
    assert rows("SELECT count(*) FROM pg_tables WHERE tablename = 'documents'") == [(0,)]


def test_second_ingest_of_a_locked_vault_fails_clearly(vault: Path):
    import psycopg

    from core.dburl import database_settings

    settings = database_settings(get_config().test_database_url)
    key = store.vault_lock_key(str(vault.resolve()))
    with psycopg.connect(host=settings["HOST"], port=settings["PORT"] or None,
                         user=settings["USER"], password=settings["PASSWORD"],
                         dbname=settings["NAME"], autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [key])
        with pytest.raises(IngestLocked) as err:
            ingest(vault)
        assert "another ingest" in err.value.message
        # Released before the connection closes: a closed session's locks go only once its
        # server process has ended, which a loaded machine may not have done yet.
        other.execute("SELECT pg_advisory_unlock(%s)", [key])
    assert ingest(vault).documents_added == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_ingests_of_one_vault_serialise(vault: Path, clean_tables):
    import threading

    from django.db import connections

    results, errors = [], []

    def worker() -> None:
        try:
            results.append(ingest(vault, wait_for_lock=True))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted((r.documents_added, r.documents_skipped) for r in results) == [(0, 2), (2, 0)]
    assert rows("SELECT count(*) FROM documents") == [(2,)]
    assert rows("SELECT count(*) FROM chunks") == rows("SELECT count(*) FROM embeddings")


def test_worker_processes_index_exactly_what_serial_ingest_does(tmp_path: Path, monkeypatch):
    from knowledge import preparing

    for index in range(6):
        write(tmp_path / "v", f"n{index}.md",
              f"# Note {index}\n\n## Part\n\nText {index} about [[Note {index + 1}]] #t{index}\n")
    serial = ingest(tmp_path / "v", prepare_workers=0)
    snapshot = rows("SELECT c.relative_path, c.chunk_index, c.content, c.heading_path, c.tags, "
                    "c.wikilinks, e.embedding::text FROM chunks c JOIN embeddings e "
                    "ON e.chunk_id = c.id ORDER BY 1, 2")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM documents")
    monkeypatch.setattr(preparing, "SERIAL_FIRST", 1)  # everything after note 1 goes to workers
    monkeypatch.setattr(preparing, "TASK_NOTES_MAX", 2)  # in three tasks, over both workers
    parallel = ingest(tmp_path / "v", prepare_workers=2)
    assert (serial.documents_added, parallel.documents_added) == (6, 6)
    assert rows("SELECT c.relative_path, c.chunk_index, c.content, c.heading_path, c.tags, "
                "c.wikilinks, e.embedding::text FROM chunks c JOIN embeddings e "
                "ON e.chunk_id = c.id ORDER BY 1, 2") == snapshot


def test_worker_tasks_group_consecutive_notes_within_their_bounds(monkeypatch):
    from knowledge import preparing

    monkeypatch.setattr(preparing, "TASK_NOTES_MAX", 3)
    monkeypatch.setattr(preparing, "TASK_BYTES_MAX", 10)
    sizes = [1, 1, 1, 1, 4, 4, 4, 25, 2, 9, 1]
    items = [(index, "x" * size, f"n{index}.md") for index, size in enumerate(sizes)]
    tasks = [[index for index, _, _ in task] for task in preparing._tasks(iter(items))]
    # At most three notes and ten bytes a task, in order, a larger document alone.
    assert tasks == [[0, 1, 2], [3, 4, 5], [6], [7], [8], [9, 10]]


def test_yaml_escapes_postgres_cannot_store_are_dropped(vault: Path):
    write(vault, "escaped.md", '---\ntitle: "nul\\0inside"\n---\n# Escaped\n\nBody.\n')
    result = ingest(vault)
    assert result.status == "success" and result.documents_added == 3
    assert rows("SELECT frontmatter ->> 'title' FROM documents "
                "WHERE relative_path = 'escaped.md'") == [("nulinside",)]


def test_a_note_the_database_refuses_is_skipped_and_the_rest_stored(vault: Path, monkeypatch):
    from parsing import markdown

    # Without the clean-up, the NUL from the YAML escape reaches PostgreSQL, which refuses it.
    monkeypatch.setattr(markdown, "_storable", lambda text: text)
    write(vault, "escaped.md", '---\ntitle: "nul\\0inside"\n---\n# Escaped\n\nBody.\n')
    result = ingest(vault, prepare_workers=0)
    assert result.status == "success" and result.documents_added == 2
    reasons = {w["file"]: w["reason"] for w in result.warnings}
    assert reasons["escaped.md"].startswith("could not be stored")
    assert {r[0] for r in rows("SELECT relative_path FROM documents")} == {"alpha.md",
                                                                         "notes/beta.md"}


def lexical_index() -> list[tuple]:
    return rows("SELECT indexdef FROM pg_indexes WHERE indexname = 'idx_chunks_lexical_cells'")


def test_a_bulk_first_load_builds_the_lexical_index_once_after_writing(vault: Path, monkeypatch):
    monkeypatch.setattr(store, "BULK_LOAD_MIN_NOTES", 2)
    seen_while_writing = []
    write_notes = ingest_module._write

    def spying_write(**kwargs):
        seen_while_writing.append(lexical_index())
        write_notes(**kwargs)

    monkeypatch.setattr(ingest_module, "_write", spying_write)
    definition = lexical_index()
    assert definition and "USING gin (lexical_cells)" in definition[0][0]
    ingest(vault)  # two new notes into an empty index: a bulk load
    assert seen_while_writing == [[]]  # written without the index,
    assert lexical_index() == definition  # which is then built as the migration defines it
    from access.callers import scope_all
    from retrieval.lexical import lexical_search

    hits = lexical_search(query="beta text", limit=3,
                          knowledge_base_ids=scope_all().knowledge_base_ids)
    assert hits and hits[0].relative_path == "notes/beta.md"
    # Later runs add fewer notes than the index holds chunks: the index stays.
    write(vault, "gamma.md", "# Gamma\n\nGamma body.\n")
    write(vault, "delta.md", "# Delta\n\nDelta body.\n")
    ingest(vault)
    assert seen_while_writing[-1] == definition


def test_a_failed_bulk_load_still_leaves_the_lexical_index(vault: Path, monkeypatch):
    monkeypatch.setattr(store, "BULK_LOAD_MIN_NOTES", 2)
    definition = lexical_index()
    with connection.cursor() as cursor:
        cursor.execute("CREATE FUNCTION refuse_vectors() RETURNS trigger LANGUAGE plpgsql AS "
                       "$$ BEGIN RAISE EXCEPTION 'vector refused by the test trigger'; END $$")
        cursor.execute("CREATE TRIGGER refuse_vectors BEFORE INSERT ON embeddings "
                       "FOR EACH ROW EXECUTE FUNCTION refuse_vectors()")
    with pytest.raises(DatabaseRefused):
        ingest(vault)
    assert lexical_index() == definition


def test_an_index_lost_mid_load_is_built_again_by_the_next_ingest(vault: Path):
    definition = lexical_index()
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX idx_chunks_lexical_cells")  # a crash after the drop
    ingest(vault)
    assert lexical_index() == definition


def test_unchanged_files_are_not_read_again_and_a_touched_one_is(vault: Path, monkeypatch):
    ingest(vault)
    read = []
    note_read = ingest_module.note_read

    def counting_read(*, note, **kwargs):
        read.append(note.relative_path)
        return note_read(note=note, **kwargs)

    monkeypatch.setattr(ingest_module, "note_read", counting_read)
    assert ingest(vault).documents_skipped == 2 and read == []
    # Same size, new content, a new modification time: read, hashed and rebuilt.
    path = vault / "alpha.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Alpha body", "Omega body"), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    result = ingest(vault)
    assert read == ["alpha.md"] and result.documents_updated == 1
    assert rows("SELECT count(*) FROM chunks WHERE content LIKE '%%Omega body%%'") == [(1,)]


def test_an_ingest_that_grows_the_index_much_refreshes_the_planner_statistics(tmp_path: Path,
                                                                              monkeypatch):
    """Stale statistics made the next ingest's document states a nested loop over every vector:
    an ingest that wrote many chunks, more than a fifth of what the planner believes the table
    holds, analyses the tables it wrote; a small one leaves it to autovacuum."""
    monkeypatch.setattr(store, "STATISTICS_REFRESH_MIN_CHUNKS", 20)
    root = tmp_path / "vault"
    for index in range(30):
        write(root, f"note-{index:02d}.md", f"# Note {index}\n\nText of note {index}.\n")
    first = ingest(root)
    assert first.chunks_written == 30 and "analyze" in first.timings
    (estimate,) = rows("SELECT reltuples FROM pg_class WHERE oid = 'chunks'::regclass")[0]
    (stored,) = rows("SELECT count(*) FROM chunks")[0]
    assert estimate == stored >= 30
    assert "analyze" not in ingest(root).timings  # nothing written
    for index in range(30, 55):  # 25 new chunks, but fewer than a fifth of what is stored
        write(root, f"note-{index:02d}.md", f"# Note {index}\n\nText of note {index}.\n")
    monkeypatch.setattr(store, "STATISTICS_STALE_SHARE", 25 / stored / 2)
    grown = ingest(root)
    assert grown.chunks_written == 25 and "analyze" in grown.timings
    monkeypatch.setattr(store, "STATISTICS_STALE_SHARE", 0.9)
    write(root, "note-99.md", "# Note 99\n\nOne more.\n")
    for index in range(100, 125):
        write(root, f"note-{index}.md", f"# Note {index}\n\nText of note {index}.\n")
    assert "analyze" not in ingest(root).timings  # 26 new chunks: below 0.9 of the estimate
