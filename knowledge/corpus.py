"""What an evaluation needs to know of the corpus it evaluated: a digest of exactly what was
indexed (documents, their versions and chunk hashes), and where a text appears verbatim (the
leakage guard: a question copied into the bases scores retrieval, not understanding)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection

from access.callers import Scope
from core.db import db_errors_translated
from knowledge import sql

VERBATIM_PLACES_PER_TEXT = 3


@dataclass(frozen=True)
class CorpusDigest:
    digest: str  # sha256, hex
    documents: int


@dataclass(frozen=True)
class VerbatimPlace:
    text_index: int  # 0-based position in the texts asked about
    document: str  # relative path
    chunk_index: int


def text_normalised(text: str) -> str:
    """Lower case, whitespace runs as one space: how texts and chunks are compared."""
    return " ".join(text.split()).lower()


def corpus_digest(*, scope: Scope) -> CorpusDigest:
    """The sha256 of the active documents of the scope's bases, in id order, each with its path,
    active version, content hash and its chunks' hashes in order."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.CORPUS_DIGEST, [list(scope.knowledge_base_ids)])
        digest, documents = cursor.fetchone()
    return CorpusDigest(digest=digest, documents=documents)


def verbatim_places(*, scope: Scope, texts: Sequence[str]) -> list[VerbatimPlace]:
    """Where each text appears verbatim (case and whitespace aside) in the chunks of the
    scope's bases: at most VERBATIM_PLACES_PER_TEXT places per text."""
    if not texts or not scope.knowledge_base_ids:
        return []
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.VERBATIM_PLACES, {
            "ids": list(scope.knowledge_base_ids),
            "texts": [text_normalised(text) for text in texts],
            "per_text": VERBATIM_PLACES_PER_TEXT})
        return [VerbatimPlace(text_index=position - 1, document=path, chunk_index=index)
                for position, path, index in cursor.fetchall()]
