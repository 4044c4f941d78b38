"""`rag jobs list [--json] [--status S] [--limit N]`, `rag jobs retry ID`, `rag jobs cancel ID`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.errors import InvalidRequest
from jobs.queue import (
    JOB_STATUSES,
    JOBS_LIST_LIMIT,
    JobRecord,
    job_cancel,
    job_retry,
    jobs_list,
)


class Command(RagCommand):
    help = "List background jobs, queue a failed or cancelled one again, or cancel one."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["list", "retry", "cancel"])
        parser.add_argument("id", nargs="?", type=int, help="the job to retry or cancel")
        parser.add_argument("--json", action="store_true", help="print the list as JSON")
        parser.add_argument("--status", choices=JOB_STATUSES, help="only jobs of this status")
        parser.add_argument("--limit", type=int, default=JOBS_LIST_LIMIT,
                            help=f"newest jobs shown (default {JOBS_LIST_LIMIT})")

    def handle(self, *args: Any, action: str, id: int | None, **options: Any) -> None:
        if action in ("retry", "cancel"):
            if id is None:
                raise InvalidRequest(f"`rag jobs {action}` needs the ID of a job "
                                     "(see `rag jobs list`)")
            job = job_retry(id) if action == "retry" else job_cancel(id)
            self.stdout.write(f"job {job.id} ({job.type}) is {job.status}" + (
                f"; it runs again with {job.max_attempts} attempts" if action == "retry" else ""))
            return
        jobs = jobs_list(status=options["status"], limit=options["limit"])
        if options["json"]:
            self.write_json([job.as_dict() for job in jobs])
            return
        if not jobs:
            self.stdout.write("no background jobs" + (
                f" are {options['status']}" if options["status"] else ""))
        for job in jobs:
            self.stdout.write(job_line(job))


def job_line(job: JobRecord) -> str:
    """`12  document_ingest  document:42  running (embed 40%)  attempt 1/5  ...`"""
    state = job.status
    if job.status == "running":
        state += f" ({job.stage + ' ' if job.stage else ''}{job.progress:.0%})"
    line = (f"{job.id}  {job.type}  {job.resource or '-'}  {state}  "
            f"attempt {job.attempt}/{job.max_attempts}  "
            f"updated {job.updated_at:%Y-%m-%d %H:%M:%S %Z}")
    if job.status == "queued" and job.attempt:
        line += f"  next try {job.run_after:%H:%M:%S %Z}"
    if job.last_error and job.status in ("queued", "failed"):
        line += f"\n    last error: {job.last_error.splitlines()[0]}"
    return line
