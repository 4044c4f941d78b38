"""Who may read and maintain which knowledge bases: callers and scopes (tokens are issued by
access/api_tokens.py).

Every retrieval query takes a `Scope`, the explicit list of knowledge base ids it may read, and
filters on it inside its SQL (`knowledge_base_id = ANY(...)`); nothing is dropped afterwards. A
`Caller` is resolved once per request (or command) from its credentials:

- the local operator (CLI commands, and API callers when access control is off: no token issued,
  no RAG_API_TOKEN, and the request from loopback or a `--trusted-network` server) reads and
  maintains everything;
- RAG_API_TOKEN acts as a token with every right;
- an issued token acts with its user's grants (superusers: everything), narrowed to the token's
  knowledge bases when it lists any, and to reading when it is read-only.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from django.db import connection
from django.db.backends.utils import CursorWrapper

from access import sql
from access.models import Grant
from audit.context import Actor
from core.config import Config
from core.db import db_errors_translated
from core.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser

TOKEN_PREFIX = "lr_"
# last_used_at is written at most this often per token: not one write per request.
LAST_USED_RESOLUTION_SECONDS = 60


@dataclass(frozen=True)
class Scope:
    """The knowledge bases one query may read (ids, sorted); empty reads nothing."""

    knowledge_base_ids: tuple[int, ...]

    @classmethod
    def of(cls, ids: Iterable[int]) -> Scope:
        return cls(tuple(sorted(set(ids))))


@dataclass(frozen=True)
class Caller:
    """Who is asking, and what they may read and maintain."""

    label: str  # for logs and traces: never the token itself
    readable: frozenset[int]
    writable: frozenset[int]
    everything: bool = False  # every knowledge base, also those created after this call began
    user_id: int | None = None
    token_id: int | None = None
    # operator (the CLI, or open access), token (an issued one or RAG_API_TOKEN) or user (a
    # person signed in to the workbench): what GET /me reports.
    kind: str = "operator"
    username: str | None = None
    # May create, change and delete knowledge bases: the operator, RAG_API_TOKEN, a superuser,
    # and a superuser's token that is neither narrowed nor read-only.
    admin: bool = False
    read_only: bool = False  # a read-only token
    # Bases where the caller sees scores, explanations, the lab, evaluation and traces: its
    # researcher and maintainer grants (a read-only token keeps them: they only read).
    researchable: frozenset[int] = frozenset()

    def scope(self, *, slugs: list[str] | None = None) -> Scope:
        """The caller's knowledge bases, narrowed to `slugs` when given. A slug that does not
        exist and one the caller may not read are answered alike: not found."""
        readable = set(kb_ids_all()) if self.everything else set(self.readable)
        if slugs is None:
            return Scope.of(readable)
        with db_errors_translated(), connection.cursor() as cursor:
            ids = kb_ids_by_slug(cursor, slugs)
        for slug in slugs:
            if ids.get(slug) not in readable:
                raise NotFound(f"knowledge base not found: {slug}",
                               details={"knowledge_base": slug})
        return Scope.of(ids[slug] for slug in slugs)

    # An admin reads and maintains every base, also one created since its grants were read
    # (the base it has just created, in the same request).
    def may_read(self, knowledge_base_id: int | None) -> bool:
        return knowledge_base_id is not None and (
            self.everything or self.admin or knowledge_base_id in self.readable)

    def unreadable(self, slugs: Iterable[str]) -> set[str]:
        """Those of `slugs` this caller may not read now: revoked, narrowed away or deleted
        since (an earlier answer that cites one is no longer the caller's to see or send)."""
        wanted = sorted(set(slugs))
        if not wanted:
            return set()
        with db_errors_translated(), connection.cursor() as cursor:
            ids = kb_ids_by_slug(cursor, wanted)
        return {slug for slug in wanted if not self.may_read(ids.get(slug))}

    def may_maintain(self, knowledge_base_id: int) -> bool:
        return self.everything or self.admin or knowledge_base_id in self.writable

    def may_research(self, knowledge_base_id: int) -> bool:
        return (self.everything or self.admin or knowledge_base_id in self.researchable
                or knowledge_base_id in self.writable)

    @property
    def researches_anything(self) -> bool:
        """Whether the lab, evaluation and traces have anything for this caller."""
        return bool(self.everything or self.admin or self.researchable or self.writable)

    def researching(self) -> Caller:
        """This caller as it is where it may research: its reads narrowed to the bases it
        studies, so that whatever lists by `scope()` lists only those (filtered in SQL)."""
        if self.everything or self.admin:
            return self
        studied = frozenset(base for base in self.readable if self.may_research(base))
        return replace(self, readable=studied, writable=self.writable & studied,
                       researchable=studied)

    def role(self, knowledge_base_id: int) -> str:
        """The caller's role on a base it reads, as GET /me and /knowledge-bases name it:
        maintainer, researcher or reader (an admin maintains every base)."""
        if self.may_maintain(knowledge_base_id):
            return "maintainer"
        return "researcher" if self.may_research(knowledge_base_id) else "reader"

    def research_check(self, knowledge_base_id: int, *, what: str) -> None:
        """Raise NotFound for a base the caller cannot see, Forbidden for one it only reads."""
        if not self.may_read(knowledge_base_id):
            raise NotFound(f"{what} not found")
        if not self.may_research(knowledge_base_id):
            raise Forbidden(f"this caller may read but not study {what}: it needs the "
                            "researcher or maintainer role on its knowledge base")

    def actor(self) -> Actor:
        """Who the audit log says acted: the token (with its user), the signed-in user, or
        the operator (the CLI, open access, RAG_API_TOKEN)."""
        if self.token_id is not None:
            return Actor(kind="token", label=f"token:{self.token_id} ({self.username})",
                         user_id=self.user_id, username=self.username, token_id=self.token_id)
        if self.kind == "user":
            return Actor(kind="user", label=f"user:{self.username}", user_id=self.user_id,
                         username=self.username)
        if self.kind == "token":
            return Actor(kind="token", label=self.label)  # RAG_API_TOKEN
        return Actor(kind="operator", label="operator")

    def admin_check(self, *, what: str) -> None:
        """Raise Forbidden unless the caller may create, change and delete knowledge bases."""
        if not self.admin:
            raise Forbidden(f"this caller may not {what}: it takes an admin (a superuser's "
                            "token that is neither narrowed nor read-only, RAG_API_TOKEN, or "
                            "the local operator)")

    def maintain_check(self, knowledge_base_id: int, *, what: str) -> None:
        """Raise NotFound for a base the caller cannot see, Forbidden for one it only reads."""
        if not self.may_read(knowledge_base_id):
            raise NotFound(f"{what} not found")
        if not self.may_maintain(knowledge_base_id):
            raise Forbidden(f"this caller may read but not change {what}: it needs the "
                            "maintainer role on its knowledge base (and a token that is not "
                            "read-only)")


OPERATOR = Caller(label="local operator", readable=frozenset(), writable=frozenset(),
                  everything=True, admin=True)


def caller_for_secret(secret: str, *, config: Config) -> Caller | None:
    """The caller a bearer secret stands for, or None for an unknown, revoked or malformed
    one. Compared in constant time."""
    if config.rag_api_token and hmac.compare_digest(secret.encode(),
                                                     config.rag_api_token.encode()):
        return Caller(label="RAG_API_TOKEN", readable=frozenset(), writable=frozenset(),
                      everything=True, kind="token", admin=True)
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    digest = token_digest(secret)
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TOKEN_LOOKUP, [digest])
        row = cursor.fetchone()
        if row is None or not hmac.compare_digest(row[1], digest):
            return None
        token_id, _, user_id, username, superuser, read_only, narrowed, bases = row
        cursor.execute(sql.TOKEN_TOUCH, [token_id, LAST_USED_RESOLUTION_SECONDS])
        readable, researchable, writable = _grants(cursor, user_id)
    if superuser:
        readable = set(kb_ids_all())
        researchable = writable = set(readable)
    if narrowed:
        readable &= set(bases)
        researchable &= set(bases)
        writable &= set(bases)
    if read_only:
        researchable = researchable | writable
        writable = set()
    return Caller(label=f"token {token_id} of {username}", readable=frozenset(readable),
                  writable=frozenset(writable), user_id=user_id, token_id=token_id,
                  kind="token", username=username,
                  admin=superuser and not narrowed and not read_only, read_only=read_only,
                  researchable=frozenset(researchable))


