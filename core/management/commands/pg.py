"""`rag pg start | stop | status` — the embedded PostgreSQL + pgvector server."""

from __future__ import annotations

from core.commands import RagCommand
from core.config import get_config
from core.errors import EXIT_NOT_READY
from core.pg_services import pg_start, pg_status, pg_stop


class Command(RagCommand):
    help = ("Start, stop or inspect the embedded PostgreSQL server (data under .local/pg/, or, "
            "as root in a folder the postgres user cannot enter, under /var/lib/local-rag/).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status"])

    def handle(self, *args, action: str, **options) -> None:
        config = get_config()
        if action == "start":
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
