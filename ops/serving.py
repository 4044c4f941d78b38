"""`rag serve`: gunicorn's command line, how many worker processes to start, and the
background-jobs worker and folder watch that run beside them.

The worker (jobs), the watch (knowledge) and the token check (access) are imported where they
are built, not at the top: most commands that load this module never start a server.
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from django.conf import settings
from django.core.management.utils import get_random_secret_key

from core.config import TRUSTED_NETWORK_VARIABLE, Config, config_use, get_config
from core.errors import InvalidRequest, LocalRagError
from ops.env_file import secret_key_persist


def host_is_loopback(host: str) -> bool:
    """True for `localhost` and any loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_exposure_check(*, host: str, config: Config, trusted_network: bool) -> None:
    """Refuse to serve beyond this machine when no caller there could use it safely: without
    RAG_API_TOKEN or an issued token (`rag token create`), unless the operator says the network
    is trusted (then the API answers anyone who can reach the port)."""
    # The environment carries it to the server's child processes; this one's configuration is
    # already loaded, so it is told directly (access/auth.py reads it there).
    if trusted_network:
        os.environ[TRUSTED_NETWORK_VARIABLE] = "1"
        config_use(replace(get_config(), trusted_network=True))
        return
    os.environ.pop(TRUSTED_NETWORK_VARIABLE, None)
    config_use(replace(get_config(), trusted_network=False))
    if host_is_loopback(host) or config.rag_api_token or _tokens_issued(config):
        return
    raise InvalidRequest(
        f"refusing to serve on {host} without an API token: callers beyond this machine need "
        "one. Issue tokens with `rag token create --user NAME` (or set RAG_API_TOKEN, e.g. "
        "`python3 -c \"import secrets; print(secrets.token_urlsafe(32))\"`) and give them to "
        "the clients, or pass --trusted-network if every machine that can reach this port may "
        "read everything", details={"host": host})


def serve_secret_key_ensure(*, config: Config) -> str | None:
    """Give the server a session-signing key that outlives it: without RAG_SECRET_KEY, make one
    and keep it in `.env` for this and every later start. What to tell the operator, or None
    when the key was there already."""
    if config.rag_secret_key:
        return None
    path = secret_key_persist(config=config, key=get_random_secret_key())
    if path is None:
        return ("warning: no .env to keep a session key in: everyone is signed out when the "
                "server restarts; set RAG_SECRET_KEY (50 random characters) to keep sessions")
    return f"session key made and kept in {path} (RAG_SECRET_KEY): sign-ins survive restarts"


def _tokens_issued(config: Config) -> bool:
    from access.callers import access_control_on

    try:
        return access_control_on(config=config)
    except LocalRagError:  # the database is down: the server starts all the same, refusing
        return False       # callers beyond loopback until it can check their tokens


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


class BackgroundWorker(Protocol):
    """What `rag serve` runs on a thread beside gunicorn: the background-jobs worker."""

    def run(self, *, concurrency: int) -> None: ...

    def stop(self) -> None: ...


class BackgroundWatcher(Protocol):
    """What `rag serve` runs on a thread beside gunicorn with RAG_WATCH: the folder watch."""

    def run(self) -> None: ...

    def stop(self) -> None: ...


# Signals gunicorn acts on (stop, reload, reopen logs, more/fewer workers): `rag serve` passes
# them on, so operators and supervisors talk to it as they would to gunicorn itself.
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP,
                     signal.SIGUSR1, signal.SIGUSR2, signal.SIGTTIN, signal.SIGTTOU)
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
# Once gunicorn has exited, how long the job running then may take to finish. A job cut off
# is not lost: its lease expires and the next worker runs it again.
WORKER_STOP_SECONDS = 30
_PR_SET_PDEATHSIG = 1


def serve_worker_build() -> BackgroundWorker:
    """A new background-jobs worker."""
    from jobs.worker import Worker

    return Worker()


def serve_watcher_build(*, config: Config) -> BackgroundWatcher | None:
    """A new folder watch when RAG_WATCH is on, else None."""
    if not config.rag_watch:
        return None
    from watching.sync import ServeWatcher

    logger = logging.getLogger("localrag.watch")
    return ServeWatcher(say=logger.info, warn=logger.warning)


def serve_with_worker(*, argv: list[str], worker: BackgroundWorker | None,
                      watcher: BackgroundWatcher | None = None) -> int:
    """Run gunicorn (`argv`) as a child process, and `worker` and `watcher` (either may be None)
    on threads of this process until gunicorn exits; returns gunicorn's exit status.

    The worker runs here, in the one process that supervises the server, not in the gunicorn
    master or its workers: a thread in the master would be copied, half-alive, into every
    worker it forks, and one per gunicorn worker would run N workers per server. Stopping
    signals stop the worker (the running job finishes) and the watch, and reach gunicorn; if
    this process is killed outright, the kernel sends gunicorn SIGTERM (Linux), so no server
    outlives it."""
    server = subprocess.Popen(argv, preexec_fn=_exit_with_parent())
    stoppable = [service for service in (worker, watcher) if service is not None]

    def forward(signum: int, frame: object) -> None:
        if signum in STOPPING_SIGNALS:
            for service in stoppable:
                service.stop()
        if server.poll() is None:
            server.send_signal(signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    threads = []
    if worker is not None:
        threads.append(threading.Thread(target=worker.run, kwargs={"concurrency": 1},
                                        name="jobs-worker", daemon=True))
    if watcher is not None:
        threads.append(threading.Thread(target=watcher.run, name="watch", daemon=True))
    for thread in threads:
        thread.start()
    status = server.wait()
    for service in stoppable:
        service.stop()
    deadline = time.monotonic() + WORKER_STOP_SECONDS
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    if any(thread.is_alive() for thread in threads):
        sys.stderr.write(f"the running background job did not finish within "
                         f"{WORKER_STOP_SECONDS} s; it runs again once its lease expires\n")
    return status if status >= 0 else 128 - status


def _exit_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook that has the kernel send the child SIGTERM when this process dies
    (Linux's PR_SET_PDEATHSIG); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the hook was armed
            os._exit(1)

    return arm
