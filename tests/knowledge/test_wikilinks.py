"""A wikilink names a note of one knowledge base by path, file name or title (case aside, the
shortest path first) and opens at the chunk of its heading, else at the note's first chunk."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import get_config
from knowledge.bases import kb_create, kb_get
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.models import Chunk
from knowledge.wikilinks import wikilink_chunks

NOTES = {
    "policies/Data Handling Policy.md": "# Data Handling\n\n## PII\n\nMask PII.\n\n"
                                        "## Retention\n\nKeep logs 30 days.\n",
    "archive/old/Data Handling Policy.md": "# Old policy\n\nSuperseded.\n",
    "sales/prices.md": "---\ntitle: Price Sheet\n---\n# Prices\n\nSeats cost 10 EUR.\n",
    "notes/readme.txt": "Plain text notes.\n",
}


def vault(folder: Path, notes: dict[str, str], *, base: str | None = None) -> None:
    for name, text in notes.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0, knowledge_base=base),
                 config=get_config())


@pytest.fixture
def notes(db, tmp_path) -> int:
    """The id of the `default` base, holding NOTES."""
    vault(tmp_path / "vault", NOTES)
    return kb_get("default").id


def chunk(path: str, *, heading: str | None = None) -> int:
    chunks = Chunk.objects.filter(relative_path=path).order_by("chunk_index")
    if heading is not None:
        chunks = chunks.filter(heading_path__contains=[heading])
    return chunks.first().pk


@pytest.mark.parametrize("note, path", [
    ("Data Handling Policy", "policies/Data Handling Policy.md"),  # the shorter of two paths
    ("data handling policy", "policies/Data Handling Policy.md"),
    ("archive/old/Data Handling Policy", "archive/old/Data Handling Policy.md"),
    ("old/Data Handling Policy.md", "archive/old/Data Handling Policy.md"),
    ("/policies/Data Handling Policy", "policies/Data Handling Policy.md"),
    ("prices", "sales/prices.md"),
    ("Price Sheet", "sales/prices.md"),  # its frontmatter title
    ("readme.txt", "notes/readme.txt"),
])
def test_a_note_is_found_by_path_file_name_or_title(notes, note, path):
    assert wikilink_chunks(knowledge_base_id=notes, links=[(note, "")]) == {
        (note, ""): chunk(path)}


def test_a_heading_opens_its_section_and_an_unknown_one_the_notes_start(notes):
    links = [("Data Handling Policy", "Retention"), ("Data Handling Policy", "retention"),
             ("Data Handling Policy", "No such heading")]
    path = "policies/Data Handling Policy.md"
    assert wikilink_chunks(knowledge_base_id=notes, links=links) == {
        links[0]: chunk(path, heading="Retention"), links[1]: chunk(path, heading="Retention"),
        links[2]: chunk(path)}


@pytest.mark.parametrize("note", ["No Such Note", "javascript:alert(1)", "", "Data%", "Data_"])
def test_a_note_nothing_answers_to_is_not_resolved(notes, note):
    assert wikilink_chunks(knowledge_base_id=notes, links=[(note, "")]) == {}


def test_a_note_of_another_base_is_not_resolved(notes, tmp_path):
    (tmp_path / "other").mkdir()
    other = kb_create(slug="other", name="Other", sources=[str(tmp_path / "other")])
    vault(tmp_path / "other", {"Only Here.md": "# Only here\n\nText.\n"}, base="other")
    assert wikilink_chunks(knowledge_base_id=notes, links=[("Only Here", "")]) == {}
    assert wikilink_chunks(knowledge_base_id=other.id, links=[("Only Here", "")]) == {
        ("Only Here", ""): chunk("Only Here.md")}
