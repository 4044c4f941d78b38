"""What a caller may do, in the words of GET /me: who its credentials act for, whether it is an
admin, and the knowledge bases it reads with its role in each."""

from __future__ import annotations

from typing import Any

from django.db import connection

from access import sql
from access.callers import Caller
from core.db import db_errors_translated


def caller_profile(*, caller: Caller) -> dict[str, Any]:
    """The caller's kind, name, token, admin right and readable bases (slug, name, role)."""
    ids = list(caller.scope().knowledge_base_ids)
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.KB_NAMES, [ids])
        rows = cursor.fetchall()
    return {
        "kind": caller.kind,
        "label": caller.label,
        "username": caller.username,
        "token_id": caller.token_id,
        "read_only": caller.read_only,
        "admin": caller.admin,
        # True: it reads every base, also those created later (its list is only today's).
        "every_knowledge_base": caller.everything or caller.admin,
        "knowledge_bases": [{"slug": slug, "name": name,
                             "role": caller.role(base_id)}
                            for base_id, slug, name in rows],
    }
