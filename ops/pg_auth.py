"""Who may connect to the embedded PostgreSQL, and as what.

Two kinds of role. The bootstrap superuser (`local_rag_bootstrap`, made by initdb) has a random
password kept in `bootstrap.json`, mode 0600, in the cluster's 0700 folder; only `rag pg start`,
`rag db init` and the test runner use it, for what needs a superuser: roles, databases and the
`vector` extension (pgvector is not a trusted extension). The application's roles (the users of
DATABASE_URL / TEST_DATABASE_URL) log in with their own passwords, have no superuser,
CREATEDB or CREATEROLE power, and own their databases. Every connection, TCP or unix socket,
needs a scram-sha-256 password.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from core.errors import first_line
from ops.embedded_pg import EmbeddedPostgresError, hand_over, run_user_ids

BOOTSTRAP_USER = "local_rag_bootstrap"
BOOTSTRAP_FILE = "bootstrap.json"
# Shorter passwords (the sample's `local_rag` among them) are replaced by a generated one.
MIN_PASSWORD_CHARS = 16
CONNECT_TIMEOUT_S = 10
HBA_SCRAM = """\
# Written by `rag pg start`: every connection needs a password (scram-sha-256).
# TYPE  DATABASE        USER            ADDRESS                 METHOD
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
local   replication     all                                     scram-sha-256
host    replication     all             127.0.0.1/32            scram-sha-256
host    replication     all             ::1/128                 scram-sha-256
"""

ROLE_EXISTS = "SELECT 1 FROM pg_roles WHERE rolname = %s"
DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = %s"
APP_ROLE_ATTRIBUTES = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"


@dataclass(frozen=True)
class BootstrapCredentials:
    user: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class AppAccess:
    """What the application needs: its roles with their passwords, its databases' owners."""

    roles: dict[str, str] = field(repr=False)  # role -> password
    databases: dict[str, str]  # database -> owning role


def password_generate() -> str:
    """A random password (43 URL-safe characters: nothing to quote inside a URL)."""
    return secrets.token_urlsafe(32)


def password_strong(password: str) -> bool:
    return len(password) >= MIN_PASSWORD_CHARS


def state_folder_ensure(folder: Path) -> None:
    """Create the cluster's folder, mode 0700 (given to the server's OS user when root), and
    refuse one that someone else owns."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
        if info.st_uid not in run_user_ids():
            raise EmbeddedPostgresError(
                f"{folder} is owned by uid {info.st_uid}, not by this user; refusing to keep "
                "database credentials there")
        folder.chmod(0o700)
    except OSError as exc:
        raise EmbeddedPostgresError(f"cannot prepare {folder}: {exc}") from exc
    hand_over(folder)


def private_file_write(path: Path, text: str) -> None:
    """Write `path` atomically with mode 0600 (a temporary file beside it, then a rename)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(name, 0o600)
        os.replace(name, path)
    except OSError as exc:
        Path(name).unlink(missing_ok=True)
        raise EmbeddedPostgresError(f"cannot write {path}: {exc}") from exc


