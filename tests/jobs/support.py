"""Moving a job through time in a test, instead of sleeping: expire a lease, make a retry due;
and a job held on a worker's thread until the test lets it go."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from django.db import connection

from jobs.worker import Worker


@dataclass
class HeldJob:
    """A job running on `worker`'s thread, held inside a step until `release` is set."""

    worker: Worker
    thread: threading.Thread
    release: threading.Event

    def finish(self) -> float:
        """Let the held step return; seconds until the worker's thread has ended."""
        started = time.monotonic()
        self.release.set()
        self.thread.join(30)
        assert not self.thread.is_alive()
        return time.monotonic() - started


def sql_run(statement: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])


def lease_expire(job_id: int) -> None:
    sql_run("UPDATE background_jobs SET lease_until = now() - interval '1 second' WHERE id = %s",
            [job_id])


def retry_make_due(job_id: int) -> None:
    sql_run("UPDATE background_jobs SET run_after = now() WHERE id = %s", [job_id])
