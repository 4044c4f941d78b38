"""`rag serve [--host 127.0.0.1] [--port 8000] [--no-worker]` — gunicorn (gthread) serving the API
and admin, a background-jobs worker thread beside it, and with RAG_WATCH the folder watch."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import get_config
from ops.serving import (
    gunicorn_argv,
    serve_exposure_check,
    serve_secret_key_ensure,
    serve_watcher_build,
    serve_with_worker,
    serve_worker_build,
    serve_workers,
)


class Command(RagCommand):
    help = "Serve the API and admin with gunicorn; binds to loopback unless told otherwise."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=None,
                            help="gunicorn worker processes (default 2; 1 with a local "
                                 "embedding model, which every worker would load)")
        parser.add_argument("--threads", type=int, default=8)
        parser.add_argument("--trusted-network", action="store_true",
                            help="serve beyond loopback without RAG_API_TOKEN (only on a network "
                                 "where every machine may read the knowledge base)")
        parser.add_argument("--no-worker", action="store_true",
                            help="run no background jobs here (run `rag worker` instead)")

    def handle(self, *args: Any, host: str, port: int, workers: int | None, threads: int,
               **options: Any) -> None:
        config = get_config()
        serve_exposure_check(host=host, config=config, trusted_network=options["trusted_network"])
        sessions = serve_secret_key_ensure(config=config)
        if sessions:
            self.stderr.write(sessions, style_func=None if sessions.startswith("warning") else str)
        if workers is None:
            workers = serve_workers(config=config)
        if host in ("0.0.0.0", "::"):
            self.stderr.write("warning: serving on every interface; add the names clients use "
                              "to RAG_ALLOWED_HOSTS (currently "
                              f"{', '.join(config.rag_allowed_hosts)})")
        elif host not in config.rag_allowed_hosts:
            self.stderr.write(f"warning: {host} is not in RAG_ALLOWED_HOSTS; requests naming it "
                              "will be refused (400)")
        base = f"http://{host}:{port}"
        worker = None if options["no_worker"] else serve_worker_build()
        jobs = "one worker thread" if worker else "none here (run `rag worker`)"
        watcher = serve_watcher_build(config=config)
        watch = ("every vault folder (RAG_WATCH), re-indexed by the jobs worker" if watcher
                 else "off (RAG_WATCH=false)")
        self.stdout.write(f"serving local-rag on {base}\n  workbench: {base}/workbench/\n"
                          f"  API docs:  {base}/docs\n  health:    {base}/health\n"
                          f"  admin:     {base}/admin/\n  jobs:      {jobs}\n"
                          f"  watch:     {watch}")
        self.stdout.flush()
        argv = gunicorn_argv(host=host, port=port, workers=workers, threads=threads)
        if worker is None and watcher is None:
            # Replace this process: signals (Ctrl-C, SIGTERM) then reach gunicorn directly.
            os.execv(argv[0], argv)
        status = serve_with_worker(argv=argv, worker=worker, watcher=watcher)
        if status:
            raise SystemExit(status)
