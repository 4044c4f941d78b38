"""Tokens and cost of the traced calls since a time, with their knowledge bases by slug: what
`rag traces stats` prints and the workbench's status page shows (the traces app adds them up in
SQL and knows bases by id only, as it may not import knowledge)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.utils import timezone

from knowledge.bases import kb_list
from traces.selectors import traces_stats


def usage_since(*, days: int, since: date | None = None) -> datetime:
    """The start of the totals: midnight (UTC) of `since` when given, else `days` ago."""
    if since is not None:
        return datetime.combine(since, time.min, tzinfo=UTC)
    return timezone.now() - timedelta(days=days)


def usage_report(*, since: datetime) -> dict[str, Any]:
    """traces_stats since `since`, each knowledge base's total named by its slug too (`#id` for
    a base deleted since)."""
    report = traces_stats(since=since)
    ids = [row["knowledge_base_id"] for row in report["tokens_per_knowledge_base"]]
    slugs = {base.id: base.slug for base in kb_list(ids=ids)} if ids else {}
    for row in report["tokens_per_knowledge_base"]:
        row["knowledge_base"] = slugs.get(row["knowledge_base_id"],
                                          f"#{row['knowledge_base_id']}")
    return report


def costs_shown(costs: list[dict[str, Any]]) -> str:
    """A total's costs as one line of text ("0.0123 USD"), "-" when none was priced."""
    return " + ".join(f"{cost['amount']:.4f} {cost['currency']}" for cost in costs) or "-"
