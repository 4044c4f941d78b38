"""PostgreSQL's client programs (pg_dump, pg_restore, psql) from the embedded binaries, pointed at
a Django database entry. The password travels in the child's environment (PGPASSWORD), never on
its command line, where any user of the machine could read it."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.db import DatabaseRefused
from ops.embedded_pg import binaries_dir

# Libpq's own environment variables for the connection options a DATABASES entry may carry.
_OPTION_VARIABLES = {"sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT",
                     "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
                     "connect_timeout": "PGCONNECT_TIMEOUT"}
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def pg_tool_path(tool: str) -> Path:
    """The embedded build of a PostgreSQL client program."""
    return binaries_dir() / tool


def libpq_environment(settings: Mapping[str, Any], *, base: Mapping[str, str]) -> dict[str, str]:
    """`base` plus the PG* variables that connect a client program to `settings` (a Django
    DATABASES entry), and nothing from the caller's own PG* variables."""
    env = {key: value for key, value in base.items() if not key.startswith("PG")}
    env.update(PGHOST=str(settings.get("HOST") or "localhost"),
               PGPORT=str(settings.get("PORT") or "5432"),
               PGUSER=str(settings.get("USER") or ""),
               PGDATABASE=str(settings["NAME"]), PGAPPNAME="local-rag")
    if settings.get("PASSWORD"):
        env["PGPASSWORD"] = str(settings["PASSWORD"])
    for option, variable in _OPTION_VARIABLES.items():
        value = (settings.get("OPTIONS") or {}).get(option)
        if value is not None:
            env[variable] = str(value)
    return env


def pg_tool_run(tool: str, *args: str, env: Mapping[str, str], what: str) -> str:
    """Run a client program to completion; its output, or DatabaseRefused naming `what`
    failed, with the end of the program's own message."""
    try:
        result = subprocess.run([str(pg_tool_path(tool)), *args], env=dict(env),
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                errors="replace", check=False)
    except OSError as exc:
        raise DatabaseRefused(f"{what}: could not run {tool}: {exc}") from exc
    if result.returncode != 0:
        raise DatabaseRefused(f"{what}: {tool} failed (exit {result.returncode}): "
                           f"{result.stderr.strip()[-800:]}")
    return result.stdout


def die_with_parent() -> None:
    """For subprocess's preexec_fn: the child is killed (SIGKILL) when the process that
    started it dies, even by SIGKILL, so a client program never outlives the command that owns
    its work (a restore's psql, whose transaction must not commit once `rag restore` is gone).
    Linux's prctl(PR_SET_PDEATHSIG); elsewhere the child is left as before."""
    if sys.platform != "linux":
        return
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
