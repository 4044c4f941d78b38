"""deploy/compose.yml, the multi-process layout: read as Compose reads it (YAML anchors and
merges), checked for what the layout promises, and by `docker compose config` where Docker is
installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from core.settings_table import DEFAULTS
from tests.harness import ROOT

COMPOSE = ROOT / "deploy" / "compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_web_and_workers_share_one_database_and_one_upload_area(compose):
    services = compose["services"]
    assert set(services) == {"db", "init", "web", "worker"}
    web, worker = services["web"], services["worker"]
    assert web["command"][:2] == ["rag", "serve"] and "--no-worker" in web["command"]
    assert worker["command"] == ["rag", "worker"]
    assert services["init"]["command"] == ["rag", "db", "init"]
    for service in (web, worker, services["init"]):
        environment = service["environment"]
        assert "@db:5432/" in environment["DATABASE_URL"]
        assert environment["UPLOAD_DIR"] == "/data/uploads"
        assert "uploads:/data/uploads" in service["volumes"]
    for service in (web, worker):
        assert service["depends_on"]["init"]["condition"] == "service_completed_successfully"
    assert services["init"]["depends_on"]["db"]["condition"] == "service_healthy"
    # Published on loopback only; a password is required, never defaulted.
    assert web["ports"] == ["127.0.0.1:8000:8000"]
    assert ":?" in services["db"]["environment"]["POSTGRES_PASSWORD"]


def test_every_setting_it_names_is_one_the_application_reads(compose):
    for name in ("web", "worker", "init"):
        for variable in compose["services"][name]["environment"]:
            assert variable in DEFAULTS, variable
    referenced = set(re.findall(r"\$\{([A-Z_]+)", COMPOSE.read_text()))
    assert referenced <= set(DEFAULTS), referenced - set(DEFAULTS)


def test_the_image_runs_the_web_process_without_jobs_and_as_no_root():
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.txt" in dockerfile
    assert "\nUSER localrag\n" in dockerfile
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".env", ".local", ".venv", ".git"} <= set(ignored)


def _compose_installed() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "compose", "version"], capture_output=True,
                          timeout=30).returncode == 0


@pytest.mark.skipif(not _compose_installed(), reason="Docker Compose is not installed here")
def test_docker_compose_accepts_it(tmp_path):
    env = tmp_path / "compose.env"
    env.write_text("POSTGRES_PASSWORD=checked-by-compose-config\n")
    result = subprocess.run(["docker", "compose", "--env-file", str(env), "-f", str(COMPOSE),
                             "config", "--quiet"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
