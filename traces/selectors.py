"""What the traces say: p50/p95 per stage and tokens per day (`rag traces stats`)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from core.db import db_errors_translated
from traces import sql


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
