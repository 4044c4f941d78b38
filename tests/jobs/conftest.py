"""Fixtures of the background-jobs tests."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.jobs.handlers import OUTPUTS_CREATE, RUNS_CREATE, TABLES_DROP


@pytest.fixture
def job_runs(clean_tables):
    """The tables the test handlers write to, committed (workers on other connections see
    them); returns a function giving (job_id, attempt, runner) of every recorded run."""
    with connection.cursor() as cursor:
        cursor.execute(RUNS_CREATE)
        cursor.execute(OUTPUTS_CREATE)

    def runs() -> list[tuple[int, int, str]]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT job_id, attempt, runner FROM test_job_runs ORDER BY job_id, "
                           "attempt")
            return cursor.fetchall()

    yield runs
    with connection.cursor() as cursor:
        cursor.execute(TABLES_DROP)

