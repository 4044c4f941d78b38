"""`rag pg start | stop | status` as subprocesses: output and exit codes."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import cli_env


def test_cli_status_exit_codes(scratch_project: Path, run_cli):
    env = cli_env()
    for key in ("DATABASE_URL", "TEST_DATABASE_URL", "LOCALRAG_ENV_FILE"):
        env.pop(key)
    stopped = run_cli("pg", "status", env=env, cwd=scratch_project)
    assert stopped.returncode == 3
    assert "not running" in stopped.stdout
    started = run_cli("pg", "start", env=env, cwd=scratch_project)
    assert started.returncode == 0, started.stderr
    running = run_cli("pg", "status", env=env, cwd=scratch_project)
    assert running.returncode == 0 and "running (pid" in running.stdout
    assert run_cli("pg", "stop", env=env, cwd=scratch_project).returncode == 0
