"""Site-level services: the admin account and the HTTP server."""

from __future__ import annotations

import os
import secrets
import shutil
import sys

from django.contrib.auth import get_user_model

from knowledge.db import translate_db_errors


def admin_ensure(*, username: str) -> str | None:
    """Create superuser `username` with a random password unless any superuser exists; returns
    the password (to print once) or None."""
    users = get_user_model()
    with translate_db_errors():
        if users.objects.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
    return password


def gunicorn_argv(*, host: str, port: int, workers: int, threads: int) -> list[str]:
    """Command line of gunicorn serving the site with gthread workers (streaming-safe)."""
    executable = shutil.which("gunicorn", path=os.path.dirname(sys.executable)) or "gunicorn"
    return [
        executable, "localrag_site.wsgi:application",
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
