"""Knowledge bases and their sources: create, list, register a folder, find a folder's base.

A source is a canonical folder path (the value documents.vault_path holds for its documents):
a vault folder an operator registered, or a base's own upload area under the project's data
folder. A folder that is a source of no base is put into `default` when it is first ingested.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from access.callers import Caller
from access.models import ApiToken, Grant
from audit.records import AuditEvent, audit_record, changed
from core.config import Config
from core.db import db_errors_translated, rows_as
from core.errors import Conflict, InvalidRequest, NotFound
from embeddings.outbound import OUTBOUND_LOCAL_ONLY, outbound_policy_check
from knowledge import sql
from knowledge.vault_index import vault_overlap_check
from parsing.vault import vault_resolve

DEFAULT_SLUG = "default"
SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass(frozen=True)
class Source:
    kind: str  # vault or uploads
    path: str


@dataclass(frozen=True, slots=True)
class _SourceRow:
    knowledge_base_id: int
    kind: str
    path: str


@dataclass(frozen=True)
class KnowledgeBaseInfo:
    id: int
    slug: str
    name: str
    description: str
    outbound: str = OUTBOUND_LOCAL_ONLY  # whether its text may leave the machine (outbound.py)
    documents: int = 0
    chunks: int = 0
    sources: list[Source] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"slug": self.slug, "name": self.name, "description": self.description,
                "outbound": self.outbound, "documents": self.documents, "chunks": self.chunks,
                "sources": [{"kind": source.kind, "path": source.path}
                            for source in self.sources]}


def slug_check(slug: str) -> str:
    # fullmatch: `$` of a match would let a trailing line break through, which the table's
    # CHECK then refuses as a database error.
    if not SLUG.fullmatch(slug):
        raise InvalidRequest(f"knowledge base slug {slug!r} must be 1–63 lower-case letters, "
                             "digits, '-' or '_', starting with a letter or digit",
                             details={"field": "slug"})
    return slug


def kb_create(*, slug: str, name: str | None = None, description: str = "",
              sources: list[str] | tuple[str, ...] = (),
              outbound: str = OUTBOUND_LOCAL_ONLY) -> KnowledgeBaseInfo:
    """A new knowledge base with its vault sources (each must be a folder no base has yet);
    its text stays on this machine unless `outbound` is `allowed`."""
    slug_check(slug)
    outbound_policy_check(outbound)
    paths = [str(vault_resolve(path)) for path in sources]
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql.KB_INSERT, [slug, name or slug, description, outbound])
        row = cursor.fetchone()
        if row is None:
            raise Conflict(f"knowledge base {slug!r} exists already", details={"slug": slug})
        for path in paths:
            _source_insert(cursor, knowledge_base_id=row[0], kind="vault", path=path)
        audit_record(AuditEvent(action="knowledge_base.create", object_type="knowledge_base",
                                object_id=slug, object_name=name or slug,
                                changes={"description": description, "outbound": outbound,
                                         "sources": paths}))
    return kb_get(slug)


def kb_source_add(*, slug: str, path: str | Path, kind: str = "vault") -> str:
    """Register a folder as a source of the base; returns its canonical path. A folder that
    is already a source of this base is fine; of another base, a conflict."""
    canonical = str(vault_resolve(path)) if kind == "vault" else str(path)
    base = kb_get(slug)
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        added = _source_insert(cursor, knowledge_base_id=base.id, kind=kind, path=canonical)
        if added and kind == "vault":  # a base's upload area comes with it, by no action
            audit_record(AuditEvent(action="knowledge_base.source_add",
                                    object_type="knowledge_base", object_id=slug,
                                    object_name=base.name,
                                    changes={"source": {"kind": kind, "path": canonical}}))
    return canonical


def _source_add(*, knowledge_base_id: int, kind: str, path: str) -> None:
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        _source_insert(cursor, knowledge_base_id=knowledge_base_id, kind=kind, path=path)


def _source_insert(cursor: CursorWrapper, *, knowledge_base_id: int, kind: str,
                   path: str) -> bool:
    """Make `path` a source of the base; True when it was not one of its sources before."""
    # A folder inside or around another source would put the same files in two bases.
    vault_overlap_check(vault_path=path)
    cursor.execute(sql.KB_SOURCE_INSERT, [knowledge_base_id, kind, path])
    claimed = cursor.fetchone() is not None
    if not claimed:
        # A folder ingested before it had a base of its own became a source of `default`:
        # the first base it is added to takes it over.
        cursor.execute(sql.KB_SOURCE_CLAIM, [knowledge_base_id, kind, path, DEFAULT_SLUG])
        claimed = cursor.fetchone() is not None
    if claimed:
        # Documents of that folder indexed earlier (under `default`) follow it into its base.
        kb_source_documents_move(knowledge_base_id=knowledge_base_id, path=path)
        return True
    cursor.execute(sql.KB_SOURCE_OWNER, [path])
    owner, owner_slug = cursor.fetchone()
    if owner != knowledge_base_id:
        raise Conflict(f"{path} is a source of the knowledge base {owner_slug!r} already",
                       details={"path": path, "knowledge_base": owner_slug})
    return False


def kb_source_documents_move(*, knowledge_base_id: int, path: str) -> None:
    """Move a source folder's documents into the base the source belongs to now (after it was
    added or moved there); their chunks follow by the schema's trigger, in the caller's
    transaction, so retrieval's filter on chunks.knowledge_base_id stays true."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.KB_DOCUMENTS_MOVE, [knowledge_base_id, path, knowledge_base_id])


