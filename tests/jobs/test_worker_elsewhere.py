"""A worker on another machine: another project folder, the same database, the upload area on a
share both mount at the same path (UPLOAD_DIR absolute). It runs the upload the web process
queued, and the document is searchable from the web process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from access.callers import OPERATOR, scope_all
from jobs.queue import job_get
from knowledge.bases import kb_create
from knowledge.documents import document_upload
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.conftest import cli_env
from tests.harness import ROOT


def test_a_worker_elsewhere_runs_an_upload_from_the_shared_upload_area(
        clean_tables, config_override, tmp_path):
    share = tmp_path / "share" / "uploads"  # mounted at this path on both machines
    web_root = tmp_path / "web"
    web_root.mkdir()
    config = config_override(project_root=web_root, upload_folder=share)
    kb_create(slug="field", name="Field reports")
    upload = document_upload(caller=OPERATOR, slug="field", filename="Ridge 9 survey.txt",
                             chunks=[b"Greisen veins on ridge 9 carry tin and tungsten.\n"])
    stored = [path for path in share.rglob("*") if path.is_file()]
    assert len(stored) == 1 and not (web_root / ".local" / "uploads").exists()

    # The other machine: its own copy of the project in its own folder, nothing shared but the
    # database and the share.
    elsewhere = tmp_path / "worker-host"
    shutil.copytree(ROOT, elsewhere / "local-rag", ignore=shutil.ignore_patterns(
        ".venv", ".git", ".local", ".cache", ".mypy_cache", ".ruff_cache", "node_modules",
        "__pycache__", "docs", "samples", "bench", "eval", "tests"))
    env = cli_env(UPLOAD_DIR=str(share))
    env.pop("LOCALRAG_ENV_FILE")
    (elsewhere / "local-rag" / ".env").write_text("")
    copy = elsewhere / "local-rag"
    result = subprocess.run([sys.executable, str(copy / "manage.py"), "worker", "--once"],
                            cwd=copy, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    job = job_get(upload.job_id)
    assert job.status == "succeeded", job.last_error
    hits = search(RetrievalRequest(query="greisen tin ridge", scope=scope_all(), top_k=3,
                                   mode="vector"), config=config).results
    assert hits and hits[0].relative_path == "Ridge 9 survey.txt"
    assert json.dumps(job.result).count("chunks") >= 1
