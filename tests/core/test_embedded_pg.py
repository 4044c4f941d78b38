"""`rag pg start | stop | status` on a real embedded cluster in a scratch project."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest

from core.config import config_load
from core.pg_services import pg_start, pg_status, pg_stop


@pytest.fixture
def busy_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_lifecycle_with_taken_port_stale_pid_and_restart(scratch_project: Path, busy_port: int):
    env_file = scratch_project / ".env"
    env_file.write_text(
        f"DATABASE_URL=postgresql://local_rag:pw@localhost:{busy_port}/local_rag\n"
        f"TEST_DATABASE_URL=postgresql://local_rag:pw@localhost:{busy_port}/local_rag_test\n")
    config = config_load(environ={}, start_dir=scratch_project)

    first = pg_start(config=config)
    assert not first.already_running
    port = first.status.port
    assert port != busy_port
    assert first.env_file_updated == env_file
    assert f"localhost:{port}/local_rag\n" in env_file.read_text()
    assert f"localhost:{port}/local_rag_test\n" in env_file.read_text()
    assert sorted(first.databases_created) == ["local_rag", "local_rag_test"]

    reloaded = config_load(environ={}, start_dir=scratch_project)
    again = pg_start(config=reloaded)
    assert again.already_running and again.status.port == port and again.databases_created == []

    with psycopg.connect(host="127.0.0.1", port=port, user="local_rag", dbname="local_rag") as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert conn.execute("SHOW server_encoding").fetchone()[0] == "UTF8"
        assert conn.execute("SELECT '[1,2]'::vector <=> '[2,4]'::vector").fetchone()[0] == 0

    assert pg_stop(config=reloaded) is True
    assert pg_status(config=reloaded).running is False
    assert pg_stop(config=reloaded) is False

    # A postmaster.pid left behind by a crash must not block the next start.
    pid_file = scratch_project / ".local/pg/data/postmaster.pid"
    pid_file.write_text(f"999999\n{pid_file.parent}\n0\n{port}\n\n127.0.0.1\n")
    restarted = pg_start(config=reloaded)
    assert restarted.status.running and restarted.status.port == port


