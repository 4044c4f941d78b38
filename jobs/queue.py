"""The background-jobs queue: enqueue, claim under a lease, heartbeat, complete, fail with
backoff, cancel, retry, and the reads the CLI and the API show.

Every statement runs on its own in Django's autocommit mode: no transaction is held between
them, so a handler running between claim and complete holds no lock on its job's row. A job
runs at least once; a worker that dies mid-job leaves it to be reclaimed when its lease expires,
so handlers must be idempotent.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import connection

from core.db import db_errors_translated
from core.errors import Conflict, InvalidRequest, NotFound
from jobs import sql

JOB_STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
# Retry backoff with "equal jitter": half the exponential delay is kept, half is random. The
# kept half spaces out retries of a job that fails at once (a full-jitter delay can be ~0); the
# random half spreads jobs that failed together (the database or an LLM went away), so they
# do not come back together. Attempt 1 waits 2.5–5 s, 2: 5–10 s, 3: 10–20 s, ... capped at
# 150–300 s from attempt 8 on.
BACKOFF_BASE_SECONDS = 5.0
BACKOFF_CAP_SECONDS = 300.0
JOBS_LIST_LIMIT = 50


@dataclass(frozen=True)
class ClaimedJob:
    """A job this worker holds the lease of: what its handler needs, and the lease itself."""

    id: int
    type: str
    resource: str
    payload: dict[str, Any]
    attempt: int  # 1 on the first run
    max_attempts: int
    lease_owner: str
    lease_token: UUID
    lease_seconds: float


@dataclass(frozen=True)
class JobRecord:
    """One row of background_jobs, as the CLI, the API and tests read it."""

    id: int
    type: str
    resource: str
    payload: dict[str, Any]
    status: str
    stage: str
    progress: float
    attempt: int
    max_attempts: int
    run_after: datetime
    lease_owner: str | None
    lease_until: datetime | None
    last_error: str | None
    result: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: timestamps as ISO 8601 strings."""
        return {name: value.isoformat() if isinstance(value, datetime) else value
                for name, value in self.__dict__.items()}


def job_enqueue(*, type: str, resource: str = "", payload: dict[str, Any] | None = None,
                max_attempts: int = 5, run_after: datetime | None = None) -> int:
    """Queue a job (due now, or at `run_after`); returns its id."""
    if not type:
        raise InvalidRequest("a job needs a type")
    if max_attempts < 1:
        raise InvalidRequest(f"max_attempts must be at least 1, not {max_attempts}")
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOB_ENQUEUE, [type, resource, json.dumps(payload or {}), max_attempts,
                                         run_after])
        return cursor.fetchone()[0]


def job_claim(*, owner: str, lease_seconds: float) -> ClaimedJob | None:
    """Lease the oldest due job (queued, or running under an expired lease) to `owner`; None
    when no job is due. Running jobs whose expired lease was their last attempt end failed."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOB_CLAIM, [owner, lease_seconds])
        row = cursor.fetchone()
    if row is None:
        return None
    job_id, job_type, resource, payload, attempt, max_attempts, token = row
    return ClaimedJob(id=job_id, type=job_type, resource=resource, payload=_json(payload),
                      attempt=attempt, max_attempts=max_attempts, lease_owner=owner,
                      lease_token=UUID(str(token)), lease_seconds=lease_seconds)


def job_heartbeat(job: ClaimedJob, *, stage: str | None = None,
                  progress: float | None = None) -> bool:
    """Extend the lease by `lease_seconds` from now, and record stage/progress (0..1) if
    given; False when the lease is no longer this worker's (reclaimed, cancelled, failed)."""
    if progress is not None:
        progress = min(1.0, max(0.0, float(progress)))
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOB_HEARTBEAT, [job.lease_seconds, stage, progress, job.id,
                                           job.lease_owner, job.lease_token])
        return cursor.fetchone() is not None


