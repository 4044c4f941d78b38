"""API tokens: issued to a user with only the SHA-256 of the secret stored, listed without it,
revoked. What a token may do is the caller's business (access/callers.py)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction

from access import sql
from access.callers import TOKEN_PREFIX, kb_ids_by_slug, token_digest
from audit.records import AuditEvent, audit_record
from core.db import db_errors_translated
from core.errors import NotFound


@dataclass(frozen=True)
class IssuedToken:
    id: int
    secret: str  # shown once, stored nowhere
    prefix: str


def token_create(*, username: str, slugs: list[str] | None = None, read_only: bool = False,
                 name: str = "") -> IssuedToken:
    """Issue a token to a user; only its SHA-256 is stored."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    prefix = secret[:10]
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql.USER_BY_NAME, [username])
        row = cursor.fetchone()
        if row is None:
            raise NotFound(f"no user named {username!r}; create one with `rag user create "
                           f"{username}` (then `rag grant {username} KB reader`), or in the "
                           "admin", details={"user": username})
        user_id = row[0]
        ids = kb_ids_by_slug(cursor, slugs or [])
        missing = [slug for slug in slugs or [] if slug not in ids]
        if missing:
            raise NotFound(f"knowledge base not found: {missing[0]}",
                           details={"knowledge_base": missing[0]})
        cursor.execute(sql.TOKEN_INSERT, [user_id, name, prefix, token_digest(secret), read_only,
                                          bool(slugs)])
        token_id = cursor.fetchone()[0]
        for base_id in sorted(set(ids.values())):
            cursor.execute(sql.TOKEN_BASE_INSERT, [token_id, base_id])
        audit_record(AuditEvent(action="token.create", object_type="token", object_id=token_id,
                                object_name=name or f"{prefix}…",
                                changes={"user": username, "prefix": prefix,
                                         "read_only": read_only,
                                         "knowledge_bases": sorted(ids)}))
    return IssuedToken(id=token_id, secret=secret, prefix=prefix)


def tokens_list() -> list[dict]:
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TOKENS_LIST)
        columns = [column.name for column in cursor.description]
        return [dict(zip(columns, row)) for row in cursor.fetchall()]


def token_revoke(*, token_id: int) -> None:
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql.TOKEN_REVOKE, [token_id])
        row = cursor.fetchone()
        if row is None:
            raise NotFound(f"no active token with id {token_id}", details={"id": token_id})
        audit_record(AuditEvent(action="token.revoke", object_type="token", object_id=token_id,
                                object_name=_token_name(row), changes={"user": row[2]}))


def tokens_revoke(*, token_ids: Iterable[int]) -> int:
    """Revoke many tokens in one statement (one action: one audit entry); returns how many
    were active until now."""
    with db_errors_translated(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql.TOKENS_REVOKE, [list(token_ids)])
        rows = cursor.fetchall()
        if len(rows) == 1:
            audit_record(AuditEvent(action="token.revoke", object_type="token",
                                    object_id=rows[0][0], object_name=_token_name(rows[0]),
                                    changes={"user": rows[0][2]}))
        elif rows:
            audit_record(AuditEvent(action="token.revoke", object_type="token",
                                    object_name=f"{len(rows)} tokens",
                                    changes={"ids": sorted(row[0] for row in rows),
                                             "users": sorted({row[2] for row in rows})}))
        return len(rows)


def _token_name(row: tuple[int, str, str, str]) -> str:
    token_id, prefix, _, name = row
    return name or f"{prefix}…"

