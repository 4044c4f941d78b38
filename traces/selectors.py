"""What the traces say: p50/p95 per stage and tokens per day (`rag traces stats`), and one
trace as recorded (`rag traces show`)."""

from __future__ import annotations

import uuid
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
                "answer")


def traces_stats(*, days: int) -> dict[str, Any]:
    """p50/p95 per stage and calls per operation over the last `days`, and tokens per day."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TRACES_STAGE_STATS, [days])
        stages = [{"operation": operation, "stage": stage, "calls": calls,
                   "p50_ms": round(p50, 2), "p95_ms": round(p95, 2)}
                  for operation, stage, calls, p50, p95 in cursor.fetchall()]
        cursor.execute(sql.TRACES_TOKENS_PER_DAY, [days])
        tokens = [{"day": day.isoformat(), "calls": calls, "prompt_tokens": prompt,
                   "completion_tokens": completion}
                  for day, calls, prompt, completion in cursor.fetchall()]
    return {"days": days, "stages": stages, "tokens_per_day": tokens}


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
    return {**row, "id": str(row["id"]), "created_at": row["created_at"].isoformat()}
