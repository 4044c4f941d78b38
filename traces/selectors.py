"""What the traces say: p50/p95 per stage, and tokens and cost per day, base and model
(`rag traces stats`, the status page), and one trace as recorded (`rag traces show`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import connection

from core.db import db_errors_translated
from core.errors import NotFound
from traces import sql
from traces.models import Trace

# The recorded fields of a trace, in the order `rag traces show` prints them.
TRACE_FIELDS = ("id", "created_at", "operation", "channel", "caller", "user_id", "token_id",
                "knowledge_base_ids", "status", "error_code", "mode", "parameters",
                "timings_ms", "embedding_model", "llm_model", "prompt_tokens",
                "completion_tokens", "token_source", "prompt_version", "citations", "question",
                "answer", "cost_amount", "cost_currency")


def traces_stats(*, since: datetime) -> dict[str, Any]:
    """p50/p95 per stage and calls per operation since `since`, and calls, tokens and cost per
    day, per knowledge base (by id) and per model."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TRACES_STAGE_STATS, [since])
        stages = [{"operation": operation, "stage": stage, "calls": calls,
                   "p50_ms": round(p50, 2), "p95_ms": round(p95, 2)}
                  for operation, stage, calls, p50, p95 in cursor.fetchall()]
        totals = {}
        for name, query in (("day", sql.TRACES_TOKENS_PER_DAY),
                            ("knowledge_base_id", sql.TRACES_TOKENS_PER_BASE),
                            ("model", sql.TRACES_TOKENS_PER_MODEL)):
            cursor.execute(query, [since])
            totals[name] = _totals_folded(name, cursor.fetchall())
    for row in totals["day"]:
        row["day"] = row["day"].isoformat()
    return {"since": since.isoformat(), "stages": stages, "tokens_per_day": totals["day"],
            "tokens_per_knowledge_base": totals["knowledge_base_id"],
            "tokens_per_model": totals["model"]}


def _totals_folded(name: str, rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """One total per key from its rows per currency: `costs` holds one {amount, currency} per
    currency priced, and `unpriced_calls` counts the calls whose cost is unknown."""
    folded: dict[Any, dict[str, Any]] = {}
    for key, currency, calls, prompt, completion, amount in rows:
        total = folded.setdefault(key, {name: key, "calls": 0, "prompt_tokens": 0,
                                        "completion_tokens": 0, "costs": [],
                                        "unpriced_calls": 0})
        total["calls"] += calls
        total["prompt_tokens"] += prompt
        total["completion_tokens"] += completion
        if currency is None:
            total["unpriced_calls"] += calls
        else:
            total["costs"].append({"amount": round(amount, 8), "currency": currency})
    return list(folded.values())


def trace_get(*, trace_id: str) -> dict[str, Any]:
    """Every recorded field of one trace (ids and times as text); NotFound for an id that names
    no trace, a malformed one included."""
    try:
        key = uuid.UUID(trace_id)
    except ValueError:
        raise NotFound(f"trace not found: {trace_id}", details={"trace_id": trace_id}) from None
    with db_errors_translated():
        row = Trace.objects.filter(id=key).values(*TRACE_FIELDS).first()
    if row is None:
        raise NotFound(f"trace not found: {trace_id}", details={"trace_id": trace_id})
    amount, currency = row.pop("cost_amount"), row.pop("cost_currency")
    return {**row, "id": str(row["id"]), "created_at": row["created_at"].isoformat(),
            "cost": {"amount": amount, "currency": currency} if currency is not None else None}
