"""The names uploads are known by: an uploaded document's `source` (what search results, `/ask`
citations, traces and pages show) is the file name the person gave, made safe and unique within
its knowledge base; the file itself stays stored under a generated name.

The rule (docs/api.md, docs/ingest.md): the client's base name without any folder, control or
formatting characters and leading dots, its whitespace collapsed, at most NAME_MAX_CHARS long
(the extension kept); `document.pdf` when nothing is left of the name before the extension.
Taken by another document of the base — any letter case — it becomes `name (2).ext`,
`name (3).ext`, ... Uploads stored before this rule get their names from `rag db init`, by the
same rule, in the order they were uploaded.
"""

from __future__ import annotations

import re
import unicodedata

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from knowledge import sql
from parsing.formats import suffix_of
from parsing.formats.base import title_from_name

NAME_MAX_CHARS = 200
FALLBACK_STEM = "document"
# Room kept for the counter when a long name is cut: " (999999)".
_COUNTER_ROOM = 10
_SEPARATORS = re.compile(r"[/\\]")


def source_name_clean(filename: str | None) -> str:
    """The client's file name as an upload's source name, before it is made unique; "" when
    nothing of it is left."""
    base = _SEPARATORS.split(filename or "")[-1]
    base = " ".join("".join(ch for ch in base if not _invisible(ch)).split())
    stem, suffix = _split(base)
    stem = stem.lstrip(". ").rstrip()
    if not stem:
        stem = FALLBACK_STEM if suffix else ""
    return _compose(stem, 1, suffix)


def source_name_unique(cursor: CursorWrapper, *, knowledge_base_id: int, name: str) -> str:
    """`name`, or the first of `name (2)`, `name (3)`, ... that no document of the base has
    (ignoring case). The caller holds the base's name lock (sql.UPLOAD_NAMES_LOCK)."""
    stem, suffix = _split(name)
    prefix = stem[:max(0, NAME_MAX_CHARS - len(suffix) - _COUNTER_ROOM)].lower()
    cursor.execute(sql.UPLOAD_NAMES_TAKEN, [knowledge_base_id, prefix])
    taken = {row[0] for row in cursor.fetchall()}
    number = 1
    while _compose(stem, number, suffix).lower() in taken:
        number += 1
    return _compose(stem, number, suffix)


def upload_names_backfill() -> int:
    """Give every upload stored before source names its name (idempotent), retitle those titled
    after their stored file, and point their chunks at the name; their lexical terms are marked
    for re-analysis (`rag db init` runs it). Returns how many documents were named."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql.UPLOADS_UNNAMED)
        unnamed = cursor.fetchall()
        locked: set[int] = set()
        for document_id, base_id, relative_path, original_name, title in unnamed:
            if base_id not in locked:
                cursor.execute(sql.UPLOAD_NAMES_LOCK, [str(base_id)])
                locked.add(base_id)
            name = source_name_clean(original_name)
            stored_suffix = suffix_of(relative_path)
            if suffix_of(name) != stored_suffix:  # never a name of another format than its file
                name = source_name_clean((title_from_name(name) if name else FALLBACK_STEM)
                                         + stored_suffix)
            name = source_name_unique(cursor, knowledge_base_id=base_id, name=name)
            if title == title_from_name(relative_path):  # titled after its stored file
                title = title_from_name(name)
            cursor.execute(sql.UPLOAD_NAME_SET, [name, title, document_id])
        cursor.execute(sql.UPLOAD_CHUNKS_REPOINT)
    return len(unnamed)


def _invisible(ch: str) -> bool:
    # Control, formatting (bidirectional overrides, zero-width), surrogates, private use,
    # unassigned, and line or paragraph separators.
    category = unicodedata.category(ch)
    return category[0] == "C" or category in ("Zl", "Zp")


def _split(name: str) -> tuple[str, str]:
    dot = name.rfind(".")
    return (name[:dot], name[dot:]) if dot > 0 else (name, "")


def _compose(stem: str, number: int, suffix: str) -> str:
    counter = f" ({number})" if number > 1 else ""
    return stem[:max(1, NAME_MAX_CHARS - len(counter) - len(suffix))] + counter + suffix
