"""Background-jobs benchmark: enqueue rate, and jobs claimed and completed per second by W
worker threads running an empty handler, for each queue depth N.

Runs against DATABASE_URL (start it with `rag pg start && rag db init`). Prints one JSON line
per measurement. Only the benchmark's own jobs (type `bench_noop`) are touched, and they are
deleted afterwards.

    .venv/bin/python bench/jobs.py --jobs 2000 20000 --workers 1 4
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from _setup import django_setup

JOB_TYPE = "bench_noop"


def jobs_delete() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM background_jobs WHERE type = %s", [JOB_TYPE])
        cursor.execute("VACUUM (ANALYZE) background_jobs")


def enqueue(jobs: int) -> None:
    from jobs.queue import job_enqueue

    started = time.perf_counter()
    for index in range(jobs):
        job_enqueue(type=JOB_TYPE, resource=f"bench:{index}")
    elapsed = time.perf_counter() - started
    print(json.dumps({"measurement": "enqueue", "jobs": jobs, "seconds": round(elapsed, 3),
                      "jobs_per_s": round(jobs / elapsed, 1)}), flush=True)


def drain(jobs: int, workers: int) -> None:
    """Run every queued bench job with `workers` threads; check each ran exactly once."""
    from django.db import connection

    from jobs.worker import Worker

    runs: list[int] = []  # list.append is atomic: safe from every worker thread
    worker = Worker(handlers={JOB_TYPE: lambda context: runs.append(context.id)})
    started = time.perf_counter()
    worker.run(concurrency=workers, until_idle=True)
    elapsed = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) "
                       "FROM background_jobs WHERE type = %s", [JOB_TYPE])
        succeeded, total = cursor.fetchone()
    print(json.dumps({"measurement": "claim_run_complete", "jobs": jobs, "workers": workers,
                      "seconds": round(elapsed, 3), "jobs_per_s": round(jobs / elapsed, 1),
                      "runs": len(runs), "distinct_runs": len(set(runs)),
                      "succeeded": succeeded, "total": total}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, nargs="+", default=[2000])
    parser.add_argument("--workers", type=int, nargs="+", default=[4])
    args = parser.parse_args()
    django_setup()
    logging.getLogger("localrag.jobs").setLevel(logging.WARNING)  # no line per job
    jobs_delete()
    try:
        for jobs in args.jobs:
            for workers in args.workers:
                enqueue(jobs)
                drain(jobs, workers)
                jobs_delete()
    finally:
        jobs_delete()


if __name__ == "__main__":
    main()
