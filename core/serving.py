"""`rag serve`: gunicorn's command line and how many worker processes to start."""

from __future__ import annotations

import os
import shutil
import sys

from django.conf import settings

from core.config import Config


def serve_workers(*, config: Config) -> int:
    """Two workers, or one when the embedding provider loads a model into each process."""
    return 1 if config.embedding_spec.loads_model else 2


def gunicorn_argv(*, host: str, port: int, workers: int, threads: int) -> list[str]:
    """Command line of gunicorn serving the site with gthread workers (streaming-safe)."""
    executable = shutil.which("gunicorn", path=os.path.dirname(sys.executable)) or "gunicorn"
    # The site's WSGI_APPLICATION setting, in gunicorn's `module:attribute` form.
    module, _, attribute = settings.WSGI_APPLICATION.rpartition(".")
    return [
        executable, f"{module}:{attribute}",
        "--bind", f"{host}:{port}",
        "--worker-class", "gthread",
        "--workers", str(workers),
        "--threads", str(threads),
        # /ask waits on the LLM; the worker must outlive LLM_TIMEOUT_SECONDS plus retrieval.
        "--timeout", "120",
        # Load the app once in the master: every worker then shares the same per-server
        # SECRET_KEY, so an admin session is valid whichever worker serves the request.
        "--preload",
        "--access-logfile", "-",
    ]
