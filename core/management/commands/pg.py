"""`rag pg start | stop | status` — the embedded PostgreSQL + pgvector server."""

from __future__ import annotations

from core.commands import RagCommand
from core.config import get_config
from core.dburl import url_password_mask
from core.errors import EXIT_NOT_READY
from core.pg_services import pg_start, pg_status, pg_stop


class Command(RagCommand):
    help = "Start, stop or inspect the embedded PostgreSQL server (data under .local/pg/)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status"])

    def handle(self, *args, action: str, **options) -> None:
        config = get_config()
        if action == "start":
            result = pg_start(config=config)
            state = "already running" if result.already_running else "started"
            self.stdout.write(f"PostgreSQL {state} on 127.0.0.1:{result.status.port} "
                              f"(data: {result.status.data_dir})")
            for name in result.databases_created:
                self.stdout.write(f"created database {name}")
            if result.env_file_updated:
                self.stdout.write(f"port {result.status.port} written to {result.env_file_updated}")
            elif result.database_url != config.database_url:
                self.stdout.write("the configured port is taken; use:\n  export DATABASE_URL="
                                  f"{url_password_mask(result.database_url)}")
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
