"""Committed corpora for the search index's tests: the index is built from what other
connections see, so these tests commit (`clean_tables`) instead of rolling back."""

from __future__ import annotations

import random
from pathlib import Path

from django.db import connection

from core.config import Config, get_config
from index.maintenance import base_catch_up, location
from index.store import manifest_read
from knowledge.bases import kb_create
from tests.retrieval.test_lexical_pruning import corpus_add, vocabulary

SYLLABLES = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]


def lexical_bases(seed: int, *, chunks: tuple[int, int] = (400, 250)) -> tuple[
        random.Random, tuple, list[int]]:
    """Two bases of random chunks (terms and cells as the ingest makes them, no vectors)."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    ids = []
    for number, size in enumerate(chunks):
        base = kb_create(slug=f"b{seed}-{number}", name=f"Base {number}")
        corpus_add(rng, words, base_id=base.id, chunks=size)
        ids.append(base.id)
    return rng, words, ids


def vault_write(root: Path, rng: random.Random, *, notes: int) -> Path:
    """A folder of notes of random words, with headings, for a real ingest (fake vectors)."""
    words = ["".join(rng.choices(SYLLABLES, k=rng.randint(2, 3))) for _ in range(250)]
    weights = [1 / (rank + 1) ** 1.05 for rank in range(len(words))]
    root.mkdir(parents=True, exist_ok=True)
    for number in range(notes):
        sections = []
        for section in range(rng.randint(1, 3)):
            body = " ".join(rng.choices(words, weights=weights, k=rng.randint(5, 120)))
            sections.append(f"## {rng.choice(words).title()} {section}\n\n{body}\n")
        (root / f"note-{number}.md").write_text(f"# Note {number}\n\n" + "\n".join(sections),
                                                encoding="utf-8")
    return root


def built(knowledge_base_id: int, *, config: Config | None = None) -> None:
    base_catch_up(knowledge_base_id=knowledge_base_id, config=config or get_config())


def base_folder(knowledge_base_id: int) -> Path:
    from index import sql

    with connection.cursor() as cursor:
        cursor.execute(sql.STATE, [[knowledge_base_id]])
        identity, database = cursor.fetchone()[:2]
    return location(alias="default", identity=identity, database=database).folder(
        get_config(), knowledge_base_id)


def index_generation(knowledge_base_id: int) -> int | None:
    manifest = manifest_read(base_folder(knowledge_base_id))
    return manifest.lexical.generation if manifest and manifest.lexical else None


def database_generation(knowledge_base_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(generation), 0) FROM search_index_state "
                       "WHERE knowledge_base_id = %s", [knowledge_base_id])
        return cursor.fetchone()[0]
