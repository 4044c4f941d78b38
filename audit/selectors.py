"""Reading the audit log, newest first, for `rag audit`, `GET /audit` and the admin."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from audit import sql
from core.db import db_errors_translated
from core.errors import InvalidRequest

LIMIT_MAX = 1000


@dataclass(frozen=True)
class AuditQuery:
    """Filters, each optional: entries at or after `since` and before `until`, by `actor` (its
    label, such as `cli:alice`, or a user name), `action` (exact, or a prefix of dotted parts:
    `grant` finds grant.create and grant.delete), `source`; `before_id` pages backwards."""

    since: datetime | None = None
    until: datetime | None = None
    actor: str | None = None
    action: str | None = None
    source: str | None = None
    before_id: int | None = None
    limit: int = 100


def audit_entries(query: AuditQuery) -> list[dict[str, Any]]:
    """The entries that match `query`, newest first, at most `query.limit`."""
    if not 1 <= query.limit <= LIMIT_MAX:
        raise InvalidRequest(f"limit must be between 1 and {LIMIT_MAX}, got {query.limit}",
                             details={"field": "limit"})
    params = {"since": query.since, "until": query.until, "actor": query.actor or None,
              "action": (query.action or "").rstrip(".*") or None,
              "source": query.source or None, "before_id": query.before_id,
              "limit": query.limit}
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.ENTRIES, params)
        columns = [column.name for column in cursor.description]
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    for row in rows:
        if isinstance(row["changes"], str):
            row["changes"] = json.loads(row["changes"])
    return rows
