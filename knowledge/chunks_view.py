"""One chunk by id, for a caller that may read its knowledge base (the MCP `get_chunk` tool):
its text and where it comes from, in the words of /search's results."""

from __future__ import annotations

from typing import Any

from django.db import connection

from core.db import db_errors_translated
from core.errors import NotFound
from knowledge import sql
from access.callers import Caller


def chunk_get(*, caller: Caller, chunk_id: int) -> dict[str, Any]:
    """A chunk's content, headings, pages, document and knowledge base; NotFound alike for a
    missing chunk and one of a base the caller may not read."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.CHUNK_DETAIL, [chunk_id])
        row = cursor.fetchone()
        if row is None or not caller.may_read(row[1]):
            raise NotFound(f"chunk not found: {chunk_id}", details={"id": chunk_id})
        detail = dict(zip([column.name for column in cursor.description], row))
    detail.pop("knowledge_base_id")
    return detail
