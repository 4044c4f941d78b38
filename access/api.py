"""The access app's API: `GET /me`, who the caller's credentials act for and what it may do,
so that a front end can show the right bases and actions without trying them; and `GET /audit`,
the audit log, for admins (there is no route that writes to it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Query, Router

from access.api_schemas import MeOut
from access.auth import CallerRequest
from access.selectors import caller_profile
from audit.api_schemas import AuditPage
from audit.selectors import LIMIT_MAX, AuditQuery, audit_entries
from core.api_schemas import ErrorBody

router = Router(tags=["access"])

ERRORS = {code: ErrorBody for code in (401, 429, 503)}
AUDIT_ERRORS = {code: ErrorBody for code in (400, 401, 403, 422, 429, 503)}


@router.get("/me", response={200: MeOut, **ERRORS},
            summary="Who the token acts for, whether it is an admin, and its bases and roles")
def me_view(request: CallerRequest) -> dict[str, Any]:
    return caller_profile(caller=request.auth)


@router.get("/audit", response={200: AuditPage, **AUDIT_ERRORS},
            summary="The audit log, newest first, filtered (admins)")
def audit_view(request: CallerRequest, since: datetime | None = None,
               until: datetime | None = None, actor: str | None = Query(None, max_length=200),
               action: str | None = Query(None, max_length=100),
               source: Literal["api", "cli", "workbench", "admin"] | None = None,
               before_id: int | None = Query(None, ge=1),
               limit: int = Query(100, ge=1, le=LIMIT_MAX)) -> dict[str, Any]:
    request.auth.admin_check(what="read the audit log")
    entries = audit_entries(AuditQuery(since=since, until=until, actor=actor, action=action,
                                       source=source, before_id=before_id, limit=limit))
    return {"entries": entries,
            "next_before_id": entries[-1]["id"] if len(entries) == limit else None}
