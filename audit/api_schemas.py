"""The contract of GET /audit (the route is access/api.py's: only an admin reads it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema


class AuditEntryOut(Schema):
    id: int
    created_at: datetime
    actor: str
    actor_kind: Literal["user", "token", "cli", "operator", "anonymous"]
    user_id: int | None
    username: str | None
    token_id: int | None
    source: Literal["api", "cli", "workbench", "admin"]
    action: str
    object_type: str
    object_id: str
    object_name: str
    changes: dict[str, Any]
    request_id: str
    address: str | None


class AuditPage(Schema):
    entries: list[AuditEntryOut]
    # Pass as `before_id` for the next (older) page; null on the last page.
    next_before_id: int | None
