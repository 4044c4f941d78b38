"""Moving a job through time in a test, instead of sleeping: expire a lease, make a retry due."""

from __future__ import annotations

from django.db import connection


def sql_run(statement: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])


def lease_expire(job_id: int) -> None:
    sql_run("UPDATE background_jobs SET lease_until = now() - interval '1 second' WHERE id = %s",
            [job_id])


def retry_make_due(job_id: int) -> None:
    sql_run("UPDATE background_jobs SET run_after = now() WHERE id = %s", [job_id])
