"""`rag kb create | add-source | list`: in-process for the output, as a subprocess for the
command line and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from knowledge.bases import kb_get
from tests.commands.support import rag_ok, rag_refused


def kb(*args: str) -> tuple[str, str]:
    return rag_ok("kb", *args)


def kb_refused(*args: str) -> str:
    return rag_refused("kb", *args)


@pytest.mark.django_db
def test_create_with_sources_prints_the_base_as_json(tmp_path: Path):
    (tmp_path / "hr").mkdir()
    out, _ = kb("create", "handbook", "--name", "Staff handbook", "--description", "HR",
                "--source", str(tmp_path / "hr"), "--source", f"{tmp_path}/hr/../hr", "--json")
    assert json.loads(out) == {
        "slug": "handbook", "name": "Staff handbook", "description": "HR",
        "outbound": "local-only", "documents": 0, "chunks": 0,
        "sources": [{"kind": "vault", "path": str((tmp_path / "hr").resolve())}]}


@pytest.mark.django_db
def test_create_then_add_source_then_list_in_plain_text(tmp_path: Path):
    (tmp_path / "eng").mkdir()
    out, _ = kb("create", "eng")
    assert out == "created knowledge base eng (eng)\n"
    out, _ = kb("add-source", "eng", str(tmp_path / "eng"))
    assert f"{(tmp_path / 'eng').resolve()} is a source of eng" in out
    listed, _ = kb("list")
    assert "default  Default  0 documents, 0 chunks" in listed
    assert f"eng  eng  0 documents, 0 chunks\n  vault: {(tmp_path / 'eng').resolve()}\n" in listed
    assert listed.index("default") < listed.index("eng  eng")
    assert listed.count("  outbound: local-only\n") == 2


@pytest.mark.django_db
def test_the_outbound_policy_is_set_at_creation_and_changed_by_update():
    out, _ = kb("create", "open", "--outbound", "allowed")
    assert out == "created knowledge base open (open)\n  outbound: allowed\n"
    assert kb_get("open").outbound == "allowed"
    out, _ = kb("update", "open", "--outbound", "local-only", "--name", "Open data")
    assert out == "open (Open data): outbound local-only\n"
    assert (kb_get("open").outbound, kb_get("open").name) == ("local-only", "Open data")
    with pytest.raises(CommandError, match="invalid choice: 'anywhere'"):
        kb("update", "open", "--outbound", "anywhere")


@pytest.mark.django_db
def test_list_json_counts_documents_and_chunks(sample_index):
    out, _ = kb("list", "--json")
    [default] = json.loads(out)
    assert default["slug"] == "default"
    assert default["documents"] == sample_index.documents_added > 0
    assert default["chunks"] == sample_index.chunks_written
    assert [source["kind"] for source in default["sources"]] == ["vault"]


@pytest.mark.django_db
def test_refusals_exit_2_with_the_reason(tmp_path: Path):
    (tmp_path / "hr").mkdir()
    kb("create", "hr", "--source", str(tmp_path / "hr"))
    assert "error [conflict]: knowledge base 'hr' exists already" in kb_refused("create", "hr")
    assert "error [invalid_request]" in kb_refused("create", "Not A Slug")
    assert "error [not_found]: knowledge base not found: nope" in kb_refused(
        "add-source", "nope", str(tmp_path / "hr"))
    assert "error [vault_not_found]" in kb_refused("add-source", "hr", str(tmp_path / "absent"))
    kb("create", "legal")
    assert "is a source of the knowledge base 'hr' already" in kb_refused(
        "add-source", "legal", str(tmp_path / "hr"))
    assert kb_get("legal").sources == []


def test_the_command_line_creates_lists_and_refuses(clean_tables, run_cli, tmp_path: Path):
    (tmp_path / "hr").mkdir()
    created = run_cli("kb", "create", "hr", "--source", str(tmp_path / "hr"))
    assert created.returncode == 0, created.stderr
    listed = run_cli("kb", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [base["slug"] for base in json.loads(listed.stdout)] == ["default", "hr"]
    again = run_cli("kb", "create", "hr")
    assert again.returncode == 2 and "error [conflict]" in again.stderr
    missing = run_cli("kb", "add-source", "hr")
    assert missing.returncode == 2 and "path" in missing.stderr
    no_action = run_cli("kb")
    assert no_action.returncode == 2 and "create" in no_action.stderr
