"""Workers in separate processes: racing on many jobs, and one killed (`kill -9`) mid-job whose
job another worker finishes once the lease expires."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

from django.db import connection

from jobs.queue import job_enqueue, job_get, jobs_list
from jobs.worker import Worker
from tests.conftest import cli_env
from tests.harness import ROOT
from tests.jobs.handlers import TEST_HANDLERS

LEASE = 2.0


def worker_process(*, concurrency: int = 1) -> subprocess.Popen:
    """A worker process running the test handlers, once it says it is ready."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.jobs.worker_process", "--lease", str(LEASE),
         "--poll", "0.05", "--concurrency", str(concurrency)],
        cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


def wait_for(condition, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def all_succeeded() -> bool:
    return {job.status for job in jobs_list(limit=1000)} == {"succeeded"}


def test_two_worker_processes_never_run_a_job_twice(job_runs):
    processes = [worker_process(concurrency=2) for _ in range(2)]
    try:
        ids = [job_enqueue(type="record", payload={"sleep": 0.005}) for _ in range(200)]
        wait_for(all_succeeded, timeout=20)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
    assert [process.wait(timeout=10) for process in processes] == [0, 0]
    runs = job_runs()
    assert Counter(job_id for job_id, _, _ in runs) == Counter(ids)
    pids = {runner.split("/")[0] for _, _, runner in runs}
    assert pids == {str(process.pid) for process in processes}  # both took part in the race


def test_a_killed_workers_job_is_finished_by_another_after_its_lease(job_runs):
    killed = worker_process()
    job_id = job_enqueue(type="slow_idempotent", payload={"first_attempt_sleep": 60})
    wait_for(lambda: job_runs() != [], timeout=10)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=5)
    orphaned = job_get(job_id)
    assert orphaned.status == "running" and orphaned.lease_owner.startswith(
        f"{socket.gethostname()}:{killed.pid}/")

    successor = Worker(handlers=TEST_HANDLERS, lease_seconds=LEASE, poll_seconds=0.05)
    thread = threading.Thread(target=successor.run)
    thread.start()
    try:
        started = time.monotonic()
        wait_for(lambda: job_get(job_id).status == "succeeded", timeout=LEASE + 8)
    finally:
        successor.stop()
        thread.join(timeout=10)
    job = job_get(job_id)
    assert (job.attempt, job.result) == (2, {"attempt": 2})
    assert "expired on attempt 1; reclaimed" in job.last_error
    assert time.monotonic() - started < LEASE + 3  # not much later than the lease allows
    assert [(run_job, attempt) for run_job, attempt, _ in job_runs()] == [(job_id, 1),
                                                                          (job_id, 2)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM test_job_outputs WHERE job_id = %s", [job_id])
        assert cursor.fetchone()[0] == 1  # the idempotent handler wrote its output once
