"""`rag serve`: gunicorn's command line and how many worker processes to start."""

from __future__ import annotations

import ipaddress
import os
import shutil
import sys

from django.conf import settings

from core.config import Config
from core.errors import InvalidRequest


def host_is_loopback(host: str) -> bool:
    """True for `localhost` and any loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_exposure_check(*, host: str, config: Config, trusted_network: bool) -> None:
    """Refuse to serve beyond this machine without an API token, unless the operator says the
    network is trusted: the API would answer anyone who can reach the port."""
    if host_is_loopback(host) or config.rag_api_token or trusted_network:
        return
    raise InvalidRequest(
        f"refusing to serve on {host} without an API token: anyone who can reach this port could "
        "read the knowledge base. Set RAG_API_TOKEN (e.g. `python3 -c \"import secrets; "
        "print(secrets.token_urlsafe(32))\"`) and give it to the clients, or pass "
        "--trusted-network if every machine that can reach this port may read everything",
        details={"host": host})


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
