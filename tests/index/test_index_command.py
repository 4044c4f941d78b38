"""`rag index status` and `rag index rebuild`, as an operator runs them."""

from __future__ import annotations

import json

import pytest

from tests.index.helpers import database_generation, index_generation, lexical_bases
from tests.retrieval.test_lexical_pruning import chunks_add

pytestmark = pytest.mark.usefixtures("clean_tables")


def test_status_reports_each_base_and_rebuild_builds_them(run_cli):
    _, _, (first, second) = lexical_bases(41, chunks=(120, 30))
    status = run_cli("index", "status", "--json")
    assert status.returncode == 0, status.stderr
    bases = {entry["knowledge_base"]: entry for entry in json.loads(status.stdout)}
    assert bases["b41-0"]["state"] == "missing" and bases["b41-0"]["chunks"] == 120
    rebuilt = run_cli("index", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "b41-0: rebuilt at generation" in rebuilt.stdout
    assert index_generation(first) == database_generation(first)
    assert index_generation(second) == database_generation(second)
    chunks_add(base_id=first, document_path="n.md", rows=[("new words", [], "n.md")])
    status = run_cli("index", "status")
    assert status.returncode == 0
    line = next(line for line in status.stdout.splitlines() if line.startswith("b41-0 "))
    assert " behind " in line and "(lag 1)" in line and "120 of 121 chunks indexed" in line
    entry = next(entry for entry in json.loads(run_cli("index", "status", "--json").stdout)
                 if entry["knowledge_base"] == "b41-1")
    assert entry["state"] == "ok" and entry["lag"] == 0 and entry["bytes"] > 0
    assert entry["indexed"] == 30 and entry["build_seconds"] is not None


def test_rebuild_of_an_unknown_base_says_so(run_cli):
    result = run_cli("index", "rebuild", "--kb", "nope")
    assert result.returncode == 2
    assert "no knowledge base 'nope'" in result.stderr
