"""The queue's statements: claim under a lease, heartbeat, complete, fail with backoff, cancel,
retry, and a stale worker that can no longer touch the job it lost.

These run inside the test's transaction (rolled back), where now() stands still: a lease is
expired and a retry made due by moving the row's timestamps, never by sleeping."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from core.errors import Conflict, InvalidRequest, NotFound
from jobs.queue import (
    BACKOFF_CAP_SECONDS,
    job_backoff_seconds,
    job_cancel,
    job_claim,
    job_complete,
    job_enqueue,
    job_fail,
    job_get,
    job_heartbeat,
    job_retry,
    jobs_list,
)
from jobs.worker import JobContext, LeaseLost
from tests.jobs.support import lease_expire, retry_make_due

pytestmark = pytest.mark.django_db


def seconds_from_now(value) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extract(epoch FROM %s::timestamptz - now())", [value])
        return float(cursor.fetchone()[0])


def test_claim_leases_the_oldest_due_job_and_counts_the_attempt():
    later = job_enqueue(type="t", run_after=timezone.now() + timedelta(hours=1))
    first = job_enqueue(type="t", resource="document:1", payload={"path": "a.md"})
    second = job_enqueue(type="t")
    job = job_claim(owner="w1", lease_seconds=30)
    assert (job.id, job.resource, job.payload, job.attempt, job.lease_owner) == (
        first, "document:1", {"path": "a.md"}, 1, "w1")
    stored = job_get(first)
    assert stored.status == "running" and stored.lease_owner == "w1"
    assert 29 < seconds_from_now(stored.lease_until) <= 30
    assert stored.started_at is not None
    assert job_claim(owner="w2", lease_seconds=30).id == second
    assert job_claim(owner="w3", lease_seconds=30) is None  # `later` is not due
    assert job_get(later).status == "queued"


def test_complete_stores_the_result_and_ends_the_lease():
    job_id = job_enqueue(type="t")
    job = job_claim(owner="w", lease_seconds=30)
    assert job_heartbeat(job, stage="embed", progress=0.4)
    assert (job_get(job_id).stage, job_get(job_id).progress) == ("embed", pytest.approx(0.4))
    assert job_complete(job, result={"chunks": 12})
    done = job_get(job_id)
    assert (done.status, done.result, done.progress, done.lease_until) == (
        "succeeded", {"chunks": 12}, 1.0, None)
    assert done.finished_at is not None
    assert not job_complete(job, result={"chunks": 99})  # the lease ended with the first
    assert job_get(job_id).result == {"chunks": 12}


def test_a_retryable_failure_requeues_after_the_backoff_and_keeps_the_error():
    job_id = job_enqueue(type="t", max_attempts=3)
    job = job_claim(owner="w", lease_seconds=30)
    assert job_fail(job, error="ValueError: boom") == "queued"
    failed = job_get(job_id)
    assert (failed.status, failed.attempt, failed.last_error, failed.finished_at) == (
        "queued", 1, "ValueError: boom", None)
    assert 2.5 <= seconds_from_now(failed.run_after) <= 5  # attempt 1: 2.5–5 s
    assert job_claim(owner="w", lease_seconds=30) is None  # not due during the backoff
    retry_make_due(job_id)
    assert job_claim(owner="w", lease_seconds=30).attempt == 2


def test_the_last_attempt_or_a_permanent_error_fails_for_good():
    last = job_enqueue(type="t", max_attempts=1)
    assert job_fail(job_claim(owner="w", lease_seconds=30), error="E: last") == "failed"
    permanent = job_enqueue(type="t", max_attempts=5)
    assert job_fail(job_claim(owner="w", lease_seconds=30), error="E: bad input",
                    retryable=False) == "failed"
    for job_id, error in ((last, "E: last"), (permanent, "E: bad input")):
        job = job_get(job_id)
        assert (job.status, job.attempt, job.last_error) == ("failed", 1, error)
        assert job.finished_at is not None
    assert job_claim(owner="w", lease_seconds=30) is None


@pytest.mark.parametrize(("attempt", "low", "high"), [
    (1, 2.5, 5), (2, 5, 10), (3, 10, 20), (6, 80, 160), (7, 150, 300), (40, 150, 300)])
def test_backoff_doubles_per_attempt_with_equal_jitter_up_to_the_cap(attempt, low, high):
    class Extremes(random.Random):
        def __init__(self, pick):
            super().__init__()
            self.pick = pick

        def uniform(self, a, b):
            return a if self.pick == "low" else b

    assert job_backoff_seconds(attempt=attempt, rng=Extremes("low")) == low
    assert job_backoff_seconds(attempt=attempt, rng=Extremes("high")) == high
    delays = [job_backoff_seconds(attempt=attempt, rng=random.Random(seed)) for seed in range(50)]
    assert all(low <= delay <= high <= BACKOFF_CAP_SECONDS for delay in delays)
    assert len(set(delays)) == 50  # jittered: jobs that failed together come back apart


def test_a_stale_worker_cannot_touch_the_job_once_reclaimed():
    job_id = job_enqueue(type="t", max_attempts=3)
    stale = job_claim(owner="old", lease_seconds=30)
    lease_expire(job_id)
    fresh = job_claim(owner="new", lease_seconds=30)
    assert (fresh.id, fresh.attempt) == (job_id, 2)
    assert fresh.lease_token != stale.lease_token
    assert "lease of old expired on attempt 1" in job_get(job_id).last_error

    assert not job_heartbeat(stale, stage="stale", progress=0.9)
    assert not job_complete(stale, result={"by": "old"})
    assert job_fail(stale, error="E: old") is None
    with pytest.raises(LeaseLost):
        JobContext(stale).progress("stale", 0.9)
    current = job_get(job_id)
    assert (current.status, current.lease_owner, current.stage, current.attempt) == (
        "running", "new", "", 2)

    assert job_complete(fresh, result={"by": "new"})
    assert job_get(job_id).result == {"by": "new"}


def test_a_job_whose_last_attempt_lost_its_lease_ends_failed_not_rerun():
    job_id = job_enqueue(type="t", max_attempts=2)
    job_claim(owner="w1", lease_seconds=30)
    lease_expire(job_id)
    assert job_claim(owner="w2", lease_seconds=30).attempt == 2
    lease_expire(job_id)
    assert job_claim(owner="w3", lease_seconds=30) is None
    job = job_get(job_id)
    assert (job.status, job.attempt) == ("failed", 2)
    assert "lease of w2 expired on attempt 2 of 2" in job.last_error
    assert job.finished_at is not None


def test_queued_and_expired_jobs_are_claimed_oldest_first():
    first = job_enqueue(type="t", run_after=timezone.now() - timedelta(minutes=2))
    second = job_enqueue(type="t", run_after=timezone.now() - timedelta(minutes=1))
    assert job_claim(owner="w", lease_seconds=30).id == first
    lease_expire(first)
    third = job_enqueue(type="t")
    claimed = [job_claim(owner="w", lease_seconds=30) for _ in range(3)]
    assert [(job.id, job.attempt) for job in claimed] == [(first, 2), (second, 1), (third, 1)]


def test_a_live_lease_is_not_reclaimed():
    job_enqueue(type="t")
    job = job_claim(owner="w1", lease_seconds=30)
    assert job_claim(owner="w2", lease_seconds=30) is None
    assert job_heartbeat(job)


def test_cancel_ends_a_queued_or_running_job_and_its_lease():
    queued = job_enqueue(type="t")
    running = job_enqueue(type="t")
    assert job_cancel(queued).status == "cancelled"
    job = job_claim(owner="w", lease_seconds=30)
    assert job.id == running
    assert job_cancel(running).status == "cancelled"
    assert job_cancel(running).status == "cancelled"  # again: nothing changes
    assert not job_heartbeat(job) and not job_complete(job, result={})
    assert job_fail(job, error="E") is None
    assert job_get(running).status == "cancelled"
    assert job_claim(owner="w", lease_seconds=30) is None


def test_a_finished_job_cannot_be_cancelled():
    job_id = job_enqueue(type="t")
    job_complete(job_claim(owner="w", lease_seconds=30), result={})
    with pytest.raises(Conflict, match="already succeeded"):
        job_cancel(job_id)


def test_retry_requeues_a_failed_job_with_its_whole_attempt_budget():
    job_id = job_enqueue(type="t", max_attempts=1)
    job_fail(job_claim(owner="w", lease_seconds=30), error="E: once")
    retried = job_retry(job_id)
    assert (retried.status, retried.attempt, retried.max_attempts, retried.last_error) == (
        "queued", 0, 1, "E: once")
    assert retried.finished_at is None and retried.started_at is None
    assert job_claim(owner="w", lease_seconds=30).attempt == 1
    with pytest.raises(Conflict, match="only a failed or cancelled job"):
        job_retry(job_id)


def test_a_cancelled_job_can_be_retried():
    job_id = job_enqueue(type="t")
    job_cancel(job_id)
    assert job_retry(job_id).status == "queued"


def test_unknown_ids_are_not_found():
    for call in (job_get, job_retry, job_cancel):
        with pytest.raises(NotFound, match="no background job has id 999"):
            call(999)


def test_list_is_newest_first_and_filters_by_status():
    ids = [job_enqueue(type="t", resource=f"r{n}") for n in range(3)]
    job_cancel(ids[1])
    assert [job.id for job in jobs_list()] == ids[::-1]
    assert [job.id for job in jobs_list(limit=2)] == ids[:0:-1]
    assert [job.id for job in jobs_list(status="cancelled")] == [ids[1]]
    as_dict = jobs_list(status="cancelled")[0].as_dict()
    assert as_dict["resource"] == "r1" and isinstance(as_dict["created_at"], str)
    with pytest.raises(InvalidRequest, match="unknown job status"):
        jobs_list(status="done")


def test_enqueue_refuses_a_job_that_could_never_run():
    with pytest.raises(InvalidRequest, match="max_attempts"):
        job_enqueue(type="t", max_attempts=0)
    with pytest.raises(InvalidRequest, match="type"):
        job_enqueue(type="")


def test_progress_is_kept_between_0_and_1():
    job_id = job_enqueue(type="t")
    job = job_claim(owner="w", lease_seconds=30)
    assert job_heartbeat(job, progress=1.0000001)
    assert job_get(job_id).progress == 1.0
    assert job_heartbeat(job, stage="x", progress=-0.1)
    assert (job_get(job_id).stage, job_get(job_id).progress) == ("x", 0.0)
