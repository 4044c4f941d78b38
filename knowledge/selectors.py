"""Read-only questions about the knowledge: counts (used by /health, ops/readiness.py, and the
CLI), the knowledge bases a caller sees (the body of GET /knowledge-bases, which the MCP server's
`list_knowledge_bases` returns too), a page of a base's documents, one chunk by id for a caller
that may read its base (the MCP `get_chunk` tool), in the words of /search's results, and the
chunks a trace recorded, by id or by their place in their document (`rag traces show
--replay`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection

from access.callers import Caller, Scope
from core.config import Config
from core.db import db_errors_translated, row_as, rows_as
from core.errors import InvalidRequest, NotFound
from knowledge import sql
from knowledge.bases import KnowledgeBaseInfo, kb_get_visible, kb_list
from parsing.formats import FORMATS


@dataclass(frozen=True)
class StoredChunk:
    """A chunk row as the index holds it now."""

    id: int
    document_id: int
    chunk_index: int
    relative_path: str
    heading_path: list[str]
    page_start: int | None
    page_end: int | None
    content: str
    content_hash: str


@dataclass(frozen=True, slots=True)
class _DateRow:
    document_id: int
    stated: Any  # the frontmatter's date, as written (a string, or a date YAML read as one)
    changed: Any  # the day the file last changed (UTC)


@dataclass(frozen=True)
class StoredChunks:
    """The chunks found by id, and by (document id, chunk index)."""

    by_id: dict[int, StoredChunk]
    by_place: dict[tuple[int, int], StoredChunk]


@dataclass(frozen=True)
class IndexCounts:
    documents: int
    chunks: int
    embeddings_current_config: int


def index_counts(*, config: Config, scope: Scope | None = None) -> IndexCounts:
    """How much is indexed (within `scope` when given), counting only vectors of the current
    provider/model/dim."""
    with db_errors_translated(), connection.cursor() as cursor:
        if scope is None:
            cursor.execute(sql.INDEX_COUNTS, [config.embedding_provider, config.embedding_model,
                                              config.embedding_dim])
        else:
            cursor.execute(sql.INDEX_COUNTS_SCOPED, {
                "ids": list(scope.knowledge_base_ids), "provider": config.embedding_provider,
                "model": config.embedding_model, "dim": config.embedding_dim})
        documents, chunks, embeddings = cursor.fetchone()
    return IndexCounts(documents, chunks, embeddings)


def corpus_fingerprint() -> str:
    """A short hash of what is indexed (every document's vault, path and content hash), so two
    evaluation runs can tell whether they saw the same corpus."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.CORPUS_FINGERPRINT)
        return (cursor.fetchone()[0] or "empty")[:12]


def kb_list_visible(*, caller: Caller) -> list[dict[str, Any]]:
    """The knowledge bases the caller may read, with their counts and the caller's role."""
    return [kb_entry(base, caller=caller)
            for base in kb_list(ids=caller.scope().knowledge_base_ids)]


def kb_entry(base: KnowledgeBaseInfo, *, caller: Caller) -> dict[str, Any]:
    """One base as the caller sees it: its counts and the caller's role."""
    # Without `sources`: those are folders on the server, not the caller's business.
    return {**{key: value for key, value in base.as_dict().items() if key != "sources"},
            "role": caller.role(base.id)}


# The values of documents.status (knowledge's migration 0010) and documents.format.
DOCUMENT_STATUSES = ("queued", "active", "failed", "deleting")
DOCUMENT_FORMATS = ("markdown", *FORMATS)
DOCUMENTS_PAGE_MAX = 200


def documents_of_base(*, caller: Caller, slug: str, status: str | None = None,
                      format: str | None = None, limit: int = 50,
                      offset: int = 0) -> dict[str, Any]:
    """One page of a base the caller reads: its documents (newest change first), narrowed to a
    status and a format when given, with the total that matches; NotFound when hidden."""
    if not 1 <= limit <= DOCUMENTS_PAGE_MAX or offset < 0:
        raise InvalidRequest(f"limit must be between 1 and {DOCUMENTS_PAGE_MAX}, offset at "
                             "least 0", details={"limit": limit, "offset": offset})
    base = kb_get_visible(caller, slug)
    narrowing = {"base": base.id, "status": status, "format": format}
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENTS_OF_BASE_COUNT, narrowing)
        total = cursor.fetchone()[0]
        documents: list[dict[str, Any]] = []
        if offset < total:  # past the end: no page to read (and no OFFSET beyond a bigint)
            cursor.execute(sql.DOCUMENTS_OF_BASE, {**narrowing, "limit": limit,
                                                   "offset": offset})
            columns = [column.name for column in cursor.description]
            documents = [dict(zip(columns, row)) for row in cursor.fetchall()]
    return {"knowledge_base": base.slug, "total": total, "limit": limit, "offset": offset,
            "documents": documents}


def chunk_get(*, caller: Caller, chunk_id: int) -> dict[str, Any]:
    """A chunk's content, headings, pages, document and knowledge base; NotFound alike for a
    missing chunk and one of a base the caller may not read."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.CHUNK_DETAIL, [chunk_id])
        detail: dict[str, Any] | None = row_as(cursor, dict)
    if detail is None or not caller.may_read(detail.pop("knowledge_base_id")):
        raise NotFound(f"chunk not found: {chunk_id}", details={"id": chunk_id})
    return detail


def document_dates(*, document_ids: list[int]) -> dict[int, str]:
    """The date of each document, as the answer's context names it: its frontmatter's
    `updated`, `date`, `modified` or `created` (the first it has, as written), else the day its
    file last changed (UTC); documents with neither are left out."""
    if not document_ids:
        return {}
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.DOCUMENT_DATES, [sorted(set(document_ids))])
        rows = rows_as(cursor, _DateRow)
    return {row.document_id: " ".join(str(row.stated or row.changed).split())[:40]
            for row in rows if row.stated or row.changed}


def chunks_by_id_or_place(*, chunk_ids: list[int],
                          places: list[tuple[int, int]]) -> StoredChunks:
    """The chunks of these ids, and those now at these places (document id, chunk index): a
    re-ingested document's chunks are new rows at the places of the old ones."""
    if not chunk_ids and not places:
        return StoredChunks(by_id={}, by_place={})
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.CHUNKS_BY_ID_OR_PLACE, [
            chunk_ids, [document_id for document_id, _ in places],
            [chunk_index for _, chunk_index in places]])
        chunks = rows_as(cursor, StoredChunk)
    wanted = set(chunk_ids)
    return StoredChunks(by_id={chunk.id: chunk for chunk in chunks if chunk.id in wanted},
                        by_place={(chunk.document_id, chunk.chunk_index): chunk
                                  for chunk in chunks})
