"""The worker in this process: how a handler's outcome is recorded, heartbeats while it runs,
cancellation reaching a running handler, and worker threads racing on many jobs."""

from __future__ import annotations

import threading
import time
from collections import Counter
from uuid import uuid4

import pytest
from django.db import connection

from jobs import worker as worker_module
from jobs.queue import (
    ClaimedJob,
    job_cancel,
    job_claim,
    job_enqueue,
    job_get,
    jobs_list,
)
from jobs.worker import JobContext, JobPermanentError, LeaseLost, Worker
from tests.jobs.handlers import TEST_HANDLERS
from tests.jobs.support import retry_make_due


def worker_with(**handlers) -> Worker:
    return Worker(handlers=handlers, poll_seconds=0.02)


def closing_connection(function):
    """`function` for another thread, which closes that thread's own database connection."""

    def run() -> None:
        try:
            function()
        finally:
            connection.close()

    return run


def wait_for(condition, *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_progress_reports_are_written_on_a_new_stage_or_after_a_pause(monkeypatch):
    writes = []
    monkeypatch.setattr(worker_module, "job_heartbeat",
                        lambda job, stage, progress: writes.append((stage, progress)) or True)
    job = ClaimedJob(id=1, type="t", resource="", payload={}, attempt=1, max_attempts=5,
                     lease_owner="w", lease_token=uuid4(), lease_seconds=30)
    context = JobContext(job)
    for page in range(100):
        context.progress("parse", page / 100)
    context.progress("embed", 0.5)
    assert writes == [("parse", 0.0), ("embed", 0.5)]
    time.sleep(worker_module.PROGRESS_WRITE_SECONDS)
    context.progress("embed", 0.6)
    assert writes[-1] == ("embed", 0.6)


@pytest.mark.django_db
def test_the_handler_result_is_stored():
    job_id = job_enqueue(type="count", payload={"n": 3})
    worker = worker_with(count=lambda context: {"double": context.payload["n"] * 2})
    assert worker.run_once() and not worker.run_once()
    job = job_get(job_id)
    assert (job.status, job.result, job.attempt) == ("succeeded", {"double": 6}, 1)


@pytest.mark.django_db
def test_an_unknown_job_type_fails_without_retrying():
    job_id = job_enqueue(type="nope", max_attempts=5)
    assert worker_with(known=lambda context: None).run_once()
    job = job_get(job_id)
    assert (job.status, job.attempt) == ("failed", 1)
    assert job.last_error == "unknown job type 'nope' (registered: known)"


@pytest.mark.django_db
def test_a_raising_handler_is_retried_with_type_and_message():
    job_id = job_enqueue(type="flaky", max_attempts=3)

    def flaky(context: JobContext) -> None:
        raise ValueError("disk full")

    worker_with(flaky=flaky).run_once()
    job = job_get(job_id)
    assert (job.status, job.attempt, job.last_error) == ("queued", 1, "ValueError: disk full")


@pytest.mark.django_db
def test_a_permanent_error_or_a_bad_result_fails_without_retrying():
    def bad_input(context: JobContext) -> None:
        raise JobPermanentError("the PDF is encrypted")

    permanent = job_enqueue(type="bad_input")
    not_json = job_enqueue(type="not_json")
    not_dict = job_enqueue(type="not_dict")
    worker = worker_with(bad_input=bad_input, not_json=lambda context: {"at": object()},
                         not_dict=lambda context: [1, 2])
    while worker.run_once():
        pass
    errors = {job.id: (job.status, job.attempt, job.last_error) for job in jobs_list()}
    assert errors[permanent] == ("failed", 1, "JobPermanentError: the PDF is encrypted")
    assert errors[not_json][:2] == ("failed", 1) and "not JSON" in errors[not_json][2]
    assert errors[not_dict] == ("failed", 1,
                                "JobPermanentError: a handler returns a dict or None, not list")


@pytest.mark.django_db
def test_a_poisoned_job_fails_after_max_attempts_with_its_error():
    runs = []

    def poisoned(context: JobContext) -> None:
        runs.append(context.attempt)
        raise ValueError(f"boom on attempt {context.attempt}")

    job_id = job_enqueue(type="poisoned", max_attempts=3)
    worker = worker_with(poisoned=poisoned)
    for _attempt in (1, 2, 3):
        assert worker.run_once()
        assert not worker.run_once()  # waiting out the backoff (or failed for good)
        retry_make_due(job_id)
    job = job_get(job_id)
    assert runs == [1, 2, 3]
    assert (job.status, job.attempt, job.last_error) == ("failed", 3, "ValueError: boom on "
                                                                      "attempt 3")
    assert not worker.run_once()


def test_heartbeats_keep_a_long_job_from_being_reclaimed(clean_tables):
    job_id = job_enqueue(type="slow")
    claims = []

    def slow(context: JobContext) -> dict:
        # Three lease lengths: without heartbeats another worker would take the job over.
        deadline = time.monotonic() + 1.8
        while time.monotonic() < deadline:
            claims.append(job_claim(owner="intruder", lease_seconds=0.6))
            time.sleep(0.1)
        return {"lost": context.lease_lost()}

    Worker(handlers={"slow": slow}, lease_seconds=0.6).run_once()
    job = job_get(job_id)
    assert (job.status, job.attempt, job.result) == ("succeeded", 1, {"lost": False})
    assert len(claims) > 10 and set(claims) == {None}


def test_progress_is_recorded_and_a_cancel_stops_the_handler(clean_tables):
    job_id = job_enqueue(type="long")
    seen = {}

    def long(context: JobContext) -> dict:
        try:
            for step in range(200):
                context.progress("embedding", step / 200)
                time.sleep(0.02)
        except LeaseLost:
            seen["lost_at"] = step
            raise
        return {"finished": True}

    thread = threading.Thread(target=closing_connection(Worker(handlers={"long": long}).run_once))
    thread.start()
    wait_for(lambda: job_get(job_id).progress > 0.05)
    running = job_get(job_id)
    assert (running.status, running.stage) == ("running", "embedding")
    job_cancel(job_id)
    thread.join(timeout=5)
    assert not thread.is_alive() and seen["lost_at"] < 150
    job = job_get(job_id)
    assert (job.status, job.result) == ("cancelled", {})


def test_worker_threads_racing_run_every_job_exactly_once(job_runs):
    ids = {job_enqueue(type="record") for _ in range(300)}
    workers = [Worker(handlers=TEST_HANDLERS, poll_seconds=0.02) for _ in range(2)]
    threads = [threading.Thread(target=worker.run, kwargs={"concurrency": 3, "until_idle": True})
               for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    runs = job_runs()
    assert Counter(job_id for job_id, _, _ in runs) == Counter(ids)  # each job ran exactly once
    assert len({runner for _, _, runner in runs}) > 1
    assert {job.status for job in jobs_list(limit=1000)} == {"succeeded"}
