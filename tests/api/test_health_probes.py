"""GET /health/live and GET /health/ready: the probes an orchestrator polls, beside /health."""

from __future__ import annotations

import pytest
from django.db import connection

from jobs.queue import job_claim, job_enqueue
from jobs.worker import Worker
from jobs.workers import worker_seen
from tests.api.http import error_of


@pytest.fixture(autouse=True)
def no_workers(db):
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM job_workers")
        cursor.execute("DELETE FROM background_jobs")


def test_live_answers_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/health/live")
    assert response.status_code == 200 and response.json() == {"status": "alive"}


def test_ready_is_503_naming_the_missing_worker(client, sample_index):
    response = client.get("/health/ready")
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "service_not_ready" and "worker missing" in error["message"]
    assert error["details"]["checks"] == {"database": "ok", "schema": "ok", "pgvector": "ok",
                                          "embedding_config": "ok", "worker": "missing"}


def test_ready_once_a_worker_waits_for_work(client, sample_index):
    worker_seen(owner="host:1/jobs-1")
    response = client.get("/health/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {
        "database": "ok", "schema": "ok", "pgvector": "ok", "embedding_config": "ok",
        "worker": "ok"}}


def test_a_worker_busy_with_a_long_job_counts_by_its_lease(client, sample_index):
    job_enqueue(type="document_ingest", resource="document:1")
    assert job_claim(owner="host:1/jobs-1", lease_seconds=30) is not None
    assert client.get("/health/ready").status_code == 200


def test_a_worker_not_seen_for_a_while_does_not_count(client, sample_index):
    worker_seen(owner="host:1/jobs-1")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE job_workers SET seen_at = now() - interval '5 minutes'")
    assert client.get("/health/ready").status_code == 503


def test_a_worker_writes_its_row_while_it_runs_and_removes_it_when_it_stops(clean_tables):
    # The worker's threads have connections of their own: the rows must be committed.
    seen = []
    worker = Worker(handlers={"probe": lambda context: seen.append(_rows()) or {}},
                    poll_seconds=0.05)
    job_enqueue(type="probe")
    worker.run(until_idle=True)
    assert seen == [1]  # its own row, while it ran the job
    assert _rows() == 0


def _rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM job_workers")
        return cursor.fetchone()[0]