def kb_delete(*, slug: str) -> None:
    """Remove an empty knowledge base (its documents forgotten first) with its sources, grants
    and token links; `default` and a base that still holds documents are refused."""
    base = kb_get(slug)
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        Grant.objects.filter(knowledge_base_id=base.id).delete()
        ApiToken.knowledge_bases.through.objects.filter(knowledgebase_id=base.id).delete()
        cursor.execute(sql.KB_DELETE_EMPTY, [slug])
        if cursor.fetchone() is None:
            raise Conflict(f"knowledge base {slug!r} cannot be removed: it is `default` or still "
                           "holds documents", details={"knowledge_base": slug})
        audit_record(AuditEvent(action="knowledge_base.delete", object_type="knowledge_base",
                                object_id=slug, object_name=base.name,
                                changes={"outbound": base.outbound,
                                         "sources": [source.path for source in base.sources]}))


def kb_update(*, slug: str, name: str | None = None, description: str | None = None,
              outbound: str | None = None) -> KnowledgeBaseInfo:
    """Rename a base, change its description or its outbound policy (what is None stays);
    its slug stays."""
    if outbound is not None:
        outbound_policy_check(outbound)
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        before = kb_get(slug)
        cursor.execute(sql.KB_UPDATE, [name, description, outbound, slug])
        if cursor.fetchone() is None:
            raise NotFound(f"knowledge base not found: {slug}", details={"knowledge_base": slug})
        after = kb_get(slug)
        changes = changed({"name": before.name, "description": before.description,
                           "outbound": before.outbound},
                          {"name": after.name, "description": after.description,
                           "outbound": after.outbound})
        if changes:  # nothing changed, nothing to audit
            audit_record(AuditEvent(action="knowledge_base.update",
                                    object_type="knowledge_base", object_id=slug,
                                    object_name=after.name, changes=changes))
    return after


# The same services for a caller of the API: only an admin creates, changes or deletes a base,
# and a base the caller cannot read is not found, exactly like a missing one.


def kb_admin_create(*, caller: Caller, slug: str, name: str | None = None,
                    description: str = "",
                    outbound: str = OUTBOUND_LOCAL_ONLY) -> KnowledgeBaseInfo:
    """A new, empty knowledge base (documents come by upload; folders are the operator's)."""
    caller.admin_check(what="create knowledge bases")
    return kb_create(slug=slug, name=name, description=description, outbound=outbound)


def kb_admin_update(*, caller: Caller, slug: str, name: str | None = None,
                    description: str | None = None,
                    outbound: str | None = None) -> KnowledgeBaseInfo:
    """Rename a base, change its description or its outbound policy, as an admin."""
    kb_get_visible(caller, slug)
    caller.admin_check(what=f"change knowledge base {slug}")
    return kb_update(slug=slug, name=name, description=description, outbound=outbound)


def kb_admin_delete(*, caller: Caller, slug: str) -> None:
    """Remove an empty base, as an admin (refused while it holds documents, as kb_delete)."""
    kb_get_visible(caller, slug)
    caller.admin_check(what=f"delete knowledge base {slug}")
    kb_delete(slug=slug)


def kb_get_visible(caller: Caller, slug: str) -> KnowledgeBaseInfo:
    """The base, when the caller may read it; NotFound alike for a missing or hidden one."""
    try:
        base = kb_get(slug)
    except NotFound:
        base = None
    if base is None or not caller.may_read(base.id):
        raise NotFound(f"knowledge base not found: {slug}", details={"knowledge_base": slug})
    return base


def kb_get(slug: str) -> KnowledgeBaseInfo:
    for base in kb_list(slugs=[slug]):
        return base
    raise NotFound(f"knowledge base not found: {slug}", details={"knowledge_base": slug})


def kb_list(*, slugs: list[str] | None = None,
            ids: list[int] | tuple[int, ...] | None = None) -> list[KnowledgeBaseInfo]:
    """Knowledge bases by slug, with their counts and sources; `slugs` or `ids` narrow it."""
    with db_errors_translated(), connection.cursor() as cursor:
        narrow_ids = list(ids) if ids is not None else None
        cursor.execute(sql.KB_LIST, [slugs, slugs, narrow_ids, narrow_ids])
        bases = rows_as(cursor, KnowledgeBaseInfo)
        cursor.execute(sql.KB_SOURCES, [[base.id for base in bases]])
        sources: dict[int, list[Source]] = {}
        for row in rows_as(cursor, _SourceRow):
            sources.setdefault(row.knowledge_base_id, []).append(Source(kind=row.kind,
                                                                        path=row.path))
    return [dataclasses.replace(base, sources=sources.get(base.id, [])) for base in bases]


def source_base(*, path: str) -> int:
    """The knowledge base a folder's documents go into: its source's base, or `default` (the
    folder then becomes a source of `default`)."""
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql.KB_SOURCE_OWNER, [path])
        row = cursor.fetchone()
        if row is not None:
            return row[0]
        cursor.execute(sql.KB_DEFAULT_SOURCE_ENSURE, [path, DEFAULT_SLUG])
        cursor.execute(sql.KB_SOURCE_OWNER, [path])
        return cursor.fetchone()[0]


def uploads_folder(*, config: Config, base: KnowledgeBaseInfo) -> Path:
    """A base's upload area: created on first use (mode 700) and registered as its source."""
    folder = config.upload_dir / f"kb-{base.id}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    canonical = str(folder.resolve())
    if not any(source.path == canonical for source in base.sources):
        _source_add(knowledge_base_id=base.id, kind="uploads", path=canonical)
    return folder.resolve()
