"""`rag audit [--since WHEN] [--until WHEN] [--actor WHO] [--action ACTION] [--source SOURCE]
[--limit N] [--json]` — the audit log, newest first; `rag audit --prune [--days N]` removes the
entries past their retention (RAG_AUDIT_RETENTION_DAYS) through audit_logs_prune()."""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.core.management.base import CommandParser

from audit.context import SOURCES
from audit.records import audit_prune
from audit.selectors import LIMIT_MAX, AuditQuery, audit_entries
from core.commands import RagCommand
from core.config import get_config

RELATIVE = re.compile(r"(\d{1,6})([mhd])")
UNITS = {"m": "minutes", "h": "hours", "d": "days"}


class Command(RagCommand):
    help = "Read the audit log (who changed what, from where, when), or prune expired entries."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", type=moment, default=None, metavar="WHEN",
                            help="from this moment on: YYYY-MM-DD, an ISO time, or 30m/12h/7d "
                                 "ago")
        parser.add_argument("--until", type=moment, default=None, metavar="WHEN",
                            help="before this moment (same forms)")
        parser.add_argument("--actor", default=None, metavar="WHO",
                            help="an actor as shown (cli:alice, user:bob, token:3 (bob)) or a "
                                 "user name")
        parser.add_argument("--action", default=None,
                            help="an action (grant.create) or its first parts (grant)")
        parser.add_argument("--source", choices=SOURCES, default=None)
        parser.add_argument("--limit", type=int, default=100,
                            help=f"entries at most (1–{LIMIT_MAX}, default 100)")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--prune", action="store_true",
                            help="remove the entries older than the retention, then stop")
        parser.add_argument("--days", type=int, default=None,
                            help="with --prune: the retention (default "
                                 "RAG_AUDIT_RETENTION_DAYS)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["prune"]:
            days = options["days"] or get_config().rag_audit_retention_days
            removed = audit_prune(days=days)
            self.stdout.write(f"removed {removed} audit entries older than {days} days")
            return
        entries = audit_entries(AuditQuery(
            since=options["since"], until=options["until"], actor=options["actor"],
            action=options["action"], source=options["source"], limit=options["limit"]))
        if options["json"]:
            self.write_json([{**entry, "created_at": entry["created_at"].isoformat()}
                             for entry in entries])
            return
        if not entries:
            self.stdout.write("no audit entries match")
            return
        for entry in entries:
            target = " ".join(part for part in (entry["object_type"], entry["object_id"],
                                                entry["object_name"] and
                                                f"«{entry['object_name']}»") if part)
            changes = json.dumps(entry["changes"], ensure_ascii=False) if entry["changes"] else ""
            self.stdout.write(f"{entry['created_at']:%Y-%m-%d %H:%M:%S} #{entry['id']} "
                              f"{entry['source']:<9} {entry['actor']:<20} {entry['action']:<24} "
                              f"{target} {changes}".rstrip())


def moment(text: str) -> datetime:
    """YYYY-MM-DD (midnight UTC), an ISO date and time (UTC when it names no zone), or an age
    such as 30m, 12h or 7d."""
    relative = RELATIVE.fullmatch(text.strip())
    if relative:
        amount, unit = relative.groups()
        return datetime.now(UTC) - timedelta(**{UNITS[unit]: int(amount)})
    try:
        if len(text.strip()) == 10:
            day = date.fromisoformat(text.strip())
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD), an ISO time or "
                                         "an age such as 30m, 12h or 7d") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