def job_complete(job: ClaimedJob, *, result: dict[str, Any] | None) -> bool:
    """Mark the job succeeded with its result; False (nothing written) when the lease is no
    longer this worker's."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOB_COMPLETE, [json.dumps(result or {}), job.id, job.lease_owner,
                                          job.lease_token])
        return cursor.fetchone() is not None


def job_release(job: ClaimedJob) -> bool:
    """Hand a running job back to the queue, its attempt not spent; False (nothing written)
    when the lease is no longer this worker's."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOB_RELEASE, [job.id, job.lease_owner, job.lease_token])
        return cursor.fetchone() is not None


def job_fail(job: ClaimedJob, *, error: str, retryable: bool = True) -> str | None:
    """Record a failed attempt: back to `queued` after the backoff when retryable with attempts
    left, else `failed`. Returns the new status, or None (nothing written) when the lease is no
    longer this worker's."""
    params: dict[str, Any] = {
        "retryable": retryable, "delay": job_backoff_seconds(attempt=job.attempt),
        "error": error, "id": job.id, "owner": job.lease_owner, "token": job.lease_token}
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOB_FAIL, params)
        row = cursor.fetchone()
    return row[0] if row else None


def job_backoff_seconds(*, attempt: int, rng: random.Random | None = None) -> float:
    """Delay before retrying after failed attempt `attempt` (1-based): equal jitter over
    BACKOFF_BASE_SECONDS * 2**(attempt-1), capped at BACKOFF_CAP_SECONDS."""
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** min(max(attempt, 1) - 1, 30))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def job_cancel(job_id: int) -> JobRecord:
    """Cancel a queued or running job (a running handler stops at its next progress report);
    cancelling a cancelled job changes nothing. Conflict for a finished job."""
    job, cancelled = _job_transition(sql.JOB_CANCEL, job_id)
    if not cancelled and job.status != "cancelled":
        raise Conflict(f"job {job_id} already {job.status}; only a queued or running job can be "
                       "cancelled", details={"id": job_id, "status": job.status})
    return job


def job_retry(job_id: int) -> JobRecord:
    """Queue a failed or cancelled job again, due now, with its whole attempt budget."""
    job, retried = _job_transition(sql.JOB_RETRY, job_id)
    if not retried:
        raise Conflict(f"job {job_id} is {job.status}; only a failed or cancelled job can be "
                       "retried", details={"id": job_id, "status": job.status})
    return job


def _job_transition(statement: str, job_id: int) -> tuple[JobRecord, bool]:
    """Run a status change that returns the job's columns: (the job, True) when it changed;
    else (the job as it is, False), read only then, to tell NotFound from a Conflict."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(statement, [job_id])
        row = cursor.fetchone()
    if row is None:
        return job_get(job_id), False
    return _record(row), True


def job_get(job_id: int) -> JobRecord:
    """One job; NotFound when there is none with this id."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOB_GET, [job_id])
        row = cursor.fetchone()
    if row is None:
        raise NotFound(f"no background job has id {job_id}; see `rag jobs list`",
                       details={"id": job_id})
    return _record(row)


def jobs_list(*, status: str | None = None, limit: int = JOBS_LIST_LIMIT) -> list[JobRecord]:
    """The newest jobs first, optionally of one status."""
    if status is not None and status not in JOB_STATUSES:
        raise InvalidRequest(f"unknown job status {status!r}; one of {', '.join(JOB_STATUSES)}")
    if limit < 1:
        raise InvalidRequest(f"limit must be at least 1, not {limit}")
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.JOBS_LIST, {"status": status, "limit": limit})
        return [_record(row) for row in cursor.fetchall()]


def _json(value: Any) -> dict[str, Any]:
    # Django's psycopg setup loads jsonb as text (its JSONField decodes it itself).
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def _record(row: tuple) -> JobRecord:
    values = dict(zip(JobRecord.__dataclass_fields__, row, strict=True))
    values["payload"], values["result"] = _json(values["payload"]), _json(values["result"])
    return JobRecord(**values)
