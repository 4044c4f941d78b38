"""What an evaluation needs to know of the corpus it evaluated: a digest of exactly what was
indexed (documents, their versions and chunk hashes), and where a text appears verbatim (the
leakage guard: a question copied into the bases scores retrieval, not understanding)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection

from access.callers import Scope
from core.db import db_errors_translated
from evaluation import sql

VERBATIM_PLACES_PER_TEXT = 3
ANCHOR_CHARS = 12  # texts shorter than this are not looked for
CHUNK_BATCH = 500


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
    """Where each text of at least ANCHOR_CHARS characters appears verbatim (case and whitespace
    aside) in the chunks of the scope's bases: at most VERBATIM_PLACES_PER_TEXT places per text,
    ordered by text, document and chunk.

    Every chunk is read once, in batches: its ANCHOR_CHARS-character substrings meet the texts'
    first ANCHOR_CHARS characters in one set intersection, and only a text whose start is there
    is looked for in full. The time grows with the size of the corpus, not with the corpus
    times the number of texts, as a search of each text in each chunk would."""
    wanted = [text_normalised(text) for text in texts]
    anchors: dict[str, list[int]] = {}
    for position, text in enumerate(wanted):
        if len(text) >= ANCHOR_CHARS:
            anchors.setdefault(text[:ANCHOR_CHARS], []).append(position)
    found: dict[int, list[VerbatimPlace]] = {}
    if not anchors or not scope.knowledge_base_ids:
        return []
    looked_for = [position for positions in anchors.values() for position in positions]
    after = 0
    while not all(len(found.get(position, ())) >= VERBATIM_PLACES_PER_TEXT
                  for position in looked_for):
        with db_errors_translated(), connection.cursor() as cursor:
            cursor.execute(sql.CHUNKS_AFTER, [list(scope.knowledge_base_ids), after,
                                              CHUNK_BATCH])
            rows = cursor.fetchall()
        if not rows:
            break
        for _, path, chunk_index, content in rows:
            body = text_normalised(content)
            grams = {body[start:start + ANCHOR_CHARS]
                     for start in range(len(body) - ANCHOR_CHARS + 1)}
            for anchor in grams.intersection(anchors):
                for position in anchors[anchor]:
                    places = found.get(position, [])
                    if len(places) < VERBATIM_PLACES_PER_TEXT and wanted[position] in body:
                        found[position] = [*places, VerbatimPlace(
                            text_index=position, document=path, chunk_index=chunk_index)]
        after = rows[-1][0]
    return sorted((place for places in found.values() for place in places),
                  key=lambda place: (place.text_index, place.document, place.chunk_index))
