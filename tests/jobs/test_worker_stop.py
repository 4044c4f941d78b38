"""A stopping worker hands its running job back at the handler's next safe point: the job is
queued again at once, its attempt not spent, and the next worker runs it to its end."""

from __future__ import annotations

import threading
import time

from jobs.queue import job_enqueue, job_get
from jobs.worker import JobContext, Worker


def test_a_stopping_worker_hands_its_running_job_back_to_the_queue(clean_tables):
    started, rounds = threading.Event(), []

    def long_job(context: JobContext) -> dict:
        started.set()
        for round_number in range(600):  # a minute of work, with a safe point every 0.1 s
            context.checkpoint()
            rounds.append(round_number)
            time.sleep(0.1)
        return {"rounds": len(rounds)}

    job_id = job_enqueue(type="long", max_attempts=3)
    worker = Worker(handlers={"long": long_job}, poll_seconds=0.02)
    running = threading.Thread(target=worker.run, kwargs={"until_idle": True})
    running.start()
    assert started.wait(10)
    asked = time.monotonic()
    worker.stop()
    running.join(10)
    stopped = time.monotonic() - asked
    assert not running.is_alive() and stopped < 1, f"stopped after {stopped:.2f} s"
    job = job_get(job_id)
    assert (job.status, job.attempt, job.lease_owner) == ("queued", 0, None)
    assert len(rounds) < 30

    def short_job(context: JobContext) -> dict:
        context.checkpoint()
        return {"done": context.attempt}

    Worker(handlers={"long": short_job}, poll_seconds=0.02).run(until_idle=True)
    finished = job_get(job_id)
    assert finished.status == "succeeded" and finished.result == {"done": 1}


def test_a_job_without_safe_points_still_finishes_when_the_worker_stops(clean_tables):
    started = threading.Event()

    def no_checkpoints(context: JobContext) -> dict:
        started.set()
        time.sleep(0.3)
        return {"finished": True}

    job_id = job_enqueue(type="plain")
    worker = Worker(handlers={"plain": no_checkpoints}, poll_seconds=0.02)
    running = threading.Thread(target=worker.run, kwargs={"until_idle": True})
    running.start()
    assert started.wait(10)
    worker.stop()
    running.join(10)
    assert job_get(job_id).status == "succeeded"
