"""Backup and restore benchmark: `rag backup` of the configured database (DATABASE_URL, as it
is: start it with `rag pg start`), then `rag restore` of that archive into a fresh embedded
cluster in a throw-away project folder; prints seconds, archive size and the restored counts as
one JSON line. Nothing of the configured database is changed.

    .venv/bin/python bench/backup.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAG = [sys.executable, str(ROOT / "manage.py")]


def run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    result = subprocess.run([*RAG, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"rag {' '.join(args)} failed: {result.stderr[-2000:]}")
    return result


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="lrbk-", dir="/tmp"))
    work.chmod(0o755)
    project = work / "restored"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname='restored'\n")
    (project / ".env.sample").write_text("")
    fresh_env = {key: value for key, value in os.environ.items()
                 if key not in ("DATABASE_URL", "TEST_DATABASE_URL", "LOCALRAG_ENV_FILE")}
    try:
        archive = work / "site.tar"
        started = time.perf_counter()
        manifest = json.loads(run("backup", str(archive), "--json", cwd=ROOT,
                                  env=dict(os.environ)).stdout)
        backup_s = time.perf_counter() - started
        run("pg", "start", cwd=project, env=fresh_env)
        started = time.perf_counter()
        run("restore", str(archive), cwd=project, env=fresh_env)
        restore_s = time.perf_counter() - started
        counts = manifest["counts"]
        print(json.dumps({"chunks": counts.get("chunks"), "embeddings": counts.get("embeddings"),
                          "documents": counts.get("documents"),
                          "upload_files": len(manifest["uploads"]["files"]),
                          "archive_mb": round(archive.stat().st_size / 1e6, 1),
                          "backup_s": round(backup_s, 2), "restore_s": round(restore_s, 2)}))
    finally:
        subprocess.run([*RAG, "pg", "stop"], cwd=project, env=fresh_env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
