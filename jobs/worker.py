"""The worker: claims due jobs, runs their handlers, heartbeats while they run, and records
how each attempt ended.

A handler is a plain function of a `JobContext`, registered per job type:

    def document_ingest(context: JobContext) -> dict | None:
        for stage, fraction in ...:
            context.progress(stage, fraction)  # raises LeaseLost once the job is not ours
        return {"chunks": 12}                  # stored as the job's result (JSON)

    # in the AppConfig.ready() of the app that owns the job type:
    job_handler_register("document_ingest", document_ingest)

It runs on a worker thread with that thread's own database connection, in autocommit: no
transaction is open around it (open your own `transaction.atomic()` for writes that belong
together). Raise `JobPermanentError` for a failure a retry cannot fix; any other exception is
retried with backoff until max_attempts. A job may run more than once (a worker killed mid-job
is replaced after its lease expires), so handlers must be idempotent.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from django.db import connection

from core.errors import LocalRagError
from jobs.queue import (
    ClaimedJob,
    job_claim,
    job_complete,
    job_fail,
    job_heartbeat,
    job_release,
)
from jobs.workers import WORKER_BEAT_SECONDS, worker_gone, worker_seen

logger = logging.getLogger("localrag.jobs")

# A lease long enough to ride out a slow statement or a short network hiccup, short enough that
# a killed worker's job is picked up again within half a minute. Heartbeats come every third of
# it, so two can be missed before the lease runs out.
LEASE_SECONDS = 30.0
POLL_SECONDS = 1.0  # how often an idle worker looks for due jobs
ERROR_PAUSE_SECONDS = 5.0  # after the queue itself failed (database down), before trying again
PROGRESS_WRITE_SECONDS = 0.5  # at most this often a handler's progress reaches the database
ERROR_TEXT_LIMIT = 2000  # characters of an exception's message kept in last_error


class LeaseLost(Exception):
    """The job is no longer this worker's: its lease expired and another worker reclaimed it,
    or it was cancelled. Nothing this worker writes about the job will be recorded."""


class WorkerStopping(LeaseLost):
    """Raised at a safe point (JobContext.checkpoint) while the worker stops: the job goes back
    to the queue, untouched, for the next worker."""


class JobPermanentError(Exception):
    """Raised by a handler for a failure a retry cannot fix: the job fails without retrying."""


JobHandler = Callable[["JobContext"], "dict[str, Any] | None"]
JOB_HANDLERS: dict[str, JobHandler] = {}


def job_handler_register(type: str, fn: JobHandler) -> JobHandler:
    """Make `fn` the handler of jobs of `type` (registering a type again replaces it)."""
    JOB_HANDLERS[type] = fn
    return fn


class JobContext:
    """What a handler knows of its job, and how it reports progress."""

    def __init__(self, job: ClaimedJob, *, stopping: threading.Event | None = None) -> None:
        self.id = job.id
        self.type = job.type
        self.resource = job.resource
        self.payload = job.payload
        self.attempt = job.attempt  # 1 on the first run
        self.max_attempts = job.max_attempts
        self._job = job
        self._lost = threading.Event()
        self._stopping = stopping or threading.Event()
        self._stage: str | None = None
        self._written_at = 0.0

    def progress(self, stage: str, fraction: float) -> None:
        """Record the stage and progress (0..1) and extend the lease; raises LeaseLost when the
        job is no longer this worker's, so the handler stops doing work nobody will keep.

        Cheap to call per page or chunk: it writes when the stage changes, and otherwise at most
        every PROGRESS_WRITE_SECONDS."""
        now = time.monotonic()
        if not self._lost.is_set() and stage == self._stage and (
                now - self._written_at < PROGRESS_WRITE_SECONDS):
            return
        if self._lost.is_set() or not job_heartbeat(self._job, stage=stage, progress=fraction):
            self._lost.set()
            raise LeaseLost(f"job {self.id} is no longer this worker's (its lease expired and it "
                            "was reclaimed, or it was cancelled)")
        self._stage, self._written_at = stage, now

    def checkpoint(self) -> None:
        """A safe point of a handler: raises LeaseLost at once when the job was cancelled or
        another worker took it over, checked in the database (one round trip, which also extends
        the lease). Call it before work nobody would keep, e.g. before writing a result. While
        the worker stops it raises WorkerStopping instead: the job is handed back."""
        if self._stopping.is_set():
            raise WorkerStopping(f"job {self.id}: the worker is stopping; back to the queue")
        if self._lost.is_set() or not job_heartbeat(self._job):
            self._lost.set()
            raise LeaseLost(f"job {self.id} is no longer this worker's (it was cancelled, or "
                            "its lease expired and another worker took it)")

    def lease_lost(self) -> bool:
        """True once a heartbeat found the job no longer this worker's."""
        return self._lost.is_set()

    def _heartbeat(self) -> None:
        if not job_heartbeat(self._job):
            self._lost.set()


class _Heartbeat:
    """Extends the lease every `interval` seconds while a handler runs, on a thread of its own
    with its own database connection (closed when the job ends)."""

    def __init__(self, context: JobContext, *, interval: float) -> None:
        self._context = context
        self._interval = interval
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"job-{context.id}-heartbeat",
                                        daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            while not self._done.wait(self._interval) and not self._context.lease_lost():
                try:
                    self._context._heartbeat()
                except LocalRagError as exc:
                    # The lease may still hold; if it runs out, the job is reclaimed and the
                    # next heartbeat that gets through reports the loss.
                    logger.warning("job %s: heartbeat failed: %s", self._context.id, exc.message)
                    connection.close()
        finally:
            connection.close()


