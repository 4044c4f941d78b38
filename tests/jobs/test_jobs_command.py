"""`rag jobs list | retry | cancel` and `rag worker [--once]`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from jobs.queue import job_cancel, job_claim, job_enqueue, job_fail, job_get
from tests.commands.support import rag
from tests.conftest import cli_env
from tests.harness import ROOT


def failed_job(**fields) -> int:
    job_id = job_enqueue(max_attempts=1, **fields)
    job_fail(job_claim(owner="w", lease_seconds=30), error="ValueError: boom\ntraceback line")
    return job_id


@pytest.mark.django_db
def test_list_shows_status_attempts_and_the_last_error():
    failed = failed_job(type="document_ingest", resource="document:42")
    queued = job_enqueue(type="reindex")
    code, out, _ = rag("jobs", "list")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"{queued}  reindex  -  queued  attempt 0/5")
    assert lines[1].startswith(f"{failed}  document_ingest  document:42  failed  attempt 1/1")
    assert lines[2] == "    last error: ValueError: boom"

    code, out, _ = rag("jobs", "list", "--json", "--status", "failed")
    [job] = json.loads(out)
    assert (job["id"], job["status"], job["last_error"]) == (
        failed, "failed", "ValueError: boom\ntraceback line")
    assert json.loads(rag("jobs", "list", "--json", "--limit", "1")[1])[0]["id"] == queued


@pytest.mark.django_db
def test_list_says_when_there_is_nothing():
    assert rag("jobs", "list")[1].strip() == "no background jobs"
    assert rag("jobs", "list", "--status", "running")[1].strip() == "no background jobs are running"


@pytest.mark.django_db
def test_retry_and_cancel():
    failed = failed_job(type="t")
    code, out, _ = rag("jobs", "retry", str(failed))
    assert code == 0 and out.strip() == f"job {failed} (t) is queued; it runs again with 1 attempts"
    assert job_get(failed).status == "queued"
    code, out, _ = rag("jobs", "cancel", str(failed))
    assert code == 0 and out.strip() == f"job {failed} (t) is cancelled"
    assert job_get(failed).status == "cancelled"


@pytest.mark.django_db
def test_refusals_name_the_problem_and_exit_2():
    queued = job_enqueue(type="t")
    code, _, err = rag("jobs", "retry", str(queued))
    assert code == 2 and err.startswith("error [conflict]: job") and "is queued" in err
    code, _, err = rag("jobs", "cancel", "999")
    assert code == 2 and "error [not_found]: no background job has id 999" in err
    code, _, err = rag("jobs", "retry")
    assert code == 2 and "needs the ID of a job" in err
    job_cancel(queued)
    assert rag("jobs", "cancel", str(queued))[0] == 0  # cancelled already: nothing to refuse


def test_worker_once_runs_the_due_jobs_then_exits(clean_tables, run_cli):
    unknown = job_enqueue(type="no_such_type")
    result = run_cli("worker", "--once", "--concurrency", "2")
    assert result.returncode == 0, result.stderr
    job = job_get(unknown)
    assert job.status == "failed" and job.last_error.startswith("unknown job type 'no_such_type'")
    listed = run_cli("jobs", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["status"] == "failed"
    missing = run_cli("jobs", "retry", "999")
    assert missing.returncode == 2 and "not_found" in missing.stderr
    bad = run_cli("worker", "--concurrency", "0")
    assert bad.returncode == 2 and "--concurrency" in bad.stderr


def test_worker_runs_until_sigterm_then_exits_cleanly(clean_tables):
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "worker", "--poll", "0.05"], cwd=ROOT,
        env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().startswith("jobs worker ")
        job_id = job_enqueue(type="no_such_type")
        deadline = time.monotonic() + 10
        while job_get(job_id).status != "failed":
            assert time.monotonic() < deadline, "the worker did not run the job"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 0
        assert "stopping" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
