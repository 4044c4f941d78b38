"""Knowledge bases and their sources (knowledge/bases.py) on the real database."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from core.config import get_config
from core.errors import Conflict, InvalidRequest, NotFound
from knowledge.bases import DEFAULT_SLUG, kb_create, kb_get, kb_list, kb_source_add
from knowledge.ingest import IngestRequest, vault_ingest
from parsing.vault import VaultNotFound

pytestmark = pytest.mark.django_db


def folder(root: Path, name: str, notes: int = 0) -> Path:
    path = root / name
    path.mkdir(parents=True)
    for number in range(notes):
        (path / f"note-{number}.md").write_text(f"# Note {number}\n\nText number {number}.\n",
                                                encoding="utf-8")
    return path


def bases_of(table: str, vault: Path) -> set[int]:
    column = "vault_path" if table == "documents" else "document_id"
    where = ("vault_path = %s" if table == "documents" else
             f"{column} IN (SELECT id FROM documents WHERE vault_path = %s)")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT knowledge_base_id FROM {table} WHERE {where}",
                       [str(vault.resolve())])
        return {row[0] for row in cursor.fetchall()}


def test_create_returns_the_base_with_its_canonical_sources(tmp_path):
    vault = folder(tmp_path, "handbook")
    base = kb_create(slug="handbook", name="Staff handbook", description="HR policies",
                     sources=[str(tmp_path / "handbook" / ".." / "handbook")])
    assert (base.slug, base.name, base.description) == ("handbook", "Staff handbook",
                                                        "HR policies")
    assert [(s.kind, s.path) for s in base.sources] == [("vault", str(vault.resolve()))]
    assert (base.documents, base.chunks) == (0, 0)
    assert kb_get("handbook") == base


def test_name_defaults_to_the_slug_and_the_list_is_by_slug():
    kb_create(slug="zeta")
    kb_create(slug="alpha", name="Alpha")
    assert kb_get("zeta").name == "zeta"
    assert [base.slug for base in kb_list()] == ["alpha", DEFAULT_SLUG, "zeta"]


def test_duplicate_slug_is_a_conflict():
    kb_create(slug="handbook")
    with pytest.raises(Conflict, match="'handbook' exists already"):
        kb_create(slug="handbook", name="again")
    with pytest.raises(Conflict):
        kb_create(slug=DEFAULT_SLUG)


@pytest.mark.parametrize("slug", ["Handbook", "-lead", "with space", "dot.ted", "", "x" * 64,
                                  "ü"])
def test_bad_slug_is_invalid_request(slug):
    with pytest.raises(InvalidRequest) as raised:
        kb_create(slug=slug)
    assert raised.value.details == {"field": "slug"}
    assert [base.slug for base in kb_list()] == [DEFAULT_SLUG]


def test_a_missing_source_folder_creates_nothing(tmp_path):
    with pytest.raises(VaultNotFound):
        kb_create(slug="handbook", sources=[str(tmp_path / "absent")])
    with pytest.raises(NotFound):
        kb_get("handbook")


def test_unknown_base_is_not_found(tmp_path):
    with pytest.raises(NotFound, match="knowledge base not found: nope"):
        kb_get("nope")
    with pytest.raises(NotFound):
        kb_source_add(slug="nope", path=folder(tmp_path, "vault"))


def test_add_source_canonicalises_and_is_idempotent_for_the_same_base(tmp_path):
    vault = folder(tmp_path, "vault")
    (tmp_path / "link").symlink_to(vault)
    kb_create(slug="handbook")
    assert kb_source_add(slug="handbook", path=tmp_path / "link") == str(vault.resolve())
    assert kb_source_add(slug="handbook", path=f"{vault}/") == str(vault.resolve())
    assert [s.path for s in kb_get("handbook").sources] == [str(vault.resolve())]


def test_add_source_refuses_a_folder_of_another_base(tmp_path):
    vault = folder(tmp_path, "vault")
    kb_create(slug="handbook", sources=[str(vault)])
    kb_create(slug="legal")
    with pytest.raises(Conflict) as raised:
        kb_source_add(slug="legal", path=vault)
    assert "source of the knowledge base 'handbook'" in raised.value.message
    assert raised.value.details == {"path": str(vault.resolve()), "knowledge_base": "handbook"}
    assert kb_get("legal").sources == []


def test_documents_ingested_under_default_move_with_their_chunks(tmp_path):
    vault = folder(tmp_path, "vault", notes=3)
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    default = kb_get(DEFAULT_SLUG)
    assert (default.documents, bases_of("documents", vault), bases_of("chunks", vault)) == (
        3, {default.id}, {default.id})

    handbook = kb_create(slug="handbook", sources=[str(vault)])

    assert bases_of("documents", vault) == bases_of("chunks", vault) == {handbook.id}
    assert (handbook.documents, handbook.chunks > 0) == (3, True)
    assert kb_get(DEFAULT_SLUG).documents == 0
    assert str(vault.resolve()) not in [s.path for s in kb_get(DEFAULT_SLUG).sources]


def test_a_folder_added_to_a_base_keeps_its_documents_there_on_reingest(tmp_path):
    vault = folder(tmp_path, "vault", notes=2)
    handbook = kb_create(slug="handbook", sources=[str(vault)])
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    assert bases_of("documents", vault) == bases_of("chunks", vault) == {handbook.id}
    assert (kb_get("handbook").documents, kb_get(DEFAULT_SLUG).documents) == (2, 0)


CHUNKS_OUT_OF_STEP = ("SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                      "WHERE c.knowledge_base_id IS DISTINCT FROM d.knowledge_base_id "
                      "OR d.knowledge_base_id IS NULL")


def test_every_chunk_carries_its_documents_knowledge_base(tmp_path):
    """The consistency check: after ingest, a move of a folder to another base, and a
    reingest, every chunk's knowledge_base_id equals its document's."""
    from django.db import connection

    from core.config import get_config
    from knowledge.bases import kb_create
    from knowledge.ingest import IngestRequest, vault_ingest

    def out_of_step() -> int:
        with connection.cursor() as cursor:
            cursor.execute(CHUNKS_OUT_OF_STEP)
            return cursor.fetchone()[0]

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\n" + "Alpha text. " * 400)
    (vault / "b.md").write_text("# B\n\nBeta text.\n")
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    assert out_of_step() == 0
    kb_create(slug="moved", sources=[str(vault)])
    assert out_of_step() == 0
    (vault / "b.md").write_text("# B\n\nBeta text, changed.\n")
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    assert out_of_step() == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT b.slug FROM chunks c "
                       "JOIN knowledge_bases b ON b.id = c.knowledge_base_id")
        assert cursor.fetchall() == [("moved",)]


def test_db_init_puts_vaults_indexed_before_knowledge_bases_into_default(schema_from_before):
    """A database from before knowledge bases: documents and chunks without a base, no
    sources. `rag db init` (knowledge's migrations) makes their vault a source of `default` and
    fills in the base of every document and chunk, and running it again changes nothing."""
    from django.db import connection

    from ops.db_init import db_init

    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE documents DISABLE TRIGGER documents_knowledge_base_fill")
        cursor.execute("ALTER TABLE chunks DISABLE TRIGGER chunks_knowledge_base_fill")
        cursor.execute("INSERT INTO documents (vault_path, file_path, relative_path, "
                       "content_hash) VALUES ('/old/vault', '/old/vault/a.md', 'a.md', 'h') "
                       "RETURNING id")
        (document,) = cursor.fetchone()
        cursor.execute("INSERT INTO chunks (document_id, chunk_index, content, file_path, "
                       "relative_path, content_hash) VALUES (%s, 0, 'old text', "
                       "'/old/vault/a.md', 'a.md', 'c')", [document])
        cursor.execute("ALTER TABLE documents ENABLE TRIGGER documents_knowledge_base_fill")
        cursor.execute("ALTER TABLE chunks ENABLE TRIGGER chunks_knowledge_base_fill")
        cursor.execute("SELECT knowledge_base_id FROM chunks")
        assert cursor.fetchall() == [(None,)]
    schema_from_before("knowledge", "0009_knowledge_bases")
    db_init()
    db_init()
    with connection.cursor() as cursor:
        cursor.execute("SELECT b.slug, s.kind FROM knowledge_base_sources s "
                       "JOIN knowledge_bases b ON b.id = s.knowledge_base_id "
                       "WHERE s.path = '/old/vault'")
        assert cursor.fetchall() == [("default", "vault")]
        cursor.execute(CHUNKS_OUT_OF_STEP)
        assert cursor.fetchone() == (0,)


def test_a_folder_around_or_inside_a_registered_source_is_refused(tmp_path):
    """A base's folder must never be read into another base through a parent folder."""
    from knowledge.vault_index import VaultOverlap

    (tmp_path / "notes" / "hr").mkdir(parents=True)
    (tmp_path / "notes" / "hr" / "pay.md").write_text("# Pay\n\nSalary bands.\n")
    kb_create(slug="hr", sources=[str(tmp_path / "notes" / "hr")])
    with pytest.raises(VaultOverlap, match="around"):
        vault_ingest(IngestRequest(vault_path=tmp_path / "notes", prepare_workers=0),
                     config=get_config())
    with pytest.raises(VaultOverlap, match="around"):
        kb_create(slug="everything", sources=[str(tmp_path / "notes")])
