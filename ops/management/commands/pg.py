"""`rag pg start | stop | status` — the embedded PostgreSQL + pgvector server — and
`rag pg replica create | stop`, a local streaming replica of it for DATABASE_REPLICA_URLS."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import RagCommand
from core.config import Config, get_config
from core.errors import EXIT_NOT_READY
from ops.pg_services import (
    pg_replica_start,
    pg_replica_stop,
    pg_start,
    pg_status,
    pg_stop,
)


class Command(RagCommand):
    help = ("Start, stop or inspect the embedded PostgreSQL server (data under .local/pg/, or, "
            "as root in a folder the postgres user cannot enter, under /var/lib/local-rag/).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status", "replica"])
        parser.add_argument("replica_action", nargs="?", choices=["create", "start", "stop"],
                            help="with `replica`: make (once) and start a local streaming "
                                 "replica, or stop it")

    def handle(self, *args: Any, action: str, replica_action: str | None = None,
               **options: Any) -> None:
        config = get_config()
        if action == "replica":
            self._replica(config, replica_action)
        elif action == "start":
            result = pg_start(config=config)
            state = "already running" if result.already_running else "started"
            self.stdout.write(f"PostgreSQL {state} on 127.0.0.1:{result.status.port} "
                              f"(data: {result.status.data_dir})")
            if result.upgraded:
                self.stdout.write(
                    "upgraded the cluster: every connection now needs a password "
                    "(scram-sha-256) and the application's role is no longer a superuser; restart "
                    "whatever was connected (e.g. `rag serve`) so it uses the new password")
            for name in result.databases_created:
                self.stdout.write(f"created database {name}")
            # The password itself is never printed: only where it was written.
            changed = "with a new password" if result.password_generated else "new port"
            if result.env_file_created:
                self.stdout.write(f"created {result.env_file_updated} from .env.sample (mode 600)")
            if result.env_file_updated:
                self.stdout.write(f"DATABASE_URL and TEST_DATABASE_URL ({changed}) written to "
                                  f"{result.env_file_updated}")
            elif result.urls_file:
                self.stdout.write(
                    f"DATABASE_URL comes from your environment, so .env was left alone; the "
                    f"embedded server's URLs ({changed}) are in {result.urls_file}. Load them "
                    f"with:\n  set -a; . {result.urls_file}; set +a")
        elif action == "stop":
            stopped = pg_stop(config=config)
            self.stdout.write("PostgreSQL stopped" if stopped else "PostgreSQL was not running")
        else:
            status = pg_status(config=config)
            if status.running:
                self.stdout.write(f"running (pid {status.pid}, port {status.port}, "
                                  f"data {status.data_dir})")
            else:
                self.stdout.write(f"not running (data {status.data_dir})")
                raise SystemExit(EXIT_NOT_READY)

    def _replica(self, config: Config, replica_action: str | None) -> None:
        if replica_action is None:
            raise CommandError("`rag pg replica` needs create (or start) or stop")
        if replica_action == "stop":
            stopped = pg_replica_stop(config=config)
            self.stdout.write("replica stopped" if stopped else "the replica was not running")
            return
        result = pg_replica_start(config=config)
        state = "created and started" if result.created else "started"
        self.stdout.write(f"streaming replica {state} on 127.0.0.1:{result.status.port} "
                          f"(data: {result.status.data_dir})")
        if result.env_file_updated:
            self.stdout.write(f"DATABASE_REPLICA_URLS written to {result.env_file_updated}; "
                              "restart `rag serve` to search on it")
        else:
            self.stdout.write("searches use it once DATABASE_REPLICA_URLS names it (the "
                              "application's URL with this port)")