def bootstrap_load(*, folder: Path) -> BootstrapCredentials | None:
    """The bootstrap superuser's credentials from `folder/bootstrap.json`, None without one."""
    path = folder / BOOTSTRAP_FILE
    try:
        info = path.lstat()
        if info.st_uid != os.geteuid() or not path.is_file():
            raise EmbeddedPostgresError(f"{path} is not a file owned by this user; refusing to "
                                        "read database credentials from it")
        if info.st_mode & 0o077:
            path.chmod(0o600)  # ours, but readable by others: close it before reading
        data = json.loads(path.read_text(encoding="utf-8"))
        return BootstrapCredentials(user=str(data["user"]), password=str(data["password"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddedPostgresError(f"cannot read {path}: {first_line(exc)}") from exc


def bootstrap_create(*, folder: Path) -> BootstrapCredentials:
    """New bootstrap credentials, written to `folder/bootstrap.json` before anything uses them
    (so a crash never leaves a superuser whose password nobody kept)."""
    credentials = BootstrapCredentials(user=BOOTSTRAP_USER, password=password_generate())
    private_file_write(folder / BOOTSTRAP_FILE,
                       json.dumps({"user": credentials.user, "password": credentials.password}))
    return credentials


def server_connect(*, host: str, port: int, user: str, password: str | None,
                   dbname: str) -> psycopg.Connection:
    """An autocommit connection to the embedded server; failures become EmbeddedPostgresError."""
    try:
        return psycopg.connect(host=host, port=port, user=user, password=password, dbname=dbname,
                               autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as exc:
        raise EmbeddedPostgresError(f"cannot connect to the embedded PostgreSQL as {user} "
                                    f"({host}:{port}/{dbname}): {first_line(exc)}") from exc


@contextmanager
def bootstrap_session(*, host: str, port: int, bootstrap: BootstrapCredentials,
                      dbname: str = "postgres") -> Iterator[psycopg.Connection]:
    """A bootstrap-superuser connection whose driver errors become EmbeddedPostgresError."""
    with server_connect(host=host, port=port, user=bootstrap.user, password=bootstrap.password,
                        dbname=dbname) as conn:
        try:
            yield conn
        except psycopg.Error as exc:
            raise EmbeddedPostgresError(f"the embedded PostgreSQL refused a setup statement in "
                                        f"{dbname}: {first_line(exc)}") from exc


def password_verifier(conn: psycopg.Connection, *, role: str, password: str) -> str:
    """The SCRAM verifier of `password`, computed here so the server never sees the password
    itself (not even in a log line of a failed statement)."""
    return conn.pgconn.encrypt_password(password.encode(), role.encode(),
                                        b"scram-sha-256").decode()


def app_role_ensure(conn: psycopg.Connection, *, role: str, password: str) -> None:
    """Create `role` or reset it: LOGIN with `password`, no superuser/CREATEDB/CREATEROLE."""
    verb = "ALTER" if conn.execute(ROLE_EXISTS, (role,)).fetchone() else "CREATE"
    conn.execute(sql.SQL("{} ROLE {} WITH {} PASSWORD {}").format(
        sql.SQL(verb), sql.Identifier(role), sql.SQL(APP_ROLE_ATTRIBUTES),
        sql.Literal(password_verifier(conn, role=role, password=password))))


def cluster_access_ensure(*, host: str, port: int, bootstrap: BootstrapCredentials,
                          access: AppAccess) -> list[str]:
    """As the bootstrap superuser: every app role exists with its password and no superuser
    power; every app database exists, owned by its role, with the `vector` extension.
    Idempotent; returns the databases it created."""
    created = []
    if BOOTSTRAP_USER in access.roles or bootstrap.user in access.roles:
        raise EmbeddedPostgresError(f"the application may not connect as {bootstrap.user}, the "
                                    "bootstrap superuser; use another user in DATABASE_URL")
    with bootstrap_session(host=host, port=port, bootstrap=bootstrap) as conn:
        for role, password in access.roles.items():
            app_role_ensure(conn, role=role, password=password)
        for name, owner in access.databases.items():
            if not conn.execute(DATABASE_EXISTS, (name,)).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(name), sql.Identifier(owner)))
                created.append(name)
    for name in access.databases:
        vector_extension_ensure(host=host, port=port, bootstrap=bootstrap, dbname=name)
    return created


def vector_extension_ensure(*, host: str, port: int, bootstrap: BootstrapCredentials,
                            dbname: str) -> None:
    """CREATE EXTENSION IF NOT EXISTS vector in `dbname`, as the bootstrap superuser."""
    with bootstrap_session(host=host, port=port, bootstrap=bootstrap, dbname=dbname) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def hba_allows_trust(*, hba_file: Path) -> bool:
    """Whether pg_hba.conf lets anyone in without a password (a cluster made before this)."""
    try:
        text = hba_file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise EmbeddedPostgresError(f"cannot read {hba_file}: {exc}") from exc
    return any("trust" in line.split("#", 1)[0].split() for line in text.splitlines())


def hba_scram_write(*, hba_file: Path) -> None:
    """Replace pg_hba.conf with one that asks every connection for a scram-sha-256 password."""
    private_file_write(hba_file, HBA_SCRAM)
    hand_over(hba_file)