def caller_for_user(user: AbstractUser) -> Caller:
    """The caller a signed-in person of the workbench stands for: a superuser reads and
    maintains everything; anyone else exactly their grants (none: nothing)."""
    username = user.get_username()
    label = f"user {username}"
    if not user.is_active:
        return Caller(label=label, readable=frozenset(), writable=frozenset(), user_id=user.pk,
                      kind="user", username=username)
    if user.is_superuser:
        return Caller(label=label, readable=frozenset(), writable=frozenset(), everything=True,
                      user_id=user.pk, kind="user", username=username, admin=True)
    with db_errors_translated(), connection.cursor() as cursor:
        readable, researchable, writable = _grants(cursor, user.pk)
    return Caller(label=label, readable=frozenset(readable), writable=frozenset(writable),
                  user_id=user.pk, kind="user", username=username,
                  researchable=frozenset(researchable))


def _grants(cursor: CursorWrapper, user_id: int) -> tuple[set[int], set[int], set[int]]:
    """(readable, researchable, writable) knowledge base ids of a user's grants: a researcher
    also studies, a maintainer also studies and writes."""
    cursor.execute(sql.USER_GRANTS, [user_id])
    grants = cursor.fetchall()
    return ({base for base, _ in grants},
            {base for base, role in grants if role in (Grant.RESEARCHER, Grant.MAINTAINER)},
            {base for base, role in grants if role == Grant.MAINTAINER})


def access_control_on(*, config: Config) -> bool:
    """True once RAG_API_TOKEN is set or any token is issued (and not revoked)."""
    if config.rag_api_token:
        return True
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TOKENS_ACTIVE_EXIST)
        return bool(cursor.fetchone()[0])


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def kb_ids_by_slug(cursor: CursorWrapper, slugs: list[str]) -> dict[str, int]:
    """slug -> id of those of `slugs` that exist."""
    if not slugs:
        return {}
    cursor.execute(sql.KB_IDS_BY_SLUG, [list(slugs)])
    return dict(cursor.fetchall())


def scope_all() -> Scope:
    """Every knowledge base, for the local operator's tools (CLI, eval, benchmarks)."""
    return OPERATOR.scope()


def kb_ids_all() -> tuple[int, ...]:
    """Every knowledge base's id: what a caller that may read everything reads now."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.KB_IDS)
        return tuple(row[0] for row in cursor.fetchall())
