"""`rag pg start | stop | status` as subprocesses: output, exit codes, files it writes."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from dotenv import dotenv_values

from core.dburl import database_settings
from tests.conftest import cli_env


@pytest.fixture
def pg_env() -> dict[str, str]:
    """The CLI's environment for a scratch project: its own `.env`, no database URL given."""
    env = cli_env()
    for key in ("DATABASE_URL", "TEST_DATABASE_URL", "LOCALRAG_ENV_FILE"):
        env.pop(key)
    return env


def connect(url: str) -> psycopg.Connection:
    settings = database_settings(url)
    return psycopg.connect(host=settings["HOST"], port=settings["PORT"], user=settings["USER"],
                           password=settings["PASSWORD"], dbname=settings["NAME"],
                           autocommit=True)


def running_pid(output: str) -> int:
    return int(re.search(r"running \(pid (\d+)", output).group(1))


def test_cli_status_exit_codes_and_private_env_file(scratch_project: Path, run_cli, pg_env):
    stopped = run_cli("pg", "status", env=pg_env, cwd=scratch_project)
    assert stopped.returncode == 3
    assert "not running" in stopped.stdout
    started = run_cli("pg", "start", env=pg_env, cwd=scratch_project)
    assert started.returncode == 0, started.stderr
    env_file = scratch_project / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    url = dotenv_values(env_file)["DATABASE_URL"]
    password = urlsplit(url).password
    assert len(password) >= 40
    assert password not in started.stdout + started.stderr
    assert f"written to {env_file}" in started.stdout
    with connect(url) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
                            ).fetchone() == (False,)
    running = run_cli("pg", "status", env=pg_env, cwd=scratch_project)
    assert running.returncode == 0 and "running (pid" in running.stdout
    assert run_cli("pg", "stop", env=pg_env, cwd=scratch_project).returncode == 0


def test_database_url_from_the_environment_leaves_env_file_alone(scratch_project: Path, run_cli,
                                                                  pg_env):
    pg_env["DATABASE_URL"] = "postgresql://local_rag:local_rag@localhost:5432/local_rag"
    started = run_cli("pg", "start", env=pg_env, cwd=scratch_project)
    assert started.returncode == 0, started.stderr
    assert not (scratch_project / ".env").exists()
    urls_file = scratch_project / ".local/pg/database.env"
    assert stat.S_IMODE(urls_file.stat().st_mode) == 0o600
    assert f"set -a; . {urls_file}; set +a" in started.stdout
    url = dotenv_values(urls_file)["DATABASE_URL"]
    assert urlsplit(url).password not in started.stdout + started.stderr
    with connect(url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("local_rag",)


def test_start_after_kill_9_and_over_a_pid_file_of_another_process(scratch_project: Path,
                                                                    run_cli, pg_env):
    assert run_cli("pg", "start", env=pg_env, cwd=scratch_project).returncode == 0
    url = dotenv_values(scratch_project / ".env")["DATABASE_URL"]
    first = running_pid(run_cli("pg", "status", env=pg_env, cwd=scratch_project).stdout)
    with connect(url) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (1)")
        os.kill(first, signal.SIGKILL)  # this session's backend outlives its postmaster
        recovered = run_cli("pg", "start", env=pg_env, cwd=scratch_project)
    assert recovered.returncode == 0, recovered.stderr
    assert "Traceback" not in recovered.stderr and "started" in recovered.stdout
    with connect(url) as conn:
        assert conn.execute("SELECT n FROM kept").fetchall() == [(1,)]

    assert run_cli("pg", "stop", env=pg_env, cwd=scratch_project).returncode == 0
    pid_file = scratch_project / ".local/pg/data/postmaster.pid"
    port = urlsplit(url).port
    pid_file.write_text(f"{os.getpid()}\n{pid_file.parent}\n0\n{port}\n\n127.0.0.1\n")
    assert run_cli("pg", "status", env=pg_env, cwd=scratch_project).returncode == 3
    restarted = run_cli("pg", "start", env=pg_env, cwd=scratch_project)
    assert restarted.returncode == 0, restarted.stderr
    status = run_cli("pg", "status", env=pg_env, cwd=scratch_project)
    assert status.returncode == 0 and running_pid(status.stdout) != os.getpid()
    with connect(url) as conn:
        assert conn.execute("SELECT n FROM kept").fetchall() == [(1,)]


def test_db_init_on_the_embedded_server_creates_pgvector_as_bootstrap(scratch_project: Path,
                                                                       run_cli, pg_env):
    assert run_cli("pg", "start", env=pg_env, cwd=scratch_project).returncode == 0
    url = dotenv_values(scratch_project / ".env")["DATABASE_URL"]
    bootstrap = json.loads((scratch_project / ".local/pg/bootstrap.json").read_text())
    with psycopg.connect(host="127.0.0.1", port=urlsplit(url).port, user=bootstrap["user"],
                         password=bootstrap["password"], dbname="local_rag",
                         autocommit=True) as conn:
        conn.execute("DROP EXTENSION vector")
    # Without the bootstrap file it is any server: the migrations as the application's role, which
    # may not create pgvector, and says so.
    bootstrap_file = scratch_project / ".local/pg/bootstrap.json"
    bootstrap_file.rename(bootstrap_file.with_name("kept.json"))
    refused = run_cli("db", "init", env=pg_env, cwd=scratch_project)
    assert refused.returncode == 3 and "Traceback" not in refused.stderr
    assert "ask a superuser to run `CREATE EXTENSION vector;` in local_rag" in refused.stderr
    bootstrap_file.with_name("kept.json").rename(bootstrap_file)
    initialised = run_cli("db", "init", env=pg_env, cwd=scratch_project)
    assert initialised.returncode == 0, initialised.stderr
    with connect(url) as conn:
        assert conn.execute("SELECT pg_get_userbyid(extowner) FROM pg_extension "
                            "WHERE extname = 'vector'").fetchone() == (bootstrap["user"],)
        assert conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'chunks'"
                            ).fetchone() == ("local_rag",)


