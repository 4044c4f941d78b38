"""A jobs worker process running the test handlers, for the tests that race or kill workers:

    python -m tests.jobs.worker_process --lease 2 --poll 0.05 --concurrency 2

Run with tests.conftest.cli_env() (DATABASE_URL is the test database). Prints `ready` once
Django is set up; SIGTERM stops it after the running jobs.
"""

from __future__ import annotations

import argparse
import os
import signal


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lease", type=float, required=True)
    parser.add_argument("--poll", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "localrag_site.settings")
    import django

    django.setup()
    from jobs.worker import Worker
    from tests.jobs.handlers import TEST_HANDLERS

    worker = Worker(lease_seconds=args.lease, poll_seconds=args.poll, handlers=TEST_HANDLERS)
    signal.signal(signal.SIGTERM, lambda signum, frame: worker.stop())
    print("ready", flush=True)
    worker.run(concurrency=args.concurrency)


if __name__ == "__main__":
    main()
