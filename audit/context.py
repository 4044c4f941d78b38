"""Who acts, from where, in which request: what every audit entry of the current request or
command carries, kept in a context variable so that the services that record an action need no
caller passed down for it.

HTTP requests set it in audit/middleware.py (the source from the path: /admin/, /workbench/,
else the API; the signed-in user as the actor until the API's bearer authentication names the
caller, access/auth.py). Outside a request — a `rag` command — the source is `cli` and the actor
`cli:<os user>`, with one request id per process.
"""

from __future__ import annotations

import contextvars
import getpass
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

SOURCES = ("api", "cli", "workbench", "admin")


@dataclass(frozen=True)
class Actor:
    """Who: `kind` user, token, cli, operator (open access) or anonymous; `label` as shown."""

    kind: str
    label: str
    user_id: int | None = None
    username: str | None = None
    token_id: int | None = None


@dataclass(frozen=True)
class AuditContext:
    source: str
    request_id: str
    actor: Actor | None = None  # set once known; else `user`'s, else anonymous
    user: Any = None  # the request's user (lazy: read only when an entry is written)
    address: str | None = None


_current: contextvars.ContextVar[AuditContext | None] = contextvars.ContextVar(
    "audit_context", default=None)
_CLI_REQUEST_ID = f"cli-{uuid.uuid4().hex}"


def cli_actor() -> Actor:
    """`cli:<os user>`: the account that ran the command (`unknown` when it has no name)."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = "unknown"
    return Actor(kind="cli", label=f"cli:{name[:100]}")


def audit_context() -> AuditContext:
    """The context of the current request, or a command's when no request is under way."""
    current = _current.get()
    if current is not None:
        return current
    return AuditContext(source="cli", request_id=_CLI_REQUEST_ID, actor=cli_actor())


def actor_of(context: AuditContext) -> Actor:
    """The context's actor: as named, else its signed-in user, else anonymous."""
    if context.actor is not None:
        return context.actor
    user = context.user
    if user is not None and getattr(user, "is_authenticated", False):
        username = user.get_username()
        return Actor(kind="user", label=f"user:{username}", user_id=user.pk, username=username)
    return Actor(kind="anonymous", label="anonymous")


@contextmanager
def audit_scope(context: AuditContext) -> Iterator[AuditContext]:
    """Run a request (or a test) under `context`; the previous one comes back afterwards."""
    if context.source not in SOURCES:
        raise ValueError(f"audit source must be one of {SOURCES}, got {context.source!r}")
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def audit_actor_set(actor: Actor) -> None:
    """Name the actor of the current request (the API's authentication, once it resolved the
    caller). Outside a request it changes nothing: a command's actor is its OS user."""
    current = _current.get()
    if current is not None:
        _current.set(replace(current, actor=actor))


def request_id_new() -> str:
    return uuid.uuid4().hex
