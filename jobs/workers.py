"""Which job workers are alive: each worker thread says so while it waits for work, so that a
readiness probe can tell a deployment whose uploads would never be processed."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from core.db import db_errors_translated
from jobs import sql

# How often a waiting worker thread writes its row, and how old a row may be to count.
WORKER_BEAT_SECONDS = 5.0
WORKER_ALIVE_SECONDS = 30.0


@dataclass(frozen=True)
class WorkersAlive:
    waiting: int  # worker threads seen within WORKER_ALIVE_SECONDS
    busy: int  # running jobs whose lease is current

    @property
    def any(self) -> bool:
        return self.waiting + self.busy > 0


def worker_seen(*, owner: str) -> None:
    """Record that the worker thread `owner` is alive now."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.WORKER_SEEN, [owner])


def worker_gone(*, owner: str) -> None:
    """Remove the row of a worker thread that stops; old rows of dead workers with it."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.WORKER_GONE, [owner])
        cursor.execute(sql.WORKERS_STALE_DELETE)


def workers_alive(*, within_seconds: float = WORKER_ALIVE_SECONDS) -> WorkersAlive:
    """Worker threads seen lately and jobs being run now."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.WORKERS_ALIVE, {"within": within_seconds})
        row = cursor.fetchone()
    assert row is not None
    return WorkersAlive(waiting=row[0], busy=row[1])
