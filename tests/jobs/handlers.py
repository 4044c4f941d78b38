"""Job handlers of the tests, shared by in-process workers and worker_process.py. They record
every run in test_job_runs (created per test by the `job_runs` fixture), so a test can count
how often each job ran and by whom."""

from __future__ import annotations

import os
import threading
import time

from django.db import connection

from jobs.worker import JobContext

RUNS_CREATE = """
CREATE TABLE IF NOT EXISTS test_job_runs (
  job_id BIGINT NOT NULL, attempt INTEGER NOT NULL, runner TEXT NOT NULL)
"""
# What an idempotent handler writes: at most one row per job, however often the job runs.
OUTPUTS_CREATE = """
CREATE TABLE IF NOT EXISTS test_job_outputs (job_id BIGINT PRIMARY KEY, runner TEXT NOT NULL)
"""
TABLES_DROP = "DROP TABLE IF EXISTS test_job_runs, test_job_outputs"


def runner() -> str:
    """`pid/thread`: which process and thread ran a job."""
    return f"{os.getpid()}/{threading.current_thread().name}"


def run_record(context: JobContext) -> None:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO test_job_runs (job_id, attempt, runner) VALUES (%s, %s, %s)",
                       [context.id, context.attempt, runner()])


def record(context: JobContext) -> dict:
    run_record(context)
    time.sleep(context.payload.get("sleep", 0))
    return {"runner": runner()}


def slow_idempotent(context: JobContext) -> dict:
    """Writes its output, then (first attempt only) sleeps: the test kills it meanwhile."""
    run_record(context)
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO test_job_outputs (job_id, runner) VALUES (%s, %s) "
                       "ON CONFLICT (job_id) DO NOTHING", [context.id, runner()])
    if context.attempt == 1:
        time.sleep(context.payload["first_attempt_sleep"])
    return {"attempt": context.attempt}


def poisoned(context: JobContext) -> None:
    run_record(context)
    raise ValueError(f"boom on attempt {context.attempt}")


TEST_HANDLERS = {"record": record, "slow_idempotent": slow_idempotent, "poisoned": poisoned}
