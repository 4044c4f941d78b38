"""Which note an Obsidian wikilink names within one knowledge base, and the chunk it opens at.

A link's note is read as Obsidian reads it, case-insensitively, among the base's active
documents:
1. a path: the documents whose `relative_path` is the note as written, or with `.md` added,
   or ends with it after a `/` — a file name (`[[Data Handling Policy]]`) or the end of a path
   (`[[policies/Data Handling Policy]]`, `[[guide.pdf]]`) — the shortest path first, as
   Obsidian prefers the nearest;
2. else a title: the documents whose frontmatter `title`, or whose own title, is the note.
A note nothing answers to is not resolved. A link opens at the note's first chunk whose heading
path holds its heading (`[[Note#Heading]]`, compared lower-cased), else at the note's first chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q

from knowledge.models import Document
from knowledge.sql import WIKILINK_FIRST_SQL, WIKILINK_HEADED_SQL

# A page holds a few links; more are left unresolved rather than searched in one huge query.
LINKS_MAX = 50
NOTE_SUFFIX = ".md"


@dataclass(frozen=True)
class _Candidate:
    id: int
    relative_path: str
    titles: tuple[str, ...]


def wikilink_chunks(*, knowledge_base_id: int,
                    links: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The chunk each (note, heading) link opens at, for the links that name a note of the
    knowledge base (see the module docstring)."""
    wanted = list(dict.fromkeys(link for link in links if _note(link[0])))[:LINKS_MAX]
    if not wanted:
        return {}
    candidates = _candidates(knowledge_base_id, [_note(note) for note, _ in wanted])
    documents = {link: document for link in wanted
                 if (document := _resolved(_note(link[0]), candidates)) is not None}
    if not documents:
        return {}
    headed, first = _chunks_opened(set(documents.values()),
                                   {heading.strip().lower() for _, heading in documents
                                    if heading.strip()})
    opened = {}
    for (note, heading), document in documents.items():
        chunk = headed.get((document, heading.strip().lower())) or first.get(document)
        if chunk is not None:
            opened[(note, heading)] = chunk
    return opened


def _chunks_opened(documents: set[int], headings: set[str]
                   ) -> tuple[dict[tuple[int, str], int], dict[int, int]]:
    """((document, lower-cased heading) → the first chunk under it, document → first chunk)."""
    ids = sorted(documents)
    with connection.cursor() as cursor:
        headed: dict[tuple[int, str], int] = {}
        if headings:
            cursor.execute(WIKILINK_HEADED_SQL, [ids, sorted(headings)])
            headed = {(document, heading): chunk for document, heading, chunk in cursor.fetchall()}
        cursor.execute(WIKILINK_FIRST_SQL, [ids])
        first = {document: chunk for document, chunk in cursor.fetchall()}
    return headed, first


def _note(note: str) -> str:
    return note.strip().lstrip("/").strip()


def _candidates(knowledge_base_id: int, notes: Sequence[str]) -> list[_Candidate]:
    """The base's active documents any of `notes` may name, by path, file name or title."""
    matches = Q(pk__in=[])
    for note in notes:
        for name in (note, note + NOTE_SUFFIX):
            matches |= Q(relative_path__iexact=name) | Q(relative_path__iendswith="/" + name)
        matches |= Q(title__iexact=note) | Q(frontmatter__title__iexact=note)
    rows = (Document.objects.filter(matches, knowledge_base_id=knowledge_base_id,
                                    status="active")
            .values("id", "relative_path", "title", "frontmatter"))
    return [_Candidate(id=row["id"], relative_path=row["relative_path"],
                       titles=_titles(row["title"], row["frontmatter"])) for row in rows]


def _titles(title: str | None, frontmatter: object) -> tuple[str, ...]:
    stated = frontmatter.get("title") if isinstance(frontmatter, dict) else None
    return tuple(value.strip().casefold() for value in (stated, title)
                 if isinstance(value, str) and value.strip())


def _resolved(note: str, candidates: Sequence[_Candidate]) -> int | None:
    names = (note.casefold(), (note + NOTE_SUFFIX).casefold())
    by_path = [candidate for candidate in candidates
               if any(candidate.relative_path.casefold() == name
                      or candidate.relative_path.casefold().endswith("/" + name)
                      for name in names)]
    by_title = [candidate for candidate in candidates if note.casefold() in candidate.titles]
    for found in (by_path, by_title):
        if found:
            return min(found, key=lambda candidate: (len(candidate.relative_path),
                                                     candidate.relative_path)).id
    return None
