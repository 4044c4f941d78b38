"""Backups carry no search index; `rag restore` builds every base's from the restored chunks,
in a folder of its own (the restored tables are new: no index of other data is ever taken)."""

from __future__ import annotations

import json
import tarfile

from tests.conftest import cli_env
from tests.knowledge.conftest import (  # noqa: F401 - fixtures
    archive,
    empty_database,
    new_database,
    project,
)
from tests.ops.test_restore import restore


def test_a_restore_builds_the_search_indexes_and_the_archive_holds_none(
        archive, empty_database, project, run_cli):  # noqa: F811
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert not [name for name in names if "search-index" in name or "lexical-" in name]
    result = restore(run_cli, archive, url=empty_database, cwd=project)
    assert result.returncode == 0, result.stderr
    assert "building the search indexes" in result.stdout + result.stderr
    status = run_cli("index", "status", "--json", env=cli_env(DATABASE_URL=empty_database),
                     cwd=project)
    assert status.returncode == 0, status.stderr
    (default,) = [base for base in json.loads(status.stdout) if base["knowledge_base"] == "default"]
    assert default["state"] == "ok" and default["lag"] == 0
    assert default["indexed"] == default["chunks"] > 0
    source = run_cli("index", "status", "--json")
    assert default["folder"] not in {base["folder"] for base in json.loads(source.stdout)}
