"""`rag worker [--concurrency N] [--once] [--poll SECONDS]` — run background jobs."""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.errors import InvalidRequest
from jobs.worker import LEASE_SECONDS, POLL_SECONDS, Worker


class Command(RagCommand):
    help = ("Run background jobs until stopped (on SIGTERM or Ctrl-C a running job stops at its "
            "next safe point and goes back to the queue, or finishes if it has none). "
            "`rag serve` runs one worker thread itself unless given --no-worker.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, default=1,
                            help="jobs run at once, one thread each (default 1)")
        parser.add_argument("--once", action="store_true",
                            help="run the jobs due now, then exit instead of waiting for more")
        parser.add_argument("--poll", type=float, default=POLL_SECONDS,
                            help=f"seconds between looks for due jobs when idle "
                                 f"(default {POLL_SECONDS:g})")
        parser.add_argument("--lease", type=float, default=LEASE_SECONDS,
                            help=f"seconds a job stays this worker's without a heartbeat "
                                 f"(default {LEASE_SECONDS:g})")

    def handle(self, *args: Any, concurrency: int, once: bool, poll: float, lease: float,
               **options: Any) -> None:
        if concurrency < 1 or poll <= 0 or lease <= 0:
            raise InvalidRequest("--concurrency must be at least 1, --poll and --lease above 0")
        worker = Worker(lease_seconds=lease, poll_seconds=poll)

        def stop(signum: int, frame: object) -> None:
            self.stderr.write("stopping: running jobs go back to the queue at their next safe "
                              "point, or finish first (Ctrl-C again to quit now; their leases "
                              "then expire and other workers take them over)")
            signal.signal(signal.SIGINT, signal.default_int_handler)
            worker.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self.stdout.write(f"jobs worker {worker.name}: {concurrency} thread(s)"
                          + (", until no job is due" if once else f", polling every {poll:g} s"))
        self.stdout.flush()
        worker.run(concurrency=concurrency, until_idle=once)
