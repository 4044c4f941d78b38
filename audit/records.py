"""Writing the audit log: `audit_record` adds one entry, in the caller's transaction, for one
action. The services that change something call it once, where the change is made (never in a
job the action queued, so an action is one entry however many jobs or rows it touches).

Everything an entry holds is bounded: names and ids are cut to `TEXT_MAX` characters, strings
inside `changes` to `VALUE_MAX`, and `changes` as a whole to `CHANGES_MAX` bytes of JSON (past
that, only its keys are kept). Lone surrogates become U+FFFD. No secret is ever passed in.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from audit import sql
from audit.context import Actor, actor_of, audit_context
from core.config import get_config
from core.db import db_errors_translated
from core.errors import InvalidRequest

TEXT_MAX = 200
VALUE_MAX = 500
CHANGES_MAX = 16 * 1024
LIST_MAX = 100
DEPTH_MAX = 4
# One entry in this many also removes those past their retention: no scheduler needed.
PRUNE_EVERY = 100
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# As the table's CHECK: lower-case dotted words (knowledge_base.update).
ACTION = re.compile(r"[a-z_]+(\.[a-z_]+)+")


@dataclass(frozen=True)
class AuditEvent:
    """One action: `action` dotted (`grant.create`), the object it acted on, and a summary of
    what changed (`{"role": {"before": "reader", "after": "maintainer"}}`, counts, names)."""

    action: str
    object_type: str = ""
    object_id: str | int | None = None
    object_name: str = ""
    changes: Mapping[str, Any] = field(default_factory=dict)


def audit_record(event: AuditEvent, *, actor: Actor | None = None) -> int:
    """Add one entry for `event`, by `actor` (default: the current request's or command's),
    in the current transaction; returns its id."""
    if not ACTION.fullmatch(event.action):
        raise ValueError(f"an audit action is dotted lower-case words, not {event.action!r}")
    context = audit_context()
    who = actor or actor_of(context)
    changes = changes_bounded(event.changes)
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.ENTRY_INSERT, [
            _text(who.label), who.kind, who.user_id, _text(who.username), who.token_id,
            context.source, event.action, _text(event.object_type),
            _text("" if event.object_id is None else str(event.object_id)),
            _text(event.object_name), json.dumps(changes, ensure_ascii=False),
            _text(context.request_id), _text(context.address)])
        entry_id = int(cursor.fetchone()[0])
        if random.randrange(PRUNE_EVERY) == 0:
            cursor.execute(sql.PRUNE, [get_config().rag_audit_retention_days])
    return entry_id


def audit_prune(*, days: int) -> int:
    """Remove the entries older than `days` (at least 1) through audit_logs_prune(); returns
    how many went."""
    if days < 1:
        raise InvalidRequest(f"the audit retention must be at least 1 day, got {days}",
                             details={"field": "days"})
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.PRUNE, [days])
        return int(cursor.fetchone()[0])


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """`{name: {"before": b, "after": a}}` for each name whose value differs."""
    return {name: {"before": before.get(name), "after": after.get(name)}
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)}


def changes_bounded(changes: Mapping[str, Any]) -> dict[str, Any]:
    """`changes` made JSON-safe and small (see the module's bounds)."""
    bounded = _value(dict(changes), depth=0)
    if len(json.dumps(bounded, ensure_ascii=False).encode()) <= CHANGES_MAX:
        return bounded
    return {"truncated": True, "keys": [_text(str(key)) for key in list(changes)[:LIST_MAX]]}


def _value(value: Any, *, depth: int) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        if depth >= DEPTH_MAX:
            return "…"
        return {_text(str(key)): _value(item, depth=depth + 1)
                for key, item in list(value.items())[:LIST_MAX]}
    if isinstance(value, list | tuple | set | frozenset):
        if depth >= DEPTH_MAX:
            return "…"
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else list(value)
        return [_value(item, depth=depth + 1) for item in items[:LIST_MAX]]
    return _text(str(value), limit=VALUE_MAX)


def _text(value: str | None, *, limit: int = TEXT_MAX) -> str | None:
    if value is None:
        return None
    clean = LONE_SURROGATE.sub("\ufffd", value).replace("\x00", "")
    return clean if len(clean) <= limit else clean[:limit - 1] + "…"