class Worker:
    """Claims due jobs and runs their handlers on `concurrency` threads until `stop()`."""

    def __init__(self, *, lease_seconds: float = LEASE_SECONDS, poll_seconds: float = POLL_SECONDS,
                 handlers: Mapping[str, JobHandler] | None = None, name: str | None = None) -> None:
        self.lease_seconds = lease_seconds
        self.poll_seconds = poll_seconds
        self.handlers = JOB_HANDLERS if handlers is None else handlers
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()

    def stop(self) -> None:
        """Claim no more jobs. A running job stops at its handler's next safe point
        (JobContext.checkpoint) and goes back to the queue, its attempt not spent; one whose
        handler has no safe point left finishes first."""
        self._stop.set()

    def run(self, *, concurrency: int = 1, until_idle: bool = False) -> None:
        """Run `concurrency` worker threads until `stop()` (or, with `until_idle`, until no job
        is due), then return once every thread has finished its job."""
        threads = [threading.Thread(target=self._loop, kwargs={"until_idle": until_idle},
                                    name=f"jobs-{index + 1}", daemon=True)
                   for index in range(max(1, concurrency))]
        for thread in threads:
            thread.start()
        for thread in threads:
            # A bounded join keeps the calling thread responsive to signals (SIGTERM, Ctrl-C).
            while thread.is_alive():
                thread.join(timeout=0.5)

    def run_once(self) -> bool:
        """Claim one due job and run it to its end on this thread; False when none was due."""
        owner = f"{self.name}/{threading.current_thread().name}"
        job = job_claim(owner=owner, lease_seconds=self.lease_seconds)
        if job is None:
            return False
        self._execute(job)
        return True

    def _loop(self, *, until_idle: bool) -> None:
        owner = f"{self.name}/{threading.current_thread().name}"
        last_beat = -WORKER_BEAT_SECONDS
        try:
            while not self._stop.is_set():
                try:
                    if time.monotonic() - last_beat >= WORKER_BEAT_SECONDS:
                        worker_seen(owner=owner)
                        last_beat = time.monotonic()
                    ran = self.run_once()
                except Exception as exc:  # the loop outlives any error: it is the server's worker
                    logger.warning("jobs worker: %s; trying again in %.0f s", _describe(exc),
                                   ERROR_PAUSE_SECONDS, exc_info=not isinstance(exc, LocalRagError))
                    connection.close()  # a broken connection is replaced on the next claim
                    self._stop.wait(ERROR_PAUSE_SECONDS)
                    continue
                if not ran:
                    if until_idle:
                        return
                    self._stop.wait(self.poll_seconds)
        finally:
            try:
                worker_gone(owner=owner)
            except LocalRagError:  # the database is gone: its row ages out of the count
                pass
            connection.close()  # Django's connections are per thread: this one ends with it

    def _execute(self, job: ClaimedJob) -> None:
        handler = self.handlers.get(job.type)
        if handler is None:
            known = ", ".join(sorted(self.handlers)) or "none"
            self._failed(job, f"unknown job type {job.type!r} (registered: {known})",
                         retryable=False)
            return
        context = JobContext(job, stopping=self._stop)
        started = time.monotonic()
        try:
            with _Heartbeat(context, interval=self.lease_seconds / 3):
                result = _result_checked(handler(context))
        except WorkerStopping:
            released = job_release(job)
            logger.info("job %s (%s) %s", job.id, job.type,
                        "handed back to the queue: this worker is stopping" if released
                        else "stopped; its lease was no longer this worker's")
            return
        except LeaseLost:
            logger.warning("job %s (%s): lease lost; this attempt's outcome is dropped", job.id,
                           job.type)
            return
        except JobPermanentError as exc:
            self._failed(job, _describe(exc), retryable=False)
            return
        except Exception as exc:
            logger.warning("job %s (%s) attempt %d raised", job.id, job.type, job.attempt,
                           exc_info=True)
            self._failed(job, _describe(exc), retryable=True)
            return
        if job_complete(job, result=result):
            logger.info("job %s (%s) succeeded in %.1f s", job.id, job.type,
                        time.monotonic() - started)
        else:
            logger.warning("job %s (%s): lease lost before completion; result dropped", job.id,
                           job.type)

    def _failed(self, job: ClaimedJob, error: str, *, retryable: bool) -> None:
        status = job_fail(job, error=error, retryable=retryable)
        if status is None:
            logger.warning("job %s (%s): lease lost before its failure was recorded: %s", job.id,
                           job.type, error)
        else:
            logger.warning("job %s (%s) attempt %d of %d failed (now %s): %s", job.id, job.type,
                           job.attempt, job.max_attempts, status, error)


def _result_checked(result: Any) -> dict[str, Any]:
    """A handler's return value as the job's result: a JSON object, or {} for None."""
    if result is None:
        return {}
    try:
        if isinstance(result, dict):
            json.dumps(result)
            return result
    except (TypeError, ValueError) as exc:
        raise JobPermanentError(f"the handler's result is not JSON: {exc}") from exc
    raise JobPermanentError(f"a handler returns a dict or None, not {type(result).__name__}")


def _describe(exc: BaseException) -> str:
    """`Type: message`, as last_error keeps it."""
    return f"{type(exc).__name__}: {exc}"[:ERROR_TEXT_LIMIT]