@pytest.mark.skipif(os.geteuid() != 0, reason="the private-folder case is root's (as in /root)")
def test_clone_in_a_folder_only_root_may_enter(run_cli):
    from ops.pg_services import EXTERNAL_CLUSTERS, cluster_folder

    private = Path(tempfile.mkdtemp(prefix="lr0700-"))  # mode 0700, like /root
    project = private / "clone"
    (project / "vault").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname='scratch'\n")
    (project / ".env.sample").write_text("")
    (project / "vault" / "note.md").write_text("# Note\n\nread_cache_enabled lives here.\n")
    env = cli_env()
    for key in ("DATABASE_URL", "TEST_DATABASE_URL", "LOCALRAG_ENV_FILE"):
        env.pop(key)
    folder = cluster_folder(project_root=project)
    try:
        assert folder.parent == EXTERNAL_CLUSTERS and not str(folder).startswith(str(private))
        started = run_cli("pg", "start", env=env, cwd=project)
        assert started.returncode == 0, started.stderr
        assert str(folder / "data") in started.stdout
        assert stat.S_IMODE(private.stat().st_mode) == 0o700  # nothing was loosened
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert run_cli("db", "init", env=env, cwd=project).returncode == 0
        ingested = run_cli("ingest", "vault", env=env, cwd=project)
        assert ingested.returncode == 0 and "1 added" in ingested.stdout, ingested.stderr
        status = run_cli("pg", "status", env=env, cwd=project)
        assert status.returncode == 0 and str(folder / "data") in status.stdout
        assert run_cli("pg", "stop", env=env, cwd=project).returncode == 0
        assert run_cli("pg", "status", env=env, cwd=project).returncode == 3
    finally:
        run_cli("pg", "stop", env=env, cwd=project)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)


def test_replica_create_streams_from_the_primary_and_names_itself(scratch_project: Path, run_cli,
                                                                   pg_env):
    assert run_cli("pg", "start", env=pg_env, cwd=scratch_project).returncode == 0
    try:
        made = run_cli("pg", "replica", "create", env=pg_env, cwd=scratch_project)
        assert made.returncode == 0, made.stderr
        assert "streaming replica created and started on 127.0.0.1:" in made.stdout
        values = dotenv_values(scratch_project / ".env")
        [url] = values["DATABASE_REPLICA_URLS"].split(",")
        assert urlsplit(url).port != urlsplit(values["DATABASE_URL"]).port
        with connect(values["DATABASE_URL"]) as primary:
            primary.execute("CREATE TABLE streamed (note text)")
            primary.execute("INSERT INTO streamed VALUES ('written on the primary')")
        deadline = time.monotonic() + 20
        rows = None
        while rows is None and time.monotonic() < deadline:
            with connect(url) as replica:
                assert replica.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
                try:
                    rows = replica.execute("SELECT note FROM streamed").fetchall()
                except psycopg.errors.UndefinedTable:
                    time.sleep(0.1)
        assert rows == [("written on the primary",)]
        with connect(url) as replica, pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            replica.execute("INSERT INTO streamed VALUES ('refused')")
        again = run_cli("pg", "replica", "create", env=pg_env, cwd=scratch_project)
        assert again.returncode == 0 and "created" not in again.stdout
        assert dotenv_values(scratch_project / ".env")["DATABASE_REPLICA_URLS"] == url
    finally:
        stopped = run_cli("pg", "replica", "stop", env=pg_env, cwd=scratch_project)
    assert stopped.returncode == 0 and stopped.stdout == "replica stopped\n"
