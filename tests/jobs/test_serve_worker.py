"""`rag serve` runs one background-jobs worker beside gunicorn, unless given --no-worker; it
stops with the server (SIGTERM mid-job hands the job back to the queue), and gunicorn does not
outlive it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.db import connection

from access.callers import OPERATOR
from jobs.queue import job_enqueue, job_get
from jobs.worker import Worker
from knowledge.bases import kb_create
from knowledge.documents import document_upload
from ops.embedded_pg import free_port
from ops.serving import WORKER_STOP_SECONDS
from tests.conftest import cli_env
from tests.harness import ADVISORY_LOCKS_HERE, ROOT


def answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/openapi.json", timeout=1)
        return True
    except httpx.TransportError:
        return False


def wait_for(condition, *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class Servers:
    """`rag serve` subprocesses on free loopback ports; all stopped, gunicorn included, at the
    end of the test whatever happened."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen] = []
        self.gunicorns: list[int] = []

    def start(self, *options: str) -> tuple[subprocess.Popen, str]:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(port),
             "--workers", "1", "--threads", "2", *options],
            cwd=ROOT, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(process)
        url = f"http://127.0.0.1:{port}"
        if not wait_for(lambda: answers(url) or process.poll() is not None, timeout=30) or (
                process.poll() is not None):
            pytest.fail("rag serve did not start")
        if sys.platform.startswith("linux"):
            self.gunicorns += [int(pid) for pid in Path(
                f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()]
        return process, url

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for pid in self.gunicorns:  # one that outlived its `rag serve` (a failed test)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def servers():
    started = Servers()
    yield started
    started.stop_all()


def test_serve_runs_jobs_and_stops_with_sigterm(clean_tables, servers):
    # No handler of the test process exists in the server: a job of an unknown type shows that
    # the server's worker claimed and ran it.
    job_id = job_enqueue(type="no_such_type")
    process, url = servers.start()
    assert wait_for(lambda: job_get(job_id).status == "failed", timeout=10)
    assert job_get(job_id).last_error.startswith("unknown job type 'no_such_type'")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 0
    assert not answers(url)  # gunicorn stopped too


def test_no_worker_leaves_jobs_queued(clean_tables, servers):
    job_id = job_enqueue(type="no_such_type")
    servers.start("--no-worker")
    time.sleep(1.5)  # more than a worker's poll interval (1 s)
    job = job_get(job_id)
    assert (job.status, job.attempt) == ("queued", 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_gunicorn_does_not_outlive_a_killed_serve(clean_tables, servers):
    process, url = servers.start()
    assert servers.gunicorns, "rag serve started no gunicorn of its own"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=5)
    assert wait_for(lambda: not answers(url), timeout=10)


def survey_text(chars: int) -> bytes:
    """A plain-text survey log of about `chars` characters in paragraphs of 60 words: one
    whose extraction, chunking and embedding take seconds."""
    words = ["tin", "greisen", "vein", "assay", "granite", "drill", "core", "grade"]
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        number = len(paragraphs)
        paragraphs.append(" ".join(f"{words[(number + index) % len(words)]}"
                                   f"{(number * 7 + index) % 997}" for index in range(60)))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join(paragraphs).encode()


def db_one(statement: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(statement, params or [])
        return cursor.fetchone()


def test_sigterm_mid_job_hands_the_job_back_and_serve_exits_within_its_grace(
        clean_tables, servers, config_override, tmp_path):
    config_override(project_root=tmp_path)  # the upload area, read by the server's worker
    kb_create(slug="field", name="Field reports")
    process, _ = servers.start()
    # Just under RAG_DOCUMENT_MAX_CHARS: the largest text the default limits let a job read.
    upload = document_upload(caller=OPERATOR, slug="field", filename="survey.txt",
                             chunks=[survey_text(1_950_000)])
    assert wait_for(lambda: job_get(upload.job_id).stage == "ingest", timeout=30), (
        "the server's worker never started the ingest")
    asked = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=WORKER_STOP_SECONDS + 30) == 0
    shutdown = time.monotonic() - asked
    assert shutdown < WORKER_STOP_SECONDS, f"rag serve took {shutdown:.1f} s to stop"

    job = job_get(upload.job_id)
    assert (job.status, job.attempt, job.lease_owner) == ("queued", 0, None)
    # It was stopped mid-ingest: that run was cut short at a safe point, nothing written.
    status, error = db_one("SELECT status, error_summary FROM ingest_runs ORDER BY id DESC "
                           "LIMIT 1")
    assert status == "failed" and error.startswith("WorkerStopping"), error
    assert db_one("SELECT status, (SELECT count(*) FROM chunks) FROM documents WHERE id = %s",
                  [upload.document_id]) == ("queued", 0)
    assert db_one(ADVISORY_LOCKS_HERE) == (0,)

    Worker(poll_seconds=0.01).run(until_idle=True)
    job = job_get(upload.job_id)
    assert (job.status, job.attempt) == ("succeeded", 1)
    status, chunks = db_one("SELECT status, (SELECT count(*) FROM chunks) FROM documents "
                            "WHERE id = %s", [upload.document_id])
    assert status == "active" and chunks == job.result["chunks"] > 100
